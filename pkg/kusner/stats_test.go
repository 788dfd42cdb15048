package kusner

import (
	"math"
	"testing"
)

// Chi-square helpers (the same construction as pkg/dp's stats_test.go).
// False-failure rate: a chi-square test rejects at the larger of OpenDP's
// critical value df + 6·sqrt(2·df) and the exact 1 − 1e-6 quantile, so it
// fails spuriously with probability ≤ 1e-6 for a random seed; the tests use
// fixed seeds (dptest.Source), so they are reproducible.

func chiSquareCritical(df int) float64 {
	k := float64(df)
	return math.Max(k+6*math.Sqrt(2*k), chiSquareQuantile(k, 1e-6))
}

// chiSquareQuantile returns x with P[χ²_df > x] = tail, by bisection.
func chiSquareQuantile(df, tail float64) float64 {
	lo, hi := 0.0, df+20*math.Sqrt(2*df)+100
	for range 200 {
		mid := (lo + hi) / 2
		if chiSquareSurvival(df, mid) > tail {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// chiSquareSurvival returns P[χ²_df > x] = Q(df/2, x/2), the regularised
// upper incomplete gamma function (series for x < a+1, Lentz continued
// fraction otherwise; Numerical Recipes §6.2).
func chiSquareSurvival(df, x float64) float64 {
	a, x := df/2, x/2
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	pre := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1.0; n < 1e5; n++ {
			term *= x / (a + n)
			sum += term
			if term < sum*1e-16 {
				break
			}
		}
		return 1 - pre*sum
	}
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1.0; i < 1e5; i++ {
		an := -i * (i - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return pre * h
}

func TestChiSquareSurvival(t *testing.T) {
	// Reference values: scipy.stats.chi2.isf (standard tables).
	tests := []struct{ df, x, want float64 }{
		{1, 3.841458820694124, 0.05},
		{4, 9.487729036781154, 0.05},
		{10, 18.307038053275146, 0.05},
		{20, 37.56623478662507, 0.01},
	}
	for _, tc := range tests {
		if got := chiSquareSurvival(tc.df, tc.x); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("chiSquareSurvival(%g, %g) = %.12g, want %g", tc.df, tc.x, got, tc.want)
		}
	}
}

// chiSquareCheck runs Pearson's goodness-of-fit test of counts against
// probabilities p (summing to 1, every expected count ≥ 5).
func chiSquareCheck(t *testing.T, name string, counts []int, p []float64) {
	t.Helper()
	n := 0
	for _, c := range counts {
		n += c
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
	if crit := chiSquareCritical(df); stat > crit {
		t.Errorf("%s: chi-square = %.2f with %d df, want ≤ %.2f (counts %v, probabilities %v)", name, stat, df, crit, counts, p)
	}
}
