package dp

import (
	"fmt"
	"math"
	"math/big"
)

// Gaussian is the Gaussian mechanism made safe for floating point: for a
// real-valued query q with |q(D) − q(D')| ≤ Δ on neighbouring datasets,
// Release returns
//
//	2^k · (n + Z),  n = round(q(D)/2^k)  (ties away from zero, exact),
//	Z ~ DiscreteGaussian(N)  (exact, N an integer variance in lattice units),
//
// which is (ε, δ)-DP. Calibration:
//  1. σ₀ = AnalyticGaussianSigma(ε, δ, Δ) (Balle & Wang 2018) gives the
//     lattice step 2^k, k = ⌊log₂ min(Δ, σ₀)⌋ − 20 (see latticeBits).
//  2. On the lattice the sensitivity is the integer s = ⌊Δ/2^k⌋ + 1 ≥ |n − n'|
//     (effective sensitivity Δ + 2^k, one step of rounding slack).
//  3. N is the smallest float64 ≥ σ_c², with σ_c the analytic-Gaussian σ for
//     sensitivity s, such that DiscreteGaussianDeltaBound(√N, ε, s) ≤ δ: the
//     exact privacy of the discrete Gaussian (CKS20 Theorem 7), bounded
//     rigorously. Usually N = σ_c² (rounded up).
//
// The noise has variance ≈ Scale()² (within a relative 1e-6). A Gaussian is
// immutable and safe for concurrent use.
type Gaussian struct {
	epsilon, delta, sensitivity float64
	k                           int
	sigma2                      *big.Rat // N, the variance parameter in lattice units (exact value of a float64)
	sigma                       float64  // √N·2^k
}

// NewGaussian returns the Gaussian mechanism for ε > 0, 0 < δ < 1 and
// sensitivity Δ > 0 (all finite). It refuses noise scales outside
// [2⁻¹⁰⁰⁰, 2¹⁰⁰⁰].
func NewGaussian(epsilon, delta, sensitivity float64) (*Gaussian, error) {
	if err := validateGaussianParams(epsilon, delta, sensitivity); err != nil {
		return nil, err
	}
	sigma1, err := AnalyticGaussianSigma(epsilon, delta, 1)
	if err != nil {
		return nil, err
	}
	l2 := math.Log2(sigma1) + math.Log2(sensitivity)
	if math.Abs(l2) > maxLog2Scale {
		return nil, fmt.Errorf("dp: Gaussian sigma %g·%g is outside [2^-%d, 2^%d]",
			sigma1, sensitivity, maxLog2Scale, maxLog2Scale)
	}
	k := latticeExponent(sensitivity, l2)
	shift := int64(math.Floor(math.Ldexp(sensitivity, -k))) + 1 // in [2²⁰+1, 2²¹]
	sc, err := AnalyticGaussianSigma(epsilon, delta, float64(shift))
	if err != nil {
		return nil, err
	}
	n, err := calibrateDiscreteGaussian(sc, epsilon, delta, shift)
	if err != nil {
		return nil, err
	}
	return &Gaussian{
		epsilon:     epsilon,
		delta:       delta,
		sensitivity: sensitivity,
		k:           k,
		sigma2:      new(big.Rat).SetFloat64(n),
		sigma:       math.Ldexp(math.Sqrt(n), k),
	}, nil
}

// validateGaussianParams checks the parameters every Gaussian mechanism takes.
func validateGaussianParams(epsilon, delta, sensitivity float64) error {
	if err := ValidateEpsilon(epsilon); err != nil {
		return err
	}
	if err := validateGaussianDelta(delta); err != nil {
		return err
	}
	return ValidateSensitivity(sensitivity)
}

// calibrateDiscreteGaussian returns the smallest float64 N ≥ sc² (to a
// relative 1e-12, rounded up) with DiscreteGaussianDeltaBound(√N, ε, s) ≤
// δ·(1 − 1e-9) (a margin for the rounding of the float evaluation), √N
// rounded down.
func calibrateDiscreteGaussian(sc, epsilon, delta float64, shift int64) (float64, error) {
	target := delta * (1 - 1e-9)
	ok := func(n float64) bool {
		s := math.Nextafter(math.Sqrt(n), 0)
		return DiscreteGaussianDeltaBound(s, epsilon, shift) <= target
	}
	lo := math.Nextafter(sc*sc, math.Inf(1))
	if lo > 1e300 {
		return 0, fmt.Errorf("dp: discrete Gaussian variance %g lattice steps² is outside the supported range", lo)
	}
	if ok(lo) {
		return lo, nil
	}
	hi := lo
	for f := 1e-9; !ok(hi); f *= 2 {
		lo = hi
		hi = lo * (1 + f)
		if hi > 1e300 {
			return 0, fmt.Errorf("dp: discrete Gaussian variance is outside the supported range (above 1e300 lattice steps²)")
		}
	}
	return bisectSmallest(lo, hi, 1e-12, ok), nil
}

// bisectSmallest narrows [lo, hi], with ok(hi) and !ok(lo) for a monotone ok,
// to a relative width rel (at most 200 halvings) and returns the upper end,
// which always satisfies ok.
func bisectSmallest(lo, hi, rel float64, ok func(float64) bool) float64 {
	for i := 0; i < 200 && hi-lo > rel*hi; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Release returns x plus Gaussian noise as described on Gaussian. x must be
// finite (clamp it first: an error here reveals that it was not).
func (g *Gaussian) Release(src *Source, x float64) (float64, error) {
	if err := validateFinite("Gaussian input", x); err != nil {
		return 0, err
	}
	if err := src.check(); err != nil {
		return 0, err
	}
	n := latticeIndex(x, g.k)
	src.mu.Lock()
	z, err := src.discreteGaussianLocked(g.sigma2.Num(), g.sigma2.Denom())
	src.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return latticeValue(n.Add(n, z), g.k), nil
}

// Scale returns the noise's σ = √N·2^k in the query's units.
func (g *Gaussian) Scale() float64 { return g.sigma }

// Granularity returns the lattice step 2^k of the releases.
func (g *Gaussian) Granularity() float64 { return math.Ldexp(1, g.k) }

// Cost returns the mechanism's privacy guarantee (ε, δ).
func (g *Gaussian) Cost() (epsilon, delta float64) { return g.epsilon, g.delta }
