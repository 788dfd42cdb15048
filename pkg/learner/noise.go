package learner

import (
	"fmt"
	"math"
	"math/big"

	"github.com/privbo/privbo/pkg/dp"
)

// latticeBits is how many binary orders of magnitude the noise lattice lies
// below the noise scale: h = 2^k with k = ⌊log₂ scale⌋ − latticeBits, the
// rule of package dp.
const latticeBits = 20

// latticeGaussian is the discrete Gaussian on the lattice h·ℤ, h = 2^k, with
// standard deviation σ (in the caller's units): Z ~ N_ℤ(0, (σ/h)²) exactly,
// released as h·Z.
type latticeGaussian struct {
	k       int
	sigma2  *big.Rat // (σ/h)², exact
	sampler *dp.DiscreteGaussianSampler
}

// newLatticeGaussian returns the sampler for σ > 0 on the lattice 2^k ℤ. It
// refuses lattices finer than 2⁻⁵² σ or coarser than σ/2 (σ/h ∉ [2, 2⁵²]),
// which this package never needs.
func newLatticeGaussian(sigma float64, k int) (latticeGaussian, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return latticeGaussian{}, fmt.Errorf("learner: noise standard deviation must be positive and finite, got %g", sigma)
	}
	s := math.Ldexp(sigma, -k) // σ/h, exact (a power-of-two scaling)
	if !(s >= 2 && s <= 1<<52) {
		return latticeGaussian{}, fmt.Errorf("learner: noise lattice 2^%d is out of range for standard deviation %g", k, sigma)
	}
	r := new(big.Rat).SetFloat64(s)
	r.Mul(r, r)
	sampler, err := dp.NewDiscreteGaussianSampler(r)
	if err != nil {
		return latticeGaussian{}, fmt.Errorf("learner: %w", err)
	}
	return latticeGaussian{k: k, sigma2: r, sampler: sampler}, nil
}

// fill sets dst to independent draws of Z ~ N_ℤ(0, (σ/h)²), in lattice units: the same
// draws, from the same randomness, as len(dst) calls of sample (one lock on src instead
// of one per draw).
func (g latticeGaussian) fill(src *dp.Source, dst []int64) error {
	if err := g.sampler.Int64s(src, dst); err != nil {
		return fmt.Errorf("learner: sampling noise: %w", err)
	}
	return nil
}

// latticeExponent returns ⌊log₂ x⌋ − latticeBits for a positive finite x.
func latticeExponent(x float64) int {
	_, e := math.Frexp(x) // x = f·2^e, f ∈ [½, 1)
	return e - 1 - latticeBits
}

// sample returns Z ~ N_ℤ(0, (σ/h)²), in lattice units.
func (g latticeGaussian) sample(src *dp.Source) (int64, error) {
	z, err := dp.DiscreteGaussian(src, g.sigma2)
	if err != nil {
		return 0, fmt.Errorf("learner: sampling noise: %w", err)
	}
	if !z.IsInt64() { // |Z| ≥ 2^63 with σ/h ≤ 2^52: probability below exp(−2^21)
		return 0, fmt.Errorf("learner: noise sample out of range")
	}
	return z.Int64(), nil
}

// gaussianNoise returns one draw of h·Z, Z ~ N_ℤ(0, (σ/h)²), on the lattice
// h = 2^k, k = ⌊log₂ σ⌋ − 20: a discrete Gaussian whose variance equals σ²
// to within a relative 10⁻¹⁰⁰ or so (for σ/h ≥ 2²⁰ the discrete Gaussian's
// variance differs from σ²/h² by a term of order exp(−2π²σ²/h²)), sampled
// exactly from src (Canonne, Kamath & Steinke 2020) with σ² given to the
// sampler as an exact rational. Adding it to a value is floating-point safe
// only if the value lies on the same lattice; the release functions of this
// package round to the lattice first.
func gaussianNoise(src *dp.Source, sigma float64) (float64, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("learner: noise standard deviation must be positive and finite, got %g", sigma)
	}
	g, err := newLatticeGaussian(sigma, latticeExponent(sigma))
	if err != nil {
		return 0, err
	}
	z, err := g.sample(src)
	if err != nil {
		return 0, err
	}
	return math.Ldexp(float64(z), g.k), nil
}

// NoisyAccuracy releases Accuracy(m, val) + N(0, σ²), for any classifier (two
// classes or more): the count c of correct predictions plus discrete Gaussian noise on a lattice h ≤ 1 (a power of
// two, so c lies on it exactly), divided by m = |val|:
//
//	(c + h·Z)/m,  Z ~ N_ℤ(0, (σm/h)²),  h = 2^min(0, ⌊log₂ σm⌋ − 20).
//
// Replacing one validation row changes c by at most 1 (sensitivity 1/m of
// the accuracy), so the release is (α, α/(2σ²m²))-RDP for every α > 1 and
// ½(1/(σm))²-zCDP, with m public. The result may fall outside [0, 1]; clamp
// it after release if needed (post-processing). sigma must be positive and
// finite; src should be dp.CryptoSource() outside tests.
func NoisyAccuracy(src *dp.Source, m Classifier, val Data, sigma float64) (float64, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("learner: accuracy noise sigma must be positive and finite, got %g", sigma)
	}
	if err := val.check(); err != nil {
		return 0, err
	}
	if m.NumFeatures() != val.D {
		return 0, fmt.Errorf("learner: model has %d weights, validation data has %d features", m.NumFeatures(), val.D)
	}
	count := correct(m, val)
	sc := sigma * float64(val.N) // σ in count units
	if sc > 1<<30 {
		return 0, fmt.Errorf("learner: accuracy noise sigma %g is too large (σ·m above 2^30)", sigma)
	}
	g, err := newLatticeGaussian(sc, min(0, latticeExponent(sc)))
	if err != nil {
		return 0, err
	}
	z, err := g.sample(src)
	if err != nil {
		return 0, err
	}
	// c·2^{−k} is an integer (k ≤ 0); the sum is exact below 2^53.
	t := math.Ldexp(float64(count), -g.k) + float64(z)
	if math.Abs(t) >= 1<<53 {
		return 0, fmt.Errorf("learner: accuracy noise sigma %g is too small for exact lattice arithmetic", sigma)
	}
	return math.Ldexp(t, g.k) / float64(val.N), nil
}
