package dp

import (
	"fmt"
	"math"
	"math/big"
)

// DiscreteLaplace returns X ∈ ℤ with P[X = x] = tanh(1/(2t)) e^{−|x|/t} for a
// rational scale t > 0, exactly (Canonne, Kamath & Steinke 2020,
// Algorithm 2): loop { B ~ Bernoulli(½); M ~ Geometric(t); if B = 1 and
// M = 0, retry }; return (1 − 2B)·M.
//
// Adding it to an integer query of ℓ1-sensitivity Δ gives (Δ/t, 0)-DP.
func DiscreteLaplace(src *Source, scale *big.Rat) (*big.Int, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	if scale == nil || scale.Sign() <= 0 {
		return nil, fmt.Errorf("dp: DiscreteLaplace needs scale > 0, got %v", ratString(scale))
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.discreteLaplaceLocked(scale.Num(), scale.Denom())
}

// DiscreteGaussian returns X ∈ ℤ with P[X = x] ∝ exp(−x²/(2σ²)) for a rational
// variance parameter σ² > 0, exactly (Canonne, Kamath & Steinke 2020,
// Algorithm 3: loop { Y ~ DiscreteLaplace(t); accept with probability
// exp(−(|Y| − σ²/t)²/(2σ²)) }), with the Laplace scale t chosen so that the
// acceptance exponent has small integers; see DiscreteGaussianSampler, which
// also serves many draws without re-deriving the parameters.
//
// Adding it to an integer query of sensitivity Δ gives Δ²/(2σ²)-zCDP and the
// (ε, δ) guarantee of CKS20 Theorem 7 (see DiscreteGaussianDeltaBound).
func DiscreteGaussian(src *Source, sigma2 *big.Rat) (*big.Int, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	if sigma2 == nil || sigma2.Sign() <= 0 {
		return nil, fmt.Errorf("dp: DiscreteGaussian needs sigma2 > 0, got %v", ratString(sigma2))
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.discreteGaussianLocked(sigma2.Num(), sigma2.Denom())
}

// discreteLaplaceLocked samples the discrete Laplace of scale a/b.
func (s *Source) discreteLaplaceLocked(a, b *big.Int) (*big.Int, error) {
	af, ok := u128FromBig(a)
	if ok && b.IsUint64() {
		neg, m, mb, err := s.laplace128(af, b.Uint64())
		if err != nil {
			return nil, err
		}
		return signedBig(neg, m, mb), nil
	}
	neg, m, err := s.laplaceBig(a, b)
	if neg {
		m.Neg(m)
	}
	return m, err
}

// laplace128 is CKS20 Algorithm 2 (discrete Laplace of scale a/b,
// 1 ≤ a < 2¹²⁸, 1 ≤ b < 2⁶⁴): loop { B ~ Bernoulli(½); M ~ Geometric(a/b);
// if B = 1 and M = 0, retry }; return (1 − 2B)·M, as the sign (neg = B = 1)
// and |M| (a u128, or mb ≠ nil if it does not fit; see geometric128).
func (s *Source) laplace128(a u128, b uint64) (neg bool, m u128, mb *big.Int, err error) {
	for {
		bit, err := s.bitsLocked(1)
		if err != nil {
			return false, u128{}, nil, err
		}
		m, mb, err := s.geometric128(a, b)
		if err != nil {
			return false, u128{}, nil, err
		}
		if bit == 1 && mb == nil && m.isZero() {
			continue
		}
		return bit == 1, m, mb, nil
	}
}

// laplaceBig is laplace128 on big integers (the same draws).
func (s *Source) laplaceBig(a, b *big.Int) (neg bool, m *big.Int, err error) {
	for {
		bit, err := s.bitsLocked(1)
		if err != nil {
			return false, nil, err
		}
		m, err := s.geometricBigLocked(a, b)
		if err != nil {
			return false, nil, err
		}
		if bit == 1 && m.Sign() == 0 {
			continue
		}
		return bit == 1, m, nil
	}
}

// discreteGaussianLocked samples with σ² = n/d (n, d ≥ 1, lowest terms).
func (s *Source) discreteGaussianLocked(n, d *big.Int) (*big.Int, error) {
	return s.dgSampleLocked(s.dgParamsLocked(n, d))
}

// DiscreteLaplacePMF returns P[X = x] = tanh(1/(2t)) e^{−|x|/t} for the
// discrete Laplace distribution of scale t > 0 (NaN if t is not positive and
// finite). It is computed in float64, for tests and reporting.
func DiscreteLaplacePMF(scale float64, x int64) float64 {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return math.NaN()
	}
	ax := math.Abs(float64(x))
	return math.Tanh(0.5/scale) * math.Exp(-ax/scale)
}

// DiscreteGaussianPMF returns P[X = x] = exp(−x²/(2σ²)) / Σ_{y∈ℤ} exp(−y²/(2σ²))
// for the discrete Gaussian with variance parameter σ² > 0 (NaN if σ² is not
// positive and finite), in float64, for tests and reporting. The normaliser is
// summed directly for σ² < 1 and through its Poisson-summation (Jacobi theta)
// form √(2πσ²)·(1 + 2 Σ_{k≥1} exp(−2π²σ²k²)) otherwise; both series converge
// to double precision within a few terms.
func DiscreteGaussianPMF(sigma2 float64, x int64) float64 {
	if !(sigma2 > 0) || math.IsInf(sigma2, 0) {
		return math.NaN()
	}
	fx := float64(x)
	return math.Exp(-fx*fx/(2*sigma2)) / discreteGaussianNorm(sigma2)
}

func discreteGaussianNorm(sigma2 float64) float64 {
	if sigma2 >= 1 {
		sum := 1.0
		for k := 1.0; ; k++ {
			term := 2 * math.Exp(-2*math.Pi*math.Pi*sigma2*k*k)
			sum += term
			if term < 1e-17*sum {
				break
			}
		}
		return math.Sqrt(2*math.Pi*sigma2) * sum
	}
	sum := 1.0
	for y := 1.0; ; y++ {
		term := 2 * math.Exp(-y*y/(2*sigma2))
		sum += term
		if term < 1e-17*sum {
			break
		}
	}
	return sum
}
