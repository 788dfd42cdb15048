package dphypo

import (
	"fmt"
	"math"
	"math/big"

	"github.com/privbo/privbo/pkg/dp"
)

// MaxMeanRuns bounds E[T] of the run-count distribution. The exact sampler
// makes O(E[T]/γ) Bernoulli draws in the worst case (θ = 0), and no
// hyperparameter search trains a model more than a few hundred times.
const MaxMeanRuns = 1000

// validateNegBin checks θ ∈ (−1, ∞), γ ∈ (0, 1) and E[T] ≤ MaxMeanRuns.
func validateNegBin(theta, gamma float64) error {
	if !(theta > -1) || math.IsInf(theta, 0) {
		return fmt.Errorf("dphypo: theta must be finite and > −1, got %g", theta)
	}
	if !(gamma > 0 && gamma < 1) {
		return fmt.Errorf("dphypo: gamma must be in (0, 1), got %g", gamma)
	}
	if m := dp.NegBinMean(theta, gamma); !(m <= MaxMeanRuns) {
		return fmt.Errorf("dphypo: NegBin(θ=%g, γ=%g) has mean %g runs, more than the supported %d (raise gamma)", theta, gamma, m, MaxMeanRuns)
	}
	return nil
}

// NegBinPMF returns P[T = k] for the truncated negative binomial
// NegBin(θ, γ) (see the package documentation), computed in log space; 0
// for k < 1 and NaN for invalid θ or γ.
func NegBinPMF(theta, gamma float64, k int) float64 {
	if !(theta > -1) || math.IsInf(theta, 0) || !(gamma > 0 && gamma < 1) {
		return math.NaN()
	}
	if k < 1 {
		return 0
	}
	fk := float64(k)
	l1g := math.Log1p(-gamma)
	if theta == 0 {
		return math.Exp(fk*l1g - math.Log(fk) - math.Log(-math.Log(gamma)))
	}
	// Π_{ℓ<k} (ℓ+θ)/(ℓ+1) = Γ(k+θ)/(Γ(θ) Γ(k+1)); for θ < 0 both Γ(θ) and
	// γ^{−θ} − 1 are negative, so magnitudes suffice.
	a, _ := math.Lgamma(fk + theta)
	b, _ := math.Lgamma(theta)
	c, _ := math.Lgamma(fk + 1)
	z := math.Abs(math.Expm1(-theta * math.Log(gamma)))
	return math.Exp(fk*l1g + a - b - c - math.Log(z))
}

// SampleNegBin draws T ~ NegBin(θ, γ), T ≥ 1, exactly: every random choice
// is a Bernoulli trial with a rational probability drawn from src by
// dp.Bernoulli (γ and θ are float64, hence exact dyadic rationals; no
// floating-point step touches the sample):
//
//   - θ = 1: 1 + the number of failures before the first success of
//     Bernoulli(γ) trials (geometric).
//   - integer θ = m ≥ 1: the sum K of m such failure counts (untruncated
//     negative binomial), redrawn while K = 0.
//   - fractional θ > 0: K from the integer case with m = ⌈θ⌉ (including
//     K = 0), accepted with probability Π_{i<K} (θ+i)/(m+i) (independent
//     Bernoulli trials, one per factor), redrawn while K = 0 or rejected
//     (as OpenDP does). The ratio of the target to the proposal pmf is
//     proportional to that product, which is ≤ 1.
//   - θ = 0 (logarithmic, P[T=k] ∝ (1−γ)^k/k): K = 1 + a geometric failure
//     count, accepted with probability 1/K.
//   - θ ∈ (−1, 0): K from the logarithmic case, accepted with probability
//     Π_{ℓ=1}^{K−1} (ℓ+θ)/ℓ, the ratio of the two pmfs up to a constant.
//
// The running time is random (about E[T]/γ trials for θ = 0); it depends
// only on θ, γ and src, never on data.
func SampleNegBin(src *dp.Source, theta, gamma float64) (int, error) {
	if err := validateNegBin(theta, gamma); err != nil {
		return 0, err
	}
	g := new(big.Rat).SetFloat64(gamma)
	th := new(big.Rat).SetFloat64(theta)
	switch {
	case theta == 0:
		return sampleLogarithmic(src, g)
	case theta < 0:
		for {
			k, err := sampleLogarithmic(src, g)
			if err != nil {
				return 0, err
			}
			// Π_{ℓ=1}^{k−1} (ℓ+θ)/ℓ
			ok, err := acceptProduct(src, th, 0, 1, k-1)
			if err != nil {
				return 0, err
			}
			if ok {
				return k, nil
			}
		}
	}
	m := math.Ceil(theta)
	for {
		k := 0
		for range int(m) {
			f, err := geometricFailures(src, g)
			if err != nil {
				return 0, err
			}
			k += f
		}
		if k == 0 {
			continue
		}
		if float64(m) != theta {
			// Π_{i<k} (θ+i)/(m+i)
			ok, err := acceptProduct(src, th, int64(m), 0, k)
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
		}
		return k, nil
	}
}

// acceptProduct returns true with probability Π_{i=first}^{first+n−1}
// (θ+i)/(m+i) (m = 0 means the denominator i), as n independent Bernoulli
// trials stopping at the first failure. Each factor is in (0, 1].
func acceptProduct(src *dp.Source, theta *big.Rat, m int64, first, n int) (bool, error) {
	num, den, p := new(big.Rat), new(big.Rat), new(big.Rat)
	for i := first; i < first+n; i++ {
		num.SetInt64(int64(i))
		num.Add(num, theta)
		den.SetInt64(m + int64(i))
		p.Quo(num, den)
		ok, err := dp.Bernoulli(src, p)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// geometricFailures returns the number of failures before the first
// success of Bernoulli(g) trials.
func geometricFailures(src *dp.Source, g *big.Rat) (int, error) {
	for n := 0; ; n++ {
		ok, err := dp.Bernoulli(src, g)
		if err != nil {
			return 0, err
		}
		if ok {
			return n, nil
		}
	}
}

// sampleLogarithmic draws T with P[T=k] = (1−γ)^k/(k log(1/γ)), k ≥ 1, by
// rejection from the geometric γ(1−γ)^{k−1}: the ratio is ∝ 1/k.
func sampleLogarithmic(src *dp.Source, g *big.Rat) (int, error) {
	for {
		f, err := geometricFailures(src, g)
		if err != nil {
			return 0, err
		}
		k := f + 1
		u, err := src.Uint64n(uint64(k))
		if err != nil {
			return 0, err
		}
		if u == 0 {
			return k, nil
		}
	}
}
