package dp_test

import (
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

func TestRoundToLattice(t *testing.T) {
	tests := []struct {
		x    float64
		k    int
		want float64
	}{
		// OpenDP's examples (docs/MATHS.md §5.3).
		{-3, 2, -4},
		{-1, 2, 0},
		{2, 2, 4},
		{0.125, -2, 0.25},
		{-100.23, -2, -100.25},
		// Ties go away from zero (this distinguishes the rule from ties to +∞).
		{-2, 2, -4},
		{-0.125, -2, -0.25},
		{6, 2, 8},
		{-6, 2, -8},
		// Exactness: 0.1 is slightly above 1/10, so 0.1·2³ = 0.8000000000000000444 → 1.
		{0.1, -3, 0.125},
		{0.0625, -3, 0.125}, // exact tie 0.5 → 1
		{0.0624999999999999, -3, 0},
		{1e300, 900, math.Ldexp(math.Round(math.Ldexp(1e300, -900)), 900)},
		{3, 0, 3},
		{math.SmallestNonzeroFloat64, -1074, math.SmallestNonzeroFloat64},
		{math.SmallestNonzeroFloat64, -1073, math.Ldexp(1, -1073)}, // tie away from zero
		{5, 2000, 0},
		{5, -3000, 5},
		{math.MaxFloat64, 1023, math.Inf(1)}, // 2^1024 is beyond float64
	}
	for _, tc := range tests {
		if got := dp.RoundToLattice(tc.x, tc.k); got != tc.want {
			t.Errorf("RoundToLattice(%g, %d) = %g, want %g", tc.x, tc.k, got, tc.want)
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := dp.RoundToLattice(x, 0); !(got == x || math.IsNaN(got) && math.IsNaN(x)) {
			t.Errorf("RoundToLattice(%g, 0) = %g, want %g", x, got, x)
		}
	}
}

func TestRoundToLatticeError(t *testing.T) {
	// |RoundToLattice(x, k) − x| ≤ 2^(k−1) and the result is on the lattice.
	xs := []float64{-7.77, -1e-9, 0, 1e-9, 0.3, 1.5, 1234567.891, -98765.4321, 3e10}
	for _, x := range xs {
		for k := -40; k <= 40; k += 7 {
			got := dp.RoundToLattice(x, k)
			if math.Abs(got-x) > math.Ldexp(1, k-1) {
				t.Errorf("RoundToLattice(%g, %d) = %g: error %g > 2^%d", x, k, got, math.Abs(got-x), k-1)
			}
			if q := math.Ldexp(got, -k); q != math.Trunc(q) {
				t.Errorf("RoundToLattice(%g, %d) = %g is not a multiple of 2^%d", x, k, got, k)
			}
		}
	}
}

func TestClamp(t *testing.T) {
	tests := []struct{ x, lo, hi, want float64 }{
		{0.5, 0, 1, 0.5},
		{-2, 0, 1, 0},
		{7, 0, 1, 1},
		{math.Inf(1), -3, 3, 3},
		{math.Inf(-1), -3, 3, -3},
		{2, 2, 2, 2},
	}
	for _, tc := range tests {
		if got := dp.Clamp(tc.x, tc.lo, tc.hi); got != tc.want {
			t.Errorf("Clamp(%g, %g, %g) = %g, want %g", tc.x, tc.lo, tc.hi, got, tc.want)
		}
	}
	if got := dp.Clamp(math.NaN(), 0, 1); !math.IsNaN(got) {
		t.Errorf("Clamp(NaN, 0, 1) = %g, want NaN", got)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Clamp(0, 1, 0) did not panic")
		}
	}()
	dp.Clamp(0, 1, 0)
}
