package dp

import (
	"fmt"
	"math"
)

// AnalyticGaussianDelta returns the smallest δ for which adding N(0, σ²) noise
// to a query of ℓ2-sensitivity Δ is (ε, δ)-DP (Balle & Wang 2018, Theorem 8):
//
//	δ(σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
//
// ε = 0 is allowed here (δ = 2Φ(Δ/(2σ)) − 1). It returns NaN if σ or Δ is not
// positive and finite or ε is negative or not finite. The difference is
// evaluated in log space so that small δ keeps its relative accuracy.
func AnalyticGaussianDelta(sigma, epsilon, sensitivity float64) float64 {
	if !(sigma > 0) || math.IsInf(sigma, 0) || !(epsilon >= 0) || math.IsInf(epsilon, 0) ||
		!(sensitivity > 0) || math.IsInf(sensitivity, 0) {
		return math.NaN()
	}
	r := sensitivity / (2 * sigma)
	e := epsilon * sigma / sensitivity
	la := logNormCDF(r - e)
	lb := epsilon + logNormCDF(-r-e)
	if lb >= la {
		return 0
	}
	return math.Exp(la) * -math.Expm1(lb-la)
}

// AnalyticGaussianSigma returns the smallest σ (to a relative 1e-12, rounded
// up so that the result is on the conservative side) with
// AnalyticGaussianDelta(σ, ε, Δ) ≤ δ: the analytic Gaussian mechanism's
// calibration (Balle & Wang 2018, Algorithm 1, solved here by bisection on
// σ/Δ, since δ depends on σ and Δ only through σ/Δ and decreases in it).
// It needs ε > 0, 0 < δ < 1 and Δ > 0, all finite.
func AnalyticGaussianSigma(epsilon, delta, sensitivity float64) (float64, error) {
	if err := ValidateEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := validateGaussianDelta(delta); err != nil {
		return 0, err
	}
	if err := ValidateSensitivity(sensitivity); err != nil {
		return 0, err
	}
	f := func(s float64) float64 { return AnalyticGaussianDelta(s, epsilon, 1) }
	lo, hi := 1.0, 1.0
	if f(hi) > delta {
		for f(hi) > delta {
			lo = hi
			hi *= 2
			if math.IsInf(hi, 0) {
				return 0, fmt.Errorf("dp: analytic Gaussian sigma for epsilon %g, delta %g overflows float64", epsilon, delta)
			}
		}
	} else {
		for f(lo) <= delta {
			hi = lo
			lo /= 2
			if lo == 0 {
				return 0, fmt.Errorf("dp: analytic Gaussian sigma for epsilon %g, delta %g underflows float64", epsilon, delta)
			}
		}
	}
	// Invariant: f(lo) > δ ≥ f(hi), hi ≤ 2·lo.
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if f(mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	sigma := math.Nextafter(hi*sensitivity, math.Inf(1))
	if math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("dp: analytic Gaussian sigma %g·%g overflows float64", hi, sensitivity)
	}
	return sigma, nil
}

func validateGaussianDelta(delta float64) error {
	if err := ValidateDelta(delta); err != nil {
		return err
	}
	if delta == 0 {
		return fmt.Errorf("dp: the Gaussian mechanism needs delta > 0, got %g", delta)
	}
	if delta < MinGaussianDelta {
		return fmt.Errorf("dp: Gaussian delta %g is outside the supported range [%g, 1): the normal tail computations lose precision below it", delta, MinGaussianDelta)
	}
	return nil
}

// MinGaussianDelta is the smallest δ the Gaussian calibration accepts. Fuzzing found
// that near δ ≈ 1e-302 the float evaluation of the normal tails drifts by ~1e-4
// relative, enough to let a calibrated σ miss its δ; no deployment needs δ this small.
const MinGaussianDelta = 1e-100

// logNormCDF returns log Φ(x) for the standard normal CDF Φ, accurate in the
// far lower tail where Φ(x) underflows.
func logNormCDF(x float64) float64 {
	if x > -37.5 {
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	// Mills-ratio asymptotic series: Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸ − …);
	// for x ≤ −37.5 the omitted terms are below 2e-13 relative.
	x2 := 1 / (x * x)
	series := 1 - x2*(1-x2*(3-x2*(15-x2*105)))
	return -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}

// normSurvival returns P[Z ≥ z] = Φ(−z) for a standard normal Z.
func normSurvival(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// DiscreteGaussianDeltaBound returns an upper bound on the δ for which adding
// discrete Gaussian noise N_ℤ(0, σ²) to an integer query whose values on
// neighbouring inputs differ by at most the integer s ≥ 1 is (ε, δ)-DP.
//
// Canonne, Kamath & Steinke 2020 (Theorem 7) give the exact value
//
//	δ = P[Y > εσ²/s − s/2] − e^ε P[Y > εσ²/s + s/2],  Y ~ N_ℤ(0, σ²).
//
// The tails of Y are bounded by the normal ones: with f(y) = exp(−y²/(2σ²))
// decreasing on [0, ∞) and integer m ≥ 0, ∫_m^∞ f ≤ Σ_{y≥m} f(y) ≤ f(m) + ∫_m^∞ f,
// and the normaliser satisfies √(2π)σ ≤ Σ_ℤ f ≤ √(2π)σ·(1 + 2q/(1−q)),
// q = exp(−2π²σ²) (Poisson summation). Hence for m ≥ 0
//
//	Φ(−m/σ)/(1 + 2q/(1−q)) ≤ P[Y ≥ m] ≤ Φ(−m/σ) + φ(m/σ)/σ,
//
// where f is convex (y ≥ σ) the midpoint and trapezoid rules tighten this
// to ∫_m^∞ f + f(m)/2 ≤ Σ_{y≥m} f(y) ≤ ∫_{m−½}^∞ f (m ≥ σ, resp. m − ½ ≥ σ),
// and everywhere the midpoint rule with its error term bounds
// |Σ_{y≥m} f(y) − ∫_{m−½}^∞ f| by (∫_{m−½}^∞ h + 3 max h)/(24σ²) with
// h(y) = f(y)(1 + y²/σ²) ≥ σ²|f”(y)| (a relative O((1 + m²/σ²)/σ²)); the
// tighter of each pair is used. The bound is loose for σ of a few units and
// tight (relative 1e-9 or better) for the σ of about 2²⁰ lattice steps the
// Gaussian mechanism uses. For m ≤ 0, P[Y ≥ m] = 1 − P[Y ≥ 1−m] by symmetry. For the σ of thousands of
// lattice steps that the Gaussian mechanism uses the bound is within a
// relative 1e-6 or so of the continuous analytic-Gaussian δ. It returns NaN
// on invalid arguments.
func DiscreteGaussianDeltaBound(sigma, epsilon float64, s int64) float64 {
	if !(sigma > 0) || math.IsInf(sigma, 0) || !(epsilon >= 0) || math.IsInf(epsilon, 0) || s < 1 {
		return math.NaN()
	}
	fs := float64(s)
	q := math.Exp(-2 * math.Pi * math.Pi * sigma * sigma)
	theta := 1 + 2*q/(1-q)
	phi := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
	root2pi := math.Sqrt(2 * math.Pi)
	// midpointError bounds |Σ_{y≥m} f(y) − ∫_{m−½}^∞ f| / (√(2π)σ) for m ≥ 1:
	// the midpoint rule errs by f''(ξ)/24 per cell, |f''| ≤ h/σ² with
	// h(y) = f(y)(1 + y²/σ²), and over unit cells Σ max h ≤ ∫ h + 3 max h
	// (h rises up to y = σ, where h = 2e^{−½}, and falls after; from u ≥ σ on,
	// Σ max h ≤ h(u) + ∫ h), with
	// ∫_u^∞ h = 2√(2π)σ Φ(−u/σ) + u f(u).
	midpointError := func(m float64) float64 {
		u := m - 0.5
		z := u / sigma
		ih := 2*root2pi*sigma*normSurvival(z) + u*math.Exp(-z*z/2)
		peaks := 6 * math.Exp(-0.5)
		if u >= sigma { // h decreasing on [u, ∞): Σ max h ≤ h(u) + ∫ h
			peaks = math.Exp(-z*z/2) * (1 + z*z)
		}
		return (ih + peaks) / (24 * sigma * sigma) / (root2pi * sigma)
	}
	upper := func(m float64) float64 { // ≥ P[Y ≥ m], m ≥ 1
		z := m / sigma
		u := normSurvival(z) + phi(z)/sigma
		if m-0.5 >= sigma { // f convex on [m−½, ∞): f(y) ≤ ∫_{y−½}^{y+½} f
			u = math.Min(u, normSurvival((m-0.5)/sigma))
		}
		return math.Min(u, normSurvival((m-0.5)/sigma)+midpointError(m))
	}
	lower := func(m float64) float64 { // ≤ P[Y ≥ m], m ≥ 1
		z := m / sigma
		l := normSurvival(z)
		if m >= sigma { // f convex on [m, ∞): ∫_y^{y+1} f ≤ (f(y) + f(y+1))/2
			l += phi(z) / (2 * sigma)
		}
		l = math.Max(l, normSurvival((m-0.5)/sigma)-midpointError(m))
		return l / theta
	}
	tailUpper := func(m float64) float64 {
		if m >= 1 {
			return math.Min(1, upper(m))
		}
		return 1 - lower(1-m)
	}
	tailLower := func(m float64) float64 {
		if m >= 1 {
			return lower(m)
		}
		return math.Max(0, 1-upper(1-m))
	}
	c := epsilon * sigma * sigma / fs
	ma := math.Floor(c-fs/2) + 1 // smallest integer > εσ²/s − s/2
	mb := math.Floor(c+fs/2) + 1 // smallest integer > εσ²/s + s/2
	u := tailUpper(ma)
	l := tailLower(mb)
	if l <= 0 {
		return u
	}
	el := math.Exp(epsilon + math.Log(l))
	if el >= u {
		return 0
	}
	return u - el
}
