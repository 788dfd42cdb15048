package dp

import (
	"fmt"
	"math"
	"math/big"
)

// latticeBits is how many binary orders of magnitude the lattice step 2^k sits
// below both the sensitivity Δ and the noise scale b:
// k = ⌊log₂ min(Δ, b)⌋ − latticeBits. Below Δ, so that the rounding slack 2^k
// adds at most a relative 2⁻²⁰ ≈ 1e-6 to the sensitivity (and so to the
// noise); below b, so that the noise spans at least 2²⁰ lattice points per
// scale unit and its distribution is continuous for all practical purposes.
const latticeBits = 20

// latticeExponent returns k = ⌊log₂ min(Δ, b)⌋ − latticeBits given Δ and
// log₂ b.
func latticeExponent(sensitivity, log2Scale float64) int {
	return int(math.Floor(math.Min(math.Log2(sensitivity), log2Scale))) - latticeBits
}

// maxLog2Scale bounds |log₂(noise scale)|: scales outside [2⁻¹⁰⁰⁰, 2¹⁰⁰⁰] are
// refused (they cannot be represented usefully in float64).
const maxLog2Scale = 1000

// Laplace is the Laplace mechanism made safe for floating point: for a
// real-valued query q with |q(D) − q(D')| ≤ Δ on neighbouring datasets D, D'
// (whatever neighbouring relation Δ was computed for), Release returns
//
//	2^k · (n + Z),  n = round(q(D)/2^k)  (ties away from zero, exact),
//	Z ~ DiscreteLaplace(t),  t = ⌈(Δ + 2^k)/(2^k ε)⌉  (an integer, exact),
//
// which is (ε, 0)-DP: |n − n'| ≤ Δ/2^k + 1, and the discrete Laplace of scale t
// on integers with that sensitivity has privacy loss at most (Δ/2^k + 1)/t ≤ ε.
// The lattice step 2^k is chosen from Δ and the nominal scale Δ/ε
// (k = ⌊log₂ min(Δ, Δ/ε)⌋ − 20, see latticeBits) and Δ + 2^k is the
// effective sensitivity. The noise
// has variance 2e^{−1/t}/(1 − e^{−1/t})²·4^k ≈ 2·Scale()². No floating-point
// arithmetic touches the noise before the final conversion to float64
// (Mironov 2012). A Laplace is immutable and safe for concurrent use.
type Laplace struct {
	epsilon, sensitivity float64
	k                    int
	t                    *big.Int // discrete Laplace scale in lattice units
	scale                float64  // t·2^k
}

// NewLaplace returns the Laplace mechanism for privacy parameter ε > 0 and
// sensitivity Δ > 0 (both finite). It refuses noise scales Δ/ε outside
// [2⁻¹⁰⁰⁰, 2¹⁰⁰⁰].
func NewLaplace(epsilon, sensitivity float64) (*Laplace, error) {
	if err := ValidateEpsilon(epsilon); err != nil {
		return nil, err
	}
	if err := ValidateSensitivity(sensitivity); err != nil {
		return nil, err
	}
	l2 := math.Log2(sensitivity) - math.Log2(epsilon)
	if math.Abs(l2) > maxLog2Scale {
		return nil, fmt.Errorf("dp: Laplace scale sensitivity/epsilon = %g/%g is outside [2^-%d, 2^%d]",
			sensitivity, epsilon, maxLog2Scale, maxLog2Scale)
	}
	k := latticeExponent(sensitivity, l2)
	// t = ⌈(Δ + 2^k)/(2^k ε)⌉ = ⌈(Δ·2^−k + 1)/ε⌉, in exact rationals.
	r := new(big.Rat).SetFloat64(sensitivity)
	r.Mul(r, pow2Rat(-k))
	r.Add(r, ratOne)
	r.Quo(r, new(big.Rat).SetFloat64(epsilon))
	t := ceilRat(r)
	return &Laplace{
		epsilon:     epsilon,
		sensitivity: sensitivity,
		k:           k,
		t:           t,
		scale:       latticeValue(t, k),
	}, nil
}

// Release returns x plus Laplace noise as described on Laplace. x must be
// finite (clamp it first: an error here reveals that it was not). The running
// time depends on the noise drawn, not on x beyond its size in bits.
func (l *Laplace) Release(src *Source, x float64) (float64, error) {
	if err := validateFinite("Laplace input", x); err != nil {
		return 0, err
	}
	if err := src.check(); err != nil {
		return 0, err
	}
	n := latticeIndex(x, l.k)
	src.mu.Lock()
	z, err := src.discreteLaplaceLocked(l.t, bigOne)
	src.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return latticeValue(n.Add(n, z), l.k), nil
}

// Scale returns the noise scale b = t·2^k ≥ (Δ + 2^k)/ε in the query's units:
// the noise is a discrete Laplace on 2^k·ℤ with P ∝ exp(−|z|/b).
func (l *Laplace) Scale() float64 { return l.scale }

// Granularity returns the lattice step 2^k of the releases.
func (l *Laplace) Granularity() float64 { return math.Ldexp(1, l.k) }

// Cost returns the mechanism's privacy guarantee (ε, 0).
func (l *Laplace) Cost() (epsilon, delta float64) { return l.epsilon, 0 }

// pow2Rat returns 2^e as an exact rational.
func pow2Rat(e int) *big.Rat {
	p := new(big.Int).Lsh(bigOne, uint(abs(e)))
	if e >= 0 {
		return new(big.Rat).SetInt(p)
	}
	return new(big.Rat).SetFrac(bigOne, p)
}

func abs(e int) int {
	if e < 0 {
		return -e
	}
	return e
}

// ceilRat returns ⌈r⌉.
func ceilRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, bigOne)
	}
	return q
}
