package projection

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestCheckGaussian: CheckGaussian refuses δ below MinDelta and (ε, δ) whose noise cannot
// be calibrated, with a message that says what to ask for; and it agrees with
// ProjectGaussian, which it stands in for: over a grid of ε and δ spanning the
// supported range and beyond, ProjectGaussian succeeds exactly when CheckGaussian
// accepts, for r below and above d.
func TestCheckGaussian(t *testing.T) {
	const n, d = 12, 3
	x := make([]float64, n*d)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	for _, tc := range []struct {
		p    Params
		want string // "" for accepted
	}{
		{Params{R: 2, Epsilon: 1, Delta: 1e-5}, ""},
		{Params{R: 2, Epsilon: 1, Delta: MinDelta}, ""},
		{Params{R: 2, Epsilon: 1, Delta: 1e-101}, "ask for a δ of at least 1e-100"},
		{Params{R: 2, Epsilon: 1, Delta: 5e-324}, "ask for a δ of at least 1e-100"},
		{Params{R: 2, Epsilon: 1e-12, Delta: 1e-100}, "cannot be calibrated"},
		{Params{R: 2, Epsilon: math.Inf(1), Delta: 1e-5}, "epsilon must be positive and finite"},
		{Params{R: 2, Epsilon: 1, Delta: 1}, "delta must be in (0, 1)"},
	} {
		err := CheckGaussian(n, d, tc.p)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckGaussian(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	accepted, refused := 0, 0
	for _, r := range []int{1, 2, 5} {
		for _, eps := range []float64{1e-12, 1e-8, 1e-6, 1e-4, 1e-2, 1, 1e2, 1e4, 1e8, 1e12, 1e20} {
			for _, delta := range []float64{1e-100, 1e-40, 1e-10, 1e-3, 0.5, 0.999999} {
				p := Params{R: r, Epsilon: eps, Delta: delta}
				checkErr := CheckGaussian(n, d, p)
				_, _, err := ProjectGaussian(context.Background(), x, n, d, p, SeededSource(1), seededNoise(2))
				if (checkErr == nil) != (err == nil) {
					t.Errorf("r=%d ε=%g δ=%g: CheckGaussian = %v but ProjectGaussian = %v", r, eps, delta, checkErr, err)
				}
				if checkErr == nil {
					accepted++
				} else {
					refused++
				}
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("the grid was %d accepted and %d refused; want both", accepted, refused)
	}
	t.Logf("%d accepted, %d refused", accepted, refused)
}
