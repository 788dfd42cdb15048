package dp

import "math/big"

// The math/big paths of the samplers, for TestFastPathMatchesBig: the public
// functions take the word-size paths whenever their numbers fit.

func DiscreteGaussianBigPath(src *Source, sigma2 *big.Rat) (*big.Int, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.dgBigLocked(newDGParams(sigma2.Num(), sigma2.Denom()))
}

func BernoulliExpBigPath(src *Source, gamma *big.Rat) (bool, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.bexpBig(gamma.Num(), gamma.Denom())
}

func GeometricBigPath(src *Source, scale *big.Rat) (*big.Int, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.geometricBigLocked(scale.Num(), scale.Denom())
}

func DiscreteLaplaceBigPath(src *Source, scale *big.Rat) (*big.Int, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	neg, m, err := src.laplaceBig(scale.Num(), scale.Denom())
	if neg {
		m.Neg(m)
	}
	return m, err
}

// DiscreteGaussianFast reports whether σ² runs on the word-size path.
func DiscreteGaussianFast(sigma2 *big.Rat) bool {
	return newDGParams(sigma2.Num(), sigma2.Denom()).fast
}

// BernLazy returns U < num/den for the uniform U read from src, on the
// word-size path (when num and den fit in 128 bits) and on the math/big path.
func BernLazy(src *Source, num, den *big.Int, wordSize bool) (bool, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	if wordSize {
		n, ok1 := u128FromBig(num)
		d, ok2 := u128FromBig(den)
		if !ok1 || !ok2 {
			panic("BernLazy: numbers beyond 128 bits")
		}
		return src.bernLazy128(n, d)
	}
	return src.bernLazyBig(num, den)
}

// ExpTab returns ⌊2⁶⁴·exp(−j/32)⌋ from the table, 1 ≤ j ≤ 32·44.
func ExpTab(j int) uint64 { return expTab[j] }

// ExpTabLen is the number of table entries.
const ExpTabLen = expTabLen

// GeometricCount draws V with P[V ≥ v] = e^{−v}.
func GeometricCount(src *Source) (uint64, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.geometricCountLocked()
}

// ExpNegFloorRef is the independent reference for ⌊2^b·exp(−j/32)⌋ of
// TestExpTable.
var ExpNegFloorRef = expNegFloorRef

// FineCount draws K with P[K ≥ k] = e^{−k/32}.
func FineCount(src *Source) (uint64, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.fineCountLocked()
}

// FineTabMax is the last table index FineCount reads directly.
const FineTabMax = fineTabMax
