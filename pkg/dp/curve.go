package dp

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// EpsilonCap is the largest ε that EpsilonAtDistance reports. Above it the
// methods return +Inf (with a nil error): an (ε, δ) statement with ε beyond
// 10⁶ says nothing a person can use, and +Inf is always a valid upper bound.
const EpsilonCap = 1e6

// DistanceAccountant is a mechanism that can state its guarantee for inputs
// farther apart than its sensitivity: EpsilonAtDistance(units, δ) is an ε
// (rounded up, never down) for which the release is (ε, δ)-DP for every two
// inputs whose pre-noise values differ by at most units·Δ, Δ the sensitivity
// the mechanism was built for. Gaussian, VectorGaussian and Laplace implement
// it.
type DistanceAccountant interface {
	EpsilonAtDistance(units, delta float64) (float64, error)
}

// EpsilonAtDistance returns the smallest ε (to a relative 1e-10, rounded up)
// for which the Gaussian release is (ε, δ)-DP for inputs that differ by at
// most units·Δ; +Inf if that ε exceeds EpsilonCap. It uses the accounting
// that calibrated the mechanism (see Gaussian): on the lattice 2^k·ℤ the
// rounded values differ by at most the integer
//
//	s_D = ⌊units·Δ/2^k⌋ + 1   (one step of rounding slack, as at units = 1),
//
// and the discrete Gaussian of variance parameter N on ℤ is (ε, δ)-DP for
// integer shifts up to s_D exactly when δ ≥ δ(ε) = P[Y > εN/s_D − s_D/2] −
// e^ε P[Y > εN/s_D + s_D/2], Y ~ N_ℤ(0, N) (Canonne, Kamath & Steinke 2020,
// Theorem 7). ε is found by bisection on the rigorous upper bound
// DiscreteGaussianDeltaBound(√N, ε, s_D) ≤ δ·(1 − 1e-9) (the margin the
// calibration uses), or the same bound's convex-tail form evaluated in log
// space, which stays tight where e^ε·P[Y > …] leaves the float64 range
// (shifts beyond about 70σ, ε in the thousands); every ε it returns
// satisfies one of them. For the σ of
// about 2²⁰ lattice steps used here the result is within about 1e-6 of the
// continuous analytic-Gaussian curve (Balle & Wang 2018, Theorem 8) at
// μ = s_D·2^k/Scale(), AnalyticGaussianEpsilon. At units ≤ 1 and δ at least
// the mechanism's own, it never exceeds the calibrated ε.
//
// units must be positive and finite, 0 < δ < 1. The distance must be public
// (a clip diameter, a fixed table), never computed from the data.
func (g *Gaussian) EpsilonAtDistance(units, delta float64) (float64, error) {
	if err := validateDistance(units, delta, false); err != nil {
		return 0, err
	}
	shift := latticeShift(units, g.sensitivity, g.k)
	if !shift.IsInt64() || shift.Int64() > 1<<53 {
		return math.Inf(1), nil // too far apart to evaluate; +Inf is always valid
	}
	eps := g.epsilonAtShift(shift.Int64(), delta)
	if units <= 1 && delta >= g.delta {
		eps = math.Min(eps, g.epsilon) // the calibration's own guarantee covers this shift
	}
	return eps, nil
}

// epsilonAtShift returns the smallest ε (relative 1e-10, rounded up) whose
// rigorous δ bound for an integer shift of s lattice steps is at most
// δ·(1 − 1e-9); +Inf above EpsilonCap.
func (g *Gaussian) epsilonAtShift(s int64, delta float64) float64 {
	n, _ := g.sigma2.Float64()            // exact: sigma2 holds a float64 (NewGaussian)
	sd := math.Nextafter(math.Sqrt(n), 0) // as in calibrateDiscreteGaussian
	target := delta * (1 - 1e-9)
	ok := func(e float64) bool {
		return math.Min(DiscreteGaussianDeltaBound(sd, e, s), discreteGaussianDeltaBoundLog(sd, e, s)) <= target
	}
	return smallestEpsilon(ok)
}

// EpsilonAtDistance returns an ε (rounded up) for which the vector Gaussian
// release is (ε, δ)-DP for inputs whose difference has L2 norm at most
// units·Δ; +Inf if it exceeds EpsilonCap. It uses the accounting that
// calibrated the mechanism (see VectorGaussian): the rounded lattice vectors
// differ by at most
//
//	s_D = units·Δ/2^k + √m   lattice steps (L2),
//
// the m-dimensional discrete Gaussian of variance parameter N is ρ_D-zCDP for
// such shifts with ρ_D = s_D²/(2N) (Canonne, Kamath & Steinke 2020, Theorem
// 14), and ε = ZCDPEpsilon(ρ_D, δ), the improved RDP → (ε, δ) conversion
// (CKS20 Proposition 12) minimised over the order. ρ_D is rounded up and
// every order gives a valid bound, so the result is never below the best ε
// of this accounting and within about 1e-9 of it. At units ≤ 1 and δ at
// least the mechanism's own, it never exceeds the calibrated ε.
//
// The exact curve of a continuous Gaussian at the same σ (Balle & Wang 2018,
// Theorem 8; AnalyticGaussianEpsilon(units·Δ/Scale(), δ)) is 4–9% lower
// (at (1, 1e-5): 0.915 at one unit, 128.2 instead of 133.6 at 50 units),
// but CKS20 prove only the zCDP bound for the
// multivariate discrete Gaussian, so that is what is stated here.
//
// units must be positive and finite, 0 < δ < 1. The distance must be public
// (a clip diameter, a fixed table), never computed from the data.
func (g *VectorGaussian) EpsilonAtDistance(units, delta float64) (float64, error) {
	if err := validateDistance(units, delta, false); err != nil {
		return 0, err
	}
	eps := ZCDPEpsilon(g.rhoAtDistance(units), delta)
	if math.IsNaN(eps) || eps > EpsilonCap {
		eps = math.Inf(1)
	}
	if units <= 1 && delta >= g.delta {
		eps = math.Min(eps, g.epsilon)
	}
	return eps, nil
}

// rhoAtDistance returns ρ_D = s_D²/(2N), s_D = units·Δ/2^k + √m, rounded up.
func (g *VectorGaussian) rhoAtDistance(units float64) float64 {
	up := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }
	s := up(math.Ldexp(up(units*g.sensitivity), -g.k) + up(math.Sqrt(float64(g.dim))))
	n, _ := g.sigma2.Float64() // exact: sigma2 holds a float64 (NewVectorGaussian)
	return up(up(s*s) / n / 2)
}

// EpsilonAtDistance returns the ε for which the Laplace release is (ε, 0)-DP
// (hence (ε, δ)-DP for every δ, which is therefore ignored beyond
// validation, 0 ≤ δ < 1) for inputs that differ by at most units·Δ; +Inf
// if it exceeds EpsilonCap. The rounded values differ by at most
// s_D = ⌊units·Δ/2^k⌋ + 1 lattice steps and the discrete Laplace of integer
// scale t has privacy loss exactly s_D/t for that shift, so ε = s_D/t
// (rounded up). For units ≥ 1 this is at most units·ε (linear group
// privacy, Dwork & Roth 2014, Theorem 2.2) and within a relative 2⁻¹⁹ of it.
func (l *Laplace) EpsilonAtDistance(units, delta float64) (float64, error) {
	if err := validateDistance(units, delta, true); err != nil {
		return 0, err
	}
	r := new(big.Rat).SetFrac(latticeShift(units, l.sensitivity, l.k), l.t)
	eps := ratFloat(r)
	if eps > EpsilonCap {
		return math.Inf(1), nil
	}
	return eps, nil
}

// AnalyticGaussianEpsilon returns the smallest ε (to a relative 1e-10,
// rounded up) with δ(ε; μ) ≤ δ on the exact privacy curve of two Gaussians
// N(0, 1) and N(μ, 1) (Balle & Wang 2018, Theorem 8):
//
//	δ(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ),
//
// that is the ε of a continuous Gaussian mechanism with noise σ for inputs
// at L2 distance μσ. It returns +Inf above EpsilonCap. It needs μ > 0 and
// 0 < δ < 1, all finite. It is the reference for the Gaussian mechanisms'
// EpsilonAtDistance, not itself a guarantee of the lattice mechanisms.
func AnalyticGaussianEpsilon(mu, delta float64) (float64, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("dp: Gaussian distance mu must be positive and finite, got %g", mu)
	}
	if err := validateGaussianDelta(delta); err != nil {
		return 0, err
	}
	ok := func(e float64) bool { return AnalyticGaussianDelta(1, e, mu) <= delta }
	return smallestEpsilon(ok), nil
}

// discreteGaussianDeltaBoundLog is the convex-tail part of
// DiscreteGaussianDeltaBound evaluated in log space, so that it stays tight
// when e^ε and P[Y > εσ²/s + s/2] leave the float64 range (large shifts).
// With f(y) = exp(−y²/(2σ²)), convex for y ≥ σ, and the normaliser
// Z ∈ [√(2π)σ, √(2π)σθ], θ = 1 + 2q/(1−q), q = exp(−2π²σ²):
//
//	P[Y ≥ a] ≤ Φ(−(a − ½)/σ)                      (midpoint rule, a − ½ ≥ σ),
//	P[Y ≥ b] ≥ (Φ(−b/σ) + φ(b/σ)/(2σ))/θ          (trapezoid rule, b ≥ σ),
//
// and δ ≤ P[Y ≥ a] − e^ε P[Y ≥ b] with a = ⌊εσ²/s − s/2⌋ + 1,
// b = ⌊εσ²/s + s/2⌋ + 1 (CKS20 Theorem 7). a is taken no larger and b no
// smaller than their exact values (εσ²/s is nudged by 1e-15 relative
// before the floor), which can only raise the bound. It returns 1 (the
// trivial bound) where the convexity conditions fail or on invalid input.
func discreteGaussianDeltaBoundLog(sigma, epsilon float64, s int64) float64 {
	if !(sigma > 0) || math.IsInf(sigma, 0) || !(epsilon >= 0) || math.IsInf(epsilon, 0) || s < 1 {
		return 1
	}
	fs := float64(s)
	c := epsilon * sigma * sigma / fs
	a := math.Floor(c*(1-1e-15)-fs/2) + 1
	b := math.Floor(c*(1+1e-15)+fs/2) + 1
	if a-0.5 < sigma || b < sigma || math.IsInf(c, 0) {
		return 1
	}
	logTheta := math.Log1p(2 * math.Exp(-2*math.Pi*math.Pi*sigma*sigma) / (1 - math.Exp(-2*math.Pi*math.Pi*sigma*sigma)))
	logU := logNormCDF(-(a - 0.5) / sigma)
	zb := b / sigma
	logPhi := -zb*zb/2 - 0.5*math.Log(2*math.Pi)
	logL := logAddExp(logNormCDF(-zb), logPhi-math.Log(2*sigma)) - logTheta
	d := epsilon + logL - logU
	if d >= 0 {
		return 0
	}
	return math.Exp(logU) * -math.Expm1(d)
}

// smallestEpsilon returns the smallest ε ≥ 0 in [0, EpsilonCap] with ok(ε),
// to a relative 1e-10, for ok monotone (false below, true above); the
// value returned always satisfies ok. It returns +Inf if ok(EpsilonCap) is
// false and 0 if ok(0) holds.
func smallestEpsilon(ok func(float64) bool) float64 {
	if ok(0) {
		return 0
	}
	if !ok(EpsilonCap) {
		return math.Inf(1)
	}
	lo, hi := 0.5, 1.0
	if ok(hi) {
		for ok(lo) {
			hi, lo = lo, lo/2
			if lo < 1e-300 {
				return hi
			}
		}
	} else {
		for !ok(hi) {
			lo, hi = hi, hi*2
			if hi >= EpsilonCap {
				hi = EpsilonCap // ok(EpsilonCap) holds
				break
			}
		}
	}
	return bisectSmallest(lo, hi, 1e-10, ok)
}

// validateDistance checks a distance in units of sensitivity and the δ at
// which to state ε (δ = 0 only for pure-DP mechanisms).
func validateDistance(units, delta float64, pure bool) error {
	if !(units > 0) || math.IsInf(units, 0) {
		return fmt.Errorf("dp: distance must be a positive, finite number of sensitivity units, got %g", units)
	}
	if pure {
		return ValidateDelta(delta)
	}
	return validateGaussianDelta(delta)
}

// latticeShift returns ⌊units·Δ·2^−k⌋ + 1, computed exactly: the largest
// number of lattice steps by which round(x/2^k) and round(x'/2^k) can
// differ when |x − x'| ≤ units·Δ (each rounding moves by at most ½).
func latticeShift(units, sensitivity float64, k int) *big.Int {
	r := new(big.Rat).SetFloat64(units)
	r.Mul(r, new(big.Rat).SetFloat64(sensitivity))
	r.Mul(r, pow2Rat(-k))
	q := new(big.Int).Quo(r.Num(), r.Denom()) // r ≥ 0: truncation is the floor
	return q.Add(q, bigOne)
}

// ratFloat returns r rounded up to a float64.
func ratFloat(r *big.Rat) float64 {
	f, exact := r.Float64()
	if !exact && new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// DistanceEpsilon is one line of a whole-record guarantee: the ε for inputs
// that differ by Units sensitivity units.
type DistanceEpsilon struct {
	Units, Epsilon float64
}

// WholeRecordTable evaluates m.EpsilonAtDistance(D, δ) for each public
// distance D (in sensitivity units, e.g. 1, 2, 5, 10 and the clip diameter),
// in the order given: what the guarantee of one release means for a record
// that can move by more than one unit (a whole patient). The distances must
// be fixed in advance, never derived from the data.
func WholeRecordTable(m DistanceAccountant, delta float64, distances []float64) ([]DistanceEpsilon, error) {
	rows := make([]DistanceEpsilon, 0, len(distances))
	for _, d := range distances {
		e, err := m.EpsilonAtDistance(d, delta)
		if err != nil {
			return nil, fmt.Errorf("dp: whole-record table at %g units: %w", d, err)
		}
		rows = append(rows, DistanceEpsilon{Units: d, Epsilon: e})
	}
	return rows, nil
}

// FormatWholeRecordTable renders rows as one short line for people, e.g.
//
//	1 unit: ε=1; 2: ε=2.16; 5: ε=6.17; 10: ε=14.5; whole record (50 units): ε=147
//
// The row whose Units equal wholeRecordUnits (if any) is labelled the whole
// record. Each ε is rounded UP to three significant digits (RoundUpEpsilon),
// so every figure shown remains a valid bound; +Inf shows as ε=∞. The δ at
// which the table was computed is the caller's to state alongside.
func FormatWholeRecordTable(rows []DistanceEpsilon, wholeRecordUnits float64) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		u := strconv.FormatFloat(r.Units, 'g', -1, 64)
		var label string
		switch {
		case r.Units == wholeRecordUnits:
			label = "whole record (" + u + " " + unitWord(r.Units) + ")"
		case i == 0:
			label = u + " " + unitWord(r.Units)
		default:
			label = u
		}
		parts[i] = label + ": ε=" + RoundUpEpsilon(r.Epsilon)
	}
	return strings.Join(parts, "; ")
}

func unitWord(u float64) string {
	if u == 1 {
		return "unit"
	}
	return "units"
}

// RoundUpEpsilon returns the smallest decimal with three significant digits
// that is ≥ ε (compared exactly), in its shortest form ("1", "2.16", "147",
// "0.000124", "1.23e+06"); "∞" for +Inf. Rounding up keeps a stated bound
// valid: ε = 0.30000000000000004 shows as "0.301", never "0.3". ε must be
// non-negative; NaN shows as "NaN".
func RoundUpEpsilon(eps float64) string {
	switch {
	case math.IsNaN(eps) || eps < 0:
		return "NaN"
	case math.IsInf(eps, 1):
		return "∞"
	case eps == 0:
		return "0"
	}
	const digits = 3
	s := strconv.FormatFloat(eps, 'e', digits-1, 64) // d.dde±x, to nearest
	mant, expStr, _ := strings.Cut(s, "e")
	m, _ := strconv.Atoi(strings.Replace(mant, ".", "", 1))
	exp, _ := strconv.Atoi(expStr)
	dec := func() *big.Rat {
		r, _ := new(big.Rat).SetString(strconv.Itoa(m) + "e" + strconv.Itoa(exp-(digits-1)))
		return r
	}
	if dec().Cmp(new(big.Rat).SetFloat64(eps)) < 0 {
		m++
		if m == 1000 {
			m, exp = 100, exp+1
		}
	}
	f, _ := dec().Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
