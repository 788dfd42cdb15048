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
// Algorithm 3): t = ⌊σ⌋ + 1 (exact integer square root); loop
// { Y ~ DiscreteLaplace(t); accept with probability
// exp(−(|Y| − σ²/t)²/(2σ²)) }.
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

func (s *Source) discreteLaplaceLocked(a, b *big.Int) (*big.Int, error) {
	for {
		bit, err := s.bitsLocked(1)
		if err != nil {
			return nil, err
		}
		m, err := s.geometricLocked(a, b)
		if err != nil {
			return nil, err
		}
		if bit == 1 {
			if m.Sign() == 0 {
				continue
			}
			m.Neg(m)
		}
		return m, nil
	}
}

// discreteGaussianLocked samples with σ² = n/d.
func (s *Source) discreteGaussianLocked(n, d *big.Int) (*big.Int, error) {
	// t = ⌊√(n/d)⌋ + 1 = ⌊√⌊n/d⌋⌋ + 1.
	t := new(big.Int).Quo(n, d)
	t.Sqrt(t).Add(t, bigOne)
	// γ(Y) = (|Y| − σ²/t)²/(2σ²) = (|Y|·d·t − n)² / (2·n·d·t²).
	dt := new(big.Int).Mul(d, t)
	den := new(big.Int).Mul(n, dt)
	den.Mul(den, t).Lsh(den, 1)
	num := new(big.Int)
	for {
		y, err := s.discreteLaplaceLocked(t, bigOne)
		if err != nil {
			return nil, err
		}
		num.Abs(y)
		num.Mul(num, dt).Sub(num, n)
		num.Mul(num, num)
		ok, err := s.bernoulliExpLocked(num, den)
		if err != nil {
			return nil, err
		}
		if ok {
			return y, nil
		}
	}
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
