package dptest

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestChiSquareCritical(t *testing.T) {
	// Exact 1 − 1e-6 quantiles, computed independently of gonum: for df = 1 from
	// erfc(sqrt(x/2)) = 1e-6, for even df from the closed form
	// P[χ² > x] = e^{−x/2} Σ_{k<df/2} (x/2)^k / k!, solved by bisection.
	for _, tc := range []struct {
		df   int
		want float64
	}{{1, 23.9281269}, {10, 46.8630468}, {100, 182.1267771}} {
		got := ChiSquareCritical(tc.df)
		if opendp := float64(tc.df) + 6*math.Sqrt(2*float64(tc.df)); got < opendp {
			t.Errorf("ChiSquareCritical(%d) = %g below OpenDP's %g", tc.df, got, opendp)
		}
		if tail := (distuv.ChiSquared{K: float64(tc.df)}).Survival(got); tail > 1.0001e-6 {
			t.Errorf("tail beyond ChiSquareCritical(%d) = %g, want ≤ 1e-6", tc.df, tail)
		}
		want := math.Max(tc.want, float64(tc.df)+6*math.Sqrt(2*float64(tc.df)))
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("ChiSquareCritical(%d) = %.7g, want max(exact quantile %.7g, OpenDP's value) = %.7g", tc.df, got, tc.want, want)
		}
	}
}
