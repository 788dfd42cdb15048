package dp

import (
	"math"
	"testing"
)

// TestCurveLogBoundAgrees checks the log-space convex-tail bound against
// DiscreteGaussianDeltaBound where the latter is in float64 range (they
// bound the same δ; for σ of 2²⁰ lattice steps both are tight to ~1e-9),
// and that where e^ε·P[…] underflows the log form is the tighter of the two.
func TestCurveLogBoundAgrees(t *testing.T) {
	sigma := 3.73 * (1 << 20)
	s := int64(1<<20 + 1)
	for _, eps := range []float64{0.5, 1, 2, 5, 20} {
		a := DiscreteGaussianDeltaBound(sigma, eps, s)
		b := discreteGaussianDeltaBoundLog(sigma, eps, s)
		if math.Abs(b/a-1) > 1e-8 {
			t.Errorf("ε = %g: log-space bound %.15g, DiscreteGaussianDeltaBound %.15g", eps, b, a)
		}
	}
	// 1000 units: ε ≈ 37068, e^ε overflows and P[Y > εσ²/s + s/2] underflows.
	big := 1000 * s
	eps := 37067.85
	a := DiscreteGaussianDeltaBound(sigma, eps, big)
	b := discreteGaussianDeltaBoundLog(sigma, eps, big)
	cont := AnalyticGaussianDelta(sigma, eps, float64(big))
	if !(b < a) || math.Abs(b/cont-1) > 1e-6 {
		t.Errorf("1000 units: log-space bound %g, DiscreteGaussianDeltaBound %g, continuous δ %g", b, a, cont)
	}
	// Outside the convex region it gives the trivial bound.
	if got := discreteGaussianDeltaBoundLog(sigma, 0, s); got != 1 {
		t.Errorf("ε = 0: log-space bound %g, want 1 (not applicable)", got)
	}
}

// TestCurveAtOneUnitUnclamped checks the raw accounting at one unit, before
// EpsilonAtDistance clamps it to the calibrated ε: it must already be at most
// ε (the calibration proved exactly this) up to the bisection's relative
// 1e-10 (the clamp removes that), and close to it.
func TestCurveAtOneUnitUnclamped(t *testing.T) {
	for _, c := range []struct{ eps, delta, sens float64 }{{1, 1e-5, 1}, {math.Exp(2), 1e-4, 2.4}, {0.3, 1e-6, 50}} {
		g, err := NewGaussian(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		s := latticeShift(1, c.sens, g.k).Int64()
		if e := g.epsilonAtShift(s, c.delta); e > c.eps*(1+1e-10) || e < c.eps*(1-1e-6) {
			t.Errorf("Gaussian %+v: ε at one unit %.15g, want ≤ %g (+1e-10) within 1e-6", c, e, c.eps)
		}
		v, err := NewVectorGaussian(c.eps, c.delta, c.sens, 100)
		if err != nil {
			t.Fatal(err)
		}
		if e := ZCDPEpsilon(v.rhoAtDistance(1), c.delta); e > c.eps || e < c.eps*(1-1e-6) {
			t.Errorf("VectorGaussian %+v: ε at one unit %.15g, want ≤ %g within 1e-6", c, e, c.eps)
		}
	}
}

// TestCurveLatticeShift pins ⌊units·Δ·2^−k⌋ + 1 on exact cases.
func TestCurveLatticeShift(t *testing.T) {
	for _, c := range []struct {
		units, sens float64
		k           int
		want        int64
	}{
		{1, 1, -20, 1<<20 + 1}, {2.5, 1, -20, 5<<19 + 1}, {1, 0.75, -2, 4}, {0.1, 1, 0, 1}, {3, 1, 1, 2},
	} {
		if got := latticeShift(c.units, c.sens, c.k); got.Int64() != c.want {
			t.Errorf("latticeShift(%g, %g, %d) = %v, want %d", c.units, c.sens, c.k, got, c.want)
		}
	}
}
