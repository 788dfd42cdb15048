package dptest

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// FalseFailureRate is the chance that one statistical check of this package fails on a
// correct sampler.
const FalseFailureRate = 1e-6

// ChiSquareCritical returns the critical value of a chi-square goodness-of-fit statistic
// with df degrees of freedom: OpenDP's df + 6·sqrt(2·df), raised to the exact
// 1 − FalseFailureRate quantile where that is larger (for small df OpenDP's value alone
// has a tail probability well above 1e-6: about 2e-3 at df = 1).
func ChiSquareCritical(df int) float64 {
	k := float64(df)
	return math.Max(k+6*math.Sqrt(2*k), distuv.ChiSquared{K: k}.Quantile(1-FalseFailureRate))
}

// ChiSquareCheck runs Pearson's goodness-of-fit test of counts against probabilities p
// (summing to 1, every expected count ≥ 5) and fails t when the statistic exceeds
// ChiSquareCritical.
func ChiSquareCheck(t testing.TB, name string, counts []int, p []float64) {
	t.Helper()
	if len(counts) != len(p) || len(counts) < 2 {
		t.Fatalf("%s: %d counts for %d probabilities; need at least two cells", name, len(counts), len(p))
	}
	n, psum := 0, 0.0
	for i, c := range counts {
		n += c
		psum += p[i]
	}
	if math.Abs(psum-1) > 1e-9 {
		t.Fatalf("%s: cell probabilities sum to %g, want 1", name, psum)
	}
	var stat float64
	for i, c := range counts {
		e := float64(n) * p[i]
		if e < 5 {
			t.Fatalf("%s: expected count %g of cell %d is below 5: resize the test", name, e, i)
		}
		d := float64(c) - e
		stat += d * d / e
	}
	df := len(counts) - 1
	if crit := ChiSquareCritical(df); stat > crit {
		t.Errorf("%s: chi-square = %.2f with %d df, want ≤ %.2f (counts %v, probabilities %v)", name, stat, df, crit, counts, p)
	}
}
