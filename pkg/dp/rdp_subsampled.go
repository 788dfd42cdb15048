package dp

import (
	"errors"
	"fmt"
	"math"
)

// SeriesVariant chooses how SubsampledGaussianRDPSeries evaluates A_α at
// fractional orders.
type SeriesVariant int

const (
	// AbsoluteSeries sums the absolute values of the terms of the
	// Mironov–Talwar–Zhang series: an upper bound on A_α, hence a
	// conservative ε(α). This reproduces Google's dp_accounting golden
	// values (docs/MATHS.md §6.2–6.3) and is what SubsampledGaussianRDP uses.
	AbsoluteSeries SeriesVariant = iota
	// SignedSeries sums the terms with their signs: the value of A_α itself
	// (up to truncation and rounding), as TF-Privacy's rdp_accountant and
	// Opacus compute it.
	SignedSeries
)

func (v SeriesVariant) String() string {
	switch v {
	case AbsoluteSeries:
		return "absolute"
	case SignedSeries:
		return "signed"
	}
	return fmt.Sprintf("SeriesVariant(%d)", int(v))
}

// SubsampledGaussianRDP returns the curve of steps compositions of the
// Poisson-subsampled Gaussian mechanism (DP-SGD): each step includes every
// record independently with probability q and adds Gaussian noise of
// standard deviation noiseMultiplier × (L2 sensitivity) to the sum
// (Mironov, Talwar & Zhang, "Rényi Differential Privacy of the Sampled
// Gaussian Mechanism", 2019; add/remove-one-record neighbours).
//
// With σ = noiseMultiplier, ε(α) = steps · log(A_α)/(α−1) where, at integer
// α (exact, Section 3.3 of the paper),
//
//	A_α = Σ_{k=0}^{α} C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2σ²)),
//
// evaluated in log space (log-sum-exp, binomials through lgamma). At
// fractional α it uses the paper's two-sided series with AbsoluteSeries
// (a declared upper bound); see SubsampledGaussianRDPSeries. q = 0 gives
// ε = 0, q = 1 the plain Gaussian α/(2σ²), α = ∞ gives +Inf.
func SubsampledGaussianRDP(orders []float64, q, noiseMultiplier float64, steps int) (RDPCurve, error) {
	return SubsampledGaussianRDPSeries(orders, q, noiseMultiplier, steps, AbsoluteSeries)
}

// SubsampledGaussianRDPSeries is SubsampledGaussianRDP with a choice of
// series at fractional orders. Integer orders are always exact. The series
// is truncated when both of its terms fall below e^{−30} (as in
// TF-Privacy); A_α ≥ 1, so the neglected tail changes log A_α by a relative
// amount far below the conversion's own slack.
func SubsampledGaussianRDPSeries(orders []float64, q, noiseMultiplier float64, steps int, variant SeriesVariant) (RDPCurve, error) {
	if !(q >= 0 && q <= 1) {
		return RDPCurve{}, fmt.Errorf("dp: sampling rate q must be in [0, 1], got %g", q)
	}
	if !(noiseMultiplier > 0) || math.IsInf(noiseMultiplier, 0) {
		return RDPCurve{}, fmt.Errorf("dp: noise multiplier must be positive and finite, got %g", noiseMultiplier)
	}
	if steps < 0 {
		return RDPCurve{}, fmt.Errorf("dp: number of steps must be ≥ 0, got %d", steps)
	}
	if variant != AbsoluteSeries && variant != SignedSeries {
		return RDPCurve{}, fmt.Errorf("dp: unknown series variant %d", int(variant))
	}
	if err := validateOrders(orders); err != nil {
		return RDPCurve{}, err
	}
	c := RDPCurve{Orders: append([]float64(nil), orders...), Epsilons: make([]float64, len(orders))}
	var terms []float64
	for i, a := range orders {
		var e float64
		switch {
		case steps == 0 || q == 0:
			e = 0
		case math.IsInf(a, 1):
			e = math.Inf(1)
		case q == 1:
			e = a / (2 * noiseMultiplier * noiseMultiplier)
		case a == math.Trunc(a) && a <= 1<<20:
			e = logAInt(q, noiseMultiplier, int(a)) / (a - 1)
		default:
			var la float64
			var err error
			la, terms, err = logAFrac(q, noiseMultiplier, a, variant, terms[:0])
			if err != nil {
				return RDPCurve{}, fmt.Errorf("dp: subsampled Gaussian at order %g: %w", a, err)
			}
			e = la / (a - 1)
		}
		c.Epsilons[i] = math.Max(0, e) * float64(steps)
	}
	return c, nil
}

// logAInt returns log A_α for integer α ≥ 2, 0 < q < 1.
func logAInt(q, sigma float64, alpha int) float64 {
	lq, l1q := math.Log(q), math.Log1p(-q)
	inv := 1 / (2 * sigma * sigma)
	a := float64(alpha)
	lga, _ := math.Lgamma(a + 1)
	// Two passes: find the largest term, then sum exp(term − max).
	term := func(k int) float64 {
		fk := float64(k)
		lk, _ := math.Lgamma(fk + 1)
		lnk, _ := math.Lgamma(a - fk + 1)
		return lga - lk - lnk + fk*lq + (a-fk)*l1q + (fk*fk-fk)*inv
	}
	m := math.Inf(-1)
	for k := 0; k <= alpha; k++ {
		m = math.Max(m, term(k))
	}
	if math.IsInf(m, 1) {
		return m
	}
	var s float64
	for k := 0; k <= alpha; k++ {
		s += math.Exp(term(k) - m)
	}
	return m + math.Log(s)
}

// maxSeriesTerms bounds the fractional series; it is reached only for
// parameters (tiny σ with α near 1) far outside any DP-SGD setting.
const maxSeriesTerms = 1 << 22

// logAFrac returns log A_α for fractional α, 0 < q < 1, by the series of
// Mironov, Talwar & Zhang (2019, Section 3.3): A_α = A₀ + A₁ with
//
//	A₀ = Σ_i C(α,i) q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)} · ½ erfc((i − z₀)/(√2 σ))
//	A₁ = Σ_i C(α,i) q^{α−i} (1−q)^i e^{(j²−j)/(2σ²)} · ½ erfc((z₀ − j)/(√2 σ)),  j = α − i,
//
// z₀ = σ² log(1/q − 1) + ½, over i = 0, 1, 2, …; the generalised binomials
// C(α, i) change sign for i > α. terms is scratch space.
func logAFrac(q, sigma, alpha float64, variant SeriesVariant, terms []float64) (float64, []float64, error) {
	lq, l1q := math.Log(q), math.Log1p(-q)
	inv := 1 / (2 * sigma * sigma)
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	lga, _ := math.Lgamma(alpha + 1)
	// terms holds pairs (log|term|, sign).
	m := math.Inf(-1)
	for i := 0; ; i++ {
		if i == maxSeriesTerms {
			return 0, terms, errors.New("series did not converge")
		}
		fi := float64(i)
		j := alpha - fi
		lb, _ := math.Lgamma(fi + 1)
		lc, sc := math.Lgamma(j + 1)
		logCoef := lga - lb - lc
		sign := float64(sc) // Γ(α+1) > 0 and i! > 0: the sign is Γ(α−i+1)'s
		s0 := logCoef + fi*lq + j*l1q + (fi*fi-fi)*inv + logHalfErfc((fi-z0)/(math.Sqrt2*sigma))
		s1 := logCoef + j*lq + fi*l1q + (j*j-j)*inv + logHalfErfc((z0-j)/(math.Sqrt2*sigma))
		terms = append(terms, s0, sign, s1, sign)
		m = math.Max(m, math.Max(s0, s1))
		if math.Max(s0, s1) < -30 {
			break
		}
	}
	var sum float64
	for k := 0; k < len(terms); k += 2 {
		t := math.Exp(terms[k] - m)
		if variant == SignedSeries {
			t *= terms[k+1]
		}
		sum += t
	}
	if !(sum > 0) {
		return 0, terms, fmt.Errorf("signed series cancelled to %g", sum)
	}
	return m + math.Log(sum), terms, nil
}

// logHalfErfc returns log(erfc(x)/2) accurately for all x, using the
// asymptotic expansion of erfc where math.Erfc underflows.
func logHalfErfc(x float64) float64 {
	if x < 20 {
		return math.Log(math.Erfc(x) / 2)
	}
	x2 := x * x
	return -math.Ln2 - math.Log(math.Pi)/2 - math.Log(x) - x2 +
		math.Log(1-1/(2*x2)+3/(4*x2*x2)-15/(8*x2*x2*x2)+105/(16*x2*x2*x2*x2))
}
