package dp_test

import (
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

func TestGroupPrivacy(t *testing.T) {
	tests := []struct {
		eps, delta float64
		k          int
		wantEps    float64
		wantDelta  float64
	}{
		{1, 1e-5, 1, 1, 1e-5},
		{1, 1e-5, 2, 2, (1 + math.E) * 1e-5},
		{0.5, 0, 2, 1, 0},
		{2, 1e-6, 3, 6, (1 + math.Exp(2) + math.Exp(4)) * 1e-6},
		{0, 1e-6, 4, 0, 4e-6},
	}
	for _, tt := range tests {
		e, d, err := dp.GroupPrivacy(tt.eps, tt.delta, tt.k)
		if err != nil || e != tt.wantEps || d < tt.wantDelta || d > tt.wantDelta*(1+1e-15) {
			t.Errorf("GroupPrivacy(%g, %g, %d) = (%g, %g), %v; want (%g, %g) rounded up", tt.eps, tt.delta, tt.k, e, d, err, tt.wantEps, tt.wantDelta)
		}
	}
	for _, bad := range []struct {
		eps, delta float64
		k          int
	}{{1, 1e-5, 0}, {-1, 0, 2}, {math.Inf(1), 0, 2}, {1, 1, 2}, {math.NaN(), 0, 2}} {
		if _, _, err := dp.GroupPrivacy(bad.eps, bad.delta, bad.k); err == nil {
			t.Errorf("GroupPrivacy(%g, %g, %d) error = nil, want an error", bad.eps, bad.delta, bad.k)
		}
	}
}

// TestGroupOfTwoGaussian checks the weak-triangle bound against the exact curve of
// the Gaussian mechanism at twice the sensitivity, α(2Δ)²/(2σ²) (Mironov 2017,
// Proposition 7): the bound must never be below it, and for the Gaussian it is
// (α − ½)α/(α − 1) + α − ½ in units of Δ²/σ², so at most 1.5 times the exact value
// at α ≥ 2 (equality of the limit as α → ∞ is 1).
func TestGroupOfTwoGaussian(t *testing.T) {
	orders := dp.DefaultOrders()
	one, err := dp.GaussianRDP(orders, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	two, err := dp.GaussianRDP(orders, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	g, err := one.GroupOfTwo()
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range orders {
		exact := two.Epsilons[i]
		got := g.Epsilons[i]
		if 2*a > 256 {
			if !math.IsInf(got, 1) {
				t.Errorf("GroupOfTwo at α=%g = %g, want +Inf (no order 2α on the grid)", a, got)
			}
			continue
		}
		r := 1.0 / 9 // Δ²/σ²
		want := ((a-0.5)*a/(a-1) + a - 0.5) * r
		// Above 64 the grid skips orders, so the bound takes the next grid order up.
		if onGrid := a == math.Trunc(a) || a == 1.5; onGrid && a <= 32 && math.Abs(got-want) > 1e-12*want {
			t.Errorf("GroupOfTwo at α=%g = %g, want %g", a, got, want)
		}
		if got < exact || a >= 2 && got > 1.5*exact*(1+1e-12) && a <= 32 {
			t.Errorf("GroupOfTwo at α=%g = %g; exact curve at 2Δ %g: want between it and 1.5 times it", a, got, exact)
		}
	}
}

func TestGroupOfTwoPure(t *testing.T) {
	c, err := dp.PureDPRDP([]float64{2, 4, math.Inf(1)}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.GroupOfTwo()
	if err != nil {
		t.Fatal(err)
	}
	if last := g.Epsilons[len(g.Epsilons)-1]; last != 1 {
		t.Errorf("GroupOfTwo of pure 0.5 at α=∞ = %g, want 1", last)
	}
	if e, _, err := g.ToDP(1e-6); err != nil || e > 1 {
		t.Errorf("GroupOfTwo of pure 0.5 converted = %g, %v; want at most 1", e, err)
	}
	if _, err := (dp.RDPCurve{}).GroupOfTwo(); err == nil {
		t.Errorf("GroupOfTwo of an empty curve: error = nil, want an error")
	}
}

// TestRhoAtDistance: ρ at the clip diameter converts to the ε EpsilonAtDistance
// states, and grows with the square of the distance.
func TestRhoAtDistance(t *testing.T) {
	g, err := dp.NewVectorGaussian(1, 1e-5, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r50, err := g.RhoAtDistance(50)
	if err != nil {
		t.Fatal(err)
	}
	e50, err := g.EpsilonAtDistance(50, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if got := dp.ZCDPEpsilon(r50, 1e-5); got != e50 {
		t.Errorf("ZCDPEpsilon(RhoAtDistance(50)) = %g, want EpsilonAtDistance(50) = %g", got, e50)
	}
	r1, _ := g.RhoAtDistance(1)
	if ratio := r50 / r1; math.Abs(ratio-2500) > 2500*1e-5 {
		t.Errorf("RhoAtDistance(50)/RhoAtDistance(1) = %g, want 2500 (D²)", ratio)
	}
	if _, err := g.RhoAtDistance(0); err == nil {
		t.Errorf("RhoAtDistance(0) error = nil, want an error")
	}
}
