package dp_test

import (
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// TestZCDPEpsilon pins the zCDP → (ε, δ) conversion. Reference values: the
// minimum over α of the improved conversion (CKS20 Proposition 12)
// αρ + log(1 − 1/α) − (log δ + log α)/(α − 1), found by golden-section search
// in Python (math module only); the classic bound ρ + 2√(ρ log(1/δ)) (Bun &
// Steinke 2016) must never be beaten by less.
func TestZCDPEpsilon(t *testing.T) {
	for _, c := range []struct{ rho, delta, want float64 }{
		{0.5, 1e-5, 4.728386984943314},
		{0.05, 1e-6, 1.471594750532416},
		{2, 1e-3, 8.416064294321279},
	} {
		// A minimum over the orders tried can only overestimate ε (the safe side).
		got := dp.ZCDPEpsilon(c.rho, c.delta)
		if got < c.want*(1-1e-12) || got > c.want*(1+1e-9) {
			t.Errorf("ZCDPEpsilon(%g, %g) = %.15g, want %.15g (+ at most 1e-9 relative)", c.rho, c.delta, got, c.want)
		}
		if classic := c.rho + 2*math.Sqrt(c.rho*math.Log(1/c.delta)); got > classic {
			t.Errorf("ZCDPEpsilon(%g, %g) = %g exceeds the classic bound %g", c.rho, c.delta, got, classic)
		}
	}
}

// latticeStep is the documented lattice step 2^k of dp.VectorGaussian,
// k = ⌊log₂ min(Δ, σ₀)⌋ − 20 − ⌈½ log₂ m⌉.
func latticeStep(sens, sigma0 float64, m int) float64 {
	return math.Ldexp(1, int(math.Floor(math.Log2(math.Min(sens, sigma0))))-20-int(math.Ceil(0.5*math.Log2(float64(m)))))
}

// TestVectorGaussianCalibration checks that the noise is what the privacy
// argument on dp.VectorGaussian needs, and not much more: the conversion of
// ρ = s²/(2σ²) (s = Δ plus the √m rounding slack, in query units) gives at
// most ε, σ is no smaller than the optimal analytic-Gaussian σ for Δ alone,
// and no larger than the σ of the classic zCDP conversion.
func TestVectorGaussianCalibration(t *testing.T) {
	for _, c := range []struct {
		eps, delta, sens float64
		m                int
	}{
		{1, 1e-5, 1, 1}, {1, 1e-5, 1, 1000}, {7.389, 1e-4, 2.4, 2210}, {0.1, 1e-6, 50, 20_000_000}, {3, 1e-5, 1e-3, 540_000},
	} {
		g, err := dp.NewVectorGaussian(c.eps, c.delta, c.sens, c.m)
		if err != nil {
			t.Fatalf("NewVectorGaussian(%+v): %v", c, err)
		}
		sigma := g.Scale()
		// The lattice step is 2^-20/√m of min(Δ, σ₀) or finer; the slack is √m steps.
		sigma0, err := dp.AnalyticGaussianSigma(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		step := latticeStep(c.sens, sigma0, c.m)
		s := c.sens + step*math.Sqrt(float64(c.m))
		if slack := step * math.Sqrt(float64(c.m)); slack > math.Ldexp(c.sens, -20) {
			t.Errorf("%+v: rounding slack %g exceeds 2^-20 of Δ", c, slack)
		}
		if e := dp.ZCDPEpsilon(s*s/(2*sigma*sigma), c.delta); e > c.eps {
			t.Errorf("%+v: σ = %g gives ε = %g > %g", c, sigma, e, c.eps)
		}
		if sigma < sigma0 {
			t.Errorf("%+v: σ = %g is below the analytic-Gaussian optimum %g", c, sigma, sigma0)
		}
		// Classic: ρ + 2√(ρ L) = ε ⇒ √ρ = √(L + ε) − √L.
		L := math.Log(1 / c.delta)
		sqrtRho := math.Sqrt(L+c.eps) - math.Sqrt(L)
		if classic := s / (math.Sqrt2 * sqrtRho); sigma > classic*(1+1e-6) {
			t.Errorf("%+v: σ = %g exceeds the classic zCDP σ %g", c, sigma, classic)
		}
		if e, d := g.Cost(); e != c.eps || d != c.delta {
			t.Errorf("Cost() = (%g, %g), want (%g, %g)", e, d, c.eps, c.delta)
		}
	}
}

// TestVectorGaussianNoise releases a vector of 20,000 equal values and checks
// the noise: unbiased (Google's 4.41717-SE mean test), with variance Scale()²
// (the sample variance within 4.41717 of its standard error √(2/m)·σ²; false
// failure ≈ 1e-5 each, fixed seed), every value on the lattice 2^k·Z.
func TestVectorGaussianNoise(t *testing.T) {
	const m, x0 = 20_000, 3.25
	g, err := dp.NewVectorGaussian(1, 1e-5, 1, m)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, m)
	for j := range x {
		x[j] = x0
	}
	if err := g.Release(dptest.Source(7), x); err != nil {
		t.Fatal(err)
	}
	v := g.Scale() * g.Scale()
	meanCheck(t, "vector Gaussian", x, x0, v)
	var ss float64
	for _, y := range x {
		ss += (y - x0) * (y - x0)
	}
	if got, tol := ss/m, 4.41717*math.Sqrt(2.0/m)*v; math.Abs(got-v) > tol {
		t.Errorf("noise variance = %g, want %g ± %g", got, v, tol)
	}
	sigma0, _ := dp.AnalyticGaussianSigma(1, 1e-5, 1)
	step := latticeStep(1, sigma0, m)
	for j, y := range x {
		if q := y / step; q != math.Trunc(q) {
			t.Fatalf("x[%d] = %g is not a multiple of the lattice step %g", j, y, step)
		}
	}
}

func TestVectorGaussianErrors(t *testing.T) {
	if _, err := dp.NewVectorGaussian(1, 1e-5, 1, 0); err == nil {
		t.Error("NewVectorGaussian with m = 0: no error")
	}
	if _, err := dp.NewVectorGaussian(0, 1e-5, 1, 3); err == nil {
		t.Error("NewVectorGaussian with ε = 0: no error")
	}
	g, err := dp.NewVectorGaussian(1, 1e-5, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(dptest.Source(1), []float64{1, 2}); err == nil {
		t.Error("Release of 2 values into a 3-dimensional mechanism: no error")
	}
	if err := g.Release(dptest.Source(1), []float64{1, math.NaN(), 2}); err == nil {
		t.Error("Release of a NaN: no error")
	}
}
