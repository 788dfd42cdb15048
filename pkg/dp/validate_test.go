package dp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

func TestValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name    string
		err     error
		wantErr string // "" = valid
	}{
		{"epsilon 1", dp.ValidateEpsilon(1), ""},
		{"epsilon tiny", dp.ValidateEpsilon(5e-324), ""},
		{"epsilon 0", dp.ValidateEpsilon(0), "dp: epsilon must be positive and finite, got 0"},
		{"epsilon -1", dp.ValidateEpsilon(-1), "dp: epsilon must be positive and finite, got -1"},
		{"epsilon NaN", dp.ValidateEpsilon(nan), "dp: epsilon must be positive and finite, got NaN"},
		{"epsilon Inf", dp.ValidateEpsilon(inf), "dp: epsilon must be positive and finite, got +Inf"},
		{"delta 0", dp.ValidateDelta(0), ""},
		{"delta 1e-5", dp.ValidateDelta(1e-5), ""},
		{"delta 1", dp.ValidateDelta(1), "dp: delta must be in [0, 1), got 1"},
		{"delta -1e-9", dp.ValidateDelta(-1e-9), "dp: delta must be in [0, 1), got -1e-09"},
		{"delta NaN", dp.ValidateDelta(nan), "dp: delta must be in [0, 1), got NaN"},
		{"sensitivity 2", dp.ValidateSensitivity(2), ""},
		{"sensitivity 0", dp.ValidateSensitivity(0), "dp: sensitivity must be positive and finite, got 0"},
		{"sensitivity -Inf", dp.ValidateSensitivity(-inf), "dp: sensitivity must be positive and finite, got -Inf"},
		{"sensitivity Inf", dp.ValidateSensitivity(inf), "dp: sensitivity must be positive and finite, got +Inf"},
	}
	for _, tc := range tests {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if got != tc.wantErr {
			t.Errorf("%s: error = %q, want %q", tc.name, got, tc.wantErr)
		}
	}
}

func TestConstructorErrors(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		err     error
		wantSub string
	}{
		{"Laplace eps 0", lapErr(0, 1), "epsilon must be positive"},
		{"Laplace sens NaN", lapErr(1, nan), "sensitivity must be positive"},
		{"Laplace scale huge", lapErr(1e-300, 1e300), "outside"},
		{"Laplace scale tiny", lapErr(1e300, 1e-300), "outside"},
		{"Gaussian delta 0", gaussErr(1, 0, 1), "needs delta > 0"},
		{"Gaussian delta 1", gaussErr(1, 1, 1), "delta must be in [0, 1)"},
		{"Gaussian eps -1", gaussErr(-1, 1e-5, 1), "epsilon must be positive"},
		{"Gaussian sens 0", gaussErr(1, 1e-5, 0), "sensitivity must be positive"},
		{"Gaussian scale huge", gaussErr(1e-300, 1e-10, 1e300), "outside"},
		{"Exponential lo > hi", expErr(1, 1, 2, 1), "lo < hi"},
		{"Exponential lo = hi", expErr(1, 1, 2, 2), "lo < hi"},
		{"Exponential hi Inf", expErr(1, 1, 0, math.Inf(1)), "must be finite"},
		{"Exponential eps NaN", expErr(nan, 1, 0, 1), "epsilon must be positive"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), "dp: ") || !strings.Contains(tc.err.Error(), tc.wantSub) {
			t.Errorf("%s: error = %v, want a dp: error containing %q", tc.name, tc.err, tc.wantSub)
		}
	}
}

func lapErr(eps, sens float64) error          { _, err := dp.NewLaplace(eps, sens); return err }
func gaussErr(eps, delta, sens float64) error { _, err := dp.NewGaussian(eps, delta, sens); return err }
func expErr(eps, sens, lo, hi float64) error {
	_, err := dp.NewExponential(eps, sens, lo, hi)
	return err
}

func validEps(e float64) bool  { return e > 0 && !math.IsInf(e, 0) }
func validSens(s float64) bool { return s > 0 && !math.IsInf(s, 0) }

func FuzzValidateEpsilon(f *testing.F) {
	for _, v := range []float64{1, 0, -1, math.NaN(), math.Inf(1), 5e-324, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, eps float64) {
		if err := dp.ValidateEpsilon(eps); (err == nil) != validEps(eps) {
			t.Errorf("ValidateEpsilon(%g) = %v", eps, err)
		}
	})
}

func FuzzValidateDelta(f *testing.F) {
	for _, v := range []float64{0, 1e-5, 1, math.Nextafter(1, 0), math.Copysign(0, -1), -1e-300, math.NaN(), math.Inf(-1)} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, delta float64) {
		valid := delta >= 0 && delta < 1
		if err := dp.ValidateDelta(delta); (err == nil) != valid {
			t.Errorf("ValidateDelta(%g) = %v", delta, err)
		}
	})
}

func FuzzValidateSensitivity(f *testing.F) {
	for _, v := range []float64{1, 0, -2, math.NaN(), math.Inf(1), 5e-324} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, s float64) {
		if err := dp.ValidateSensitivity(s); (err == nil) != validSens(s) {
			t.Errorf("ValidateSensitivity(%g) = %v", s, err)
		}
	})
}

// scaleInRange reports whether |log₂ x| is clearly inside (1), clearly outside
// (-1) or near the edge (0) of the supported 2^±1000 range.
func scaleInRange(log2x float64) int {
	switch a := math.Abs(log2x); {
	case a < 999:
		return 1
	case a > 1001:
		return -1
	}
	return 0
}

func FuzzNewLaplace(f *testing.F) {
	for _, v := range [][2]float64{{1, 1}, {0, 1}, {1, 0}, {math.NaN(), 1}, {1e-300, 1e300}, {5e-324, 5e-324}, {1e300, 1e-300}, {3, 1e-20}} {
		f.Add(v[0], v[1])
	}
	f.Fuzz(func(t *testing.T, eps, sens float64) {
		l, err := dp.NewLaplace(eps, sens)
		if !validEps(eps) || !validSens(sens) {
			if err == nil {
				t.Fatalf("NewLaplace(%g, %g) accepted invalid parameters", eps, sens)
			}
			return
		}
		r := scaleInRange(math.Log2(sens) - math.Log2(eps))
		if (r == 1 && err != nil) || (r == -1 && err == nil) {
			t.Fatalf("NewLaplace(%g, %g) = %v (range %d)", eps, sens, err, r)
		}
		if err != nil {
			return
		}
		if s := l.Scale(); !(s > 0) || math.IsInf(s, 0) || s < sens/eps*(1-1e-12) {
			t.Fatalf("NewLaplace(%g, %g).Scale() = %g, want ≥ Δ/ε", eps, sens, s)
		}
		if _, err := l.Release(dptest.Source(1), 1); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

func FuzzNewGaussian(f *testing.F) {
	for _, v := range [][3]float64{{1, 1e-5, 1}, {1, 0, 1}, {0, 0.5, 1}, {1, 1, 1}, {1e-300, 1e-300, 1}, {700, 0.9, 1e-300}, {1e-10, 1e-10, 1e300}} {
		f.Add(v[0], v[1], v[2])
	}
	f.Fuzz(func(t *testing.T, eps, delta, sens float64) {
		g, err := dp.NewGaussian(eps, delta, sens)
		if !validEps(eps) || !validSens(sens) || !(delta > 0 && delta < 1) {
			if err == nil {
				t.Fatalf("NewGaussian(%g, %g, %g) accepted invalid parameters", eps, delta, sens)
			}
			return
		}
		if err != nil {
			// Only the range check may refuse valid parameters.
			if !strings.Contains(err.Error(), "outside") && !strings.Contains(err.Error(), "overflow") {
				t.Fatalf("NewGaussian(%g, %g, %g) = %v for valid parameters", eps, delta, sens, err)
			}
			return
		}
		s := g.Scale()
		if !(s > 0) || math.IsInf(s, 0) {
			t.Fatalf("NewGaussian(%g, %g, %g).Scale() = %g", eps, delta, sens, s)
		}
		if d := dp.AnalyticGaussianDelta(s, eps, sens); d > delta {
			t.Fatalf("NewGaussian(%g, %g, %g): δ(Scale %g) = %g > δ", eps, delta, sens, s, d)
		}
		if _, err := g.Release(dptest.Source(1), 1); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

func FuzzNewExponential(f *testing.F) {
	for _, v := range [][7]float64{
		{1, 1, 0, 1, 0.5, 0.2, 0.9},
		{1, 1, 1, 0, 0, 0, 0},
		{1e300, 1e-300, -1e300, 1e300, 1, -1, 0},
		{1, 1, 0, 1, math.NaN(), 0, 0},
		{1, 1, math.Inf(-1), 1, 0, 0, 0},
	} {
		f.Add(v[0], v[1], v[2], v[3], v[4], v[5], v[6])
	}
	f.Fuzz(func(t *testing.T, eps, sens, lo, hi, s0, s1, s2 float64) {
		e, err := dp.NewExponential(eps, sens, lo, hi)
		finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
		valid := validEps(eps) && validSens(sens) && finite(lo) && finite(hi) && lo < hi
		if (err == nil) != valid {
			t.Fatalf("NewExponential(%g, %g, %g, %g) = %v, valid = %v", eps, sens, lo, hi, err, valid)
		}
		if err != nil {
			return
		}
		scores := []float64{s0, s1, s2}
		i, err := e.Select(dptest.Source(1), scores)
		hasNaN := math.IsNaN(s0) || math.IsNaN(s1) || math.IsNaN(s2)
		if (err != nil) != hasNaN || (err == nil && (i < 0 || i > 2)) {
			t.Fatalf("Select(%v) = %d, %v", scores, i, err)
		}
	})
}
