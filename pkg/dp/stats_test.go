package dp_test

import (
	"math"
	"sort"
	"testing"
)

// Statistical helpers shared by the sampler and mechanism tests.
//
// False-failure rates: every chi-square test below rejects at a critical value
// whose upper tail probability under the null is at most 1e-6 (see
// chiSquareCritical), every Kolmogorov–Smirnov test at p = 1e-6 and every
// mean test at 4.41717 standard errors (two-sided normal tail 1e-5, Google's
// differential-privacy library). So each test fails spuriously with
// probability ≤ 1e-5 for a random seed. The tests use fixed seeds
// (dptest.Source), so they are also reproducible.

// chiSquareCritical returns the critical value for a chi-square statistic with
// df degrees of freedom: OpenDP's df + 6·sqrt(2·df), raised to the exact
// 1 − 1e-6 quantile where that is larger (for df ≲ 60 OpenDP's value has a
// tail probability above 1e-6, e.g. 2e-3 at df = 1).
func chiSquareCritical(df int) float64 {
	k := float64(df)
	opendp := k + 6*math.Sqrt(2*k)
	return math.Max(opendp, chiSquareQuantile(k, 1e-6))
}

// chiSquareQuantile returns x with P[χ²_df > x] = tail, by bisection.
func chiSquareQuantile(df, tail float64) float64 {
	lo, hi := 0.0, df+20*math.Sqrt(2*df)+100
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if chiSquareSurvival(df, mid) > tail {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// chiSquareSurvival returns P[χ²_df > x] = Q(df/2, x/2), the regularized
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
	// Reference quantiles from standard chi-square tables (e.g. scipy.stats.chi2.isf).
	tests := []struct{ df, x, want float64 }{
		{1, 3.841458820694124, 0.05},
		{4, 9.487729036781154, 0.05},
		{10, 18.307038053275146, 0.05},
		{10, 2.558212160993165, 0.99},
		{20, 37.56623478662507, 0.01},
	}
	for _, tc := range tests {
		if got := chiSquareSurvival(tc.df, tc.x); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("chiSquareSurvival(%g, %g) = %.12g, want %g", tc.df, tc.x, got, tc.want)
		}
	}
	for _, df := range []int{1, 2, 5, 20, 100, 1000} {
		c := chiSquareCritical(df)
		if p := chiSquareSurvival(float64(df), c); p > 1.0001e-6 {
			t.Errorf("tail at chiSquareCritical(%d) = %g: %g, want ≤ 1e-6", df, c, p)
		}
	}
}

// cell is one bin of a chi-square test: an observed count and its expected
// probability.
type cell struct {
	observed int
	prob     float64
}

// chiSquareCheck runs Pearson's chi-square goodness-of-fit test on cells
// (probabilities summing to 1, each n·prob ≥ 5) and reports a failure.
func chiSquareCheck(t *testing.T, name string, cells []cell) {
	t.Helper()
	n := 0
	psum := 0.0
	for _, c := range cells {
		n += c.observed
		psum += c.prob
	}
	if math.Abs(psum-1) > 1e-9 {
		t.Fatalf("%s: cell probabilities sum to %g, want 1", name, psum)
	}
	var stat float64
	for i, c := range cells {
		e := float64(n) * c.prob
		if e < 5 {
			t.Fatalf("%s: expected count %g < 5 in cell %d", name, e, i)
		}
		d := float64(c.observed) - e
		stat += d * d / e
	}
	df := len(cells) - 1
	if crit := chiSquareCritical(df); stat > crit {
		t.Errorf("%s: chi-square = %g with %d degrees of freedom, want ≤ %g", name, stat, df, crit)
	}
}

// integerCells bins integer samples against pmf on the support [min, ∞)
// (symmetric = false, min = 0) or ℤ (symmetric = true): one cell per value
// with expected count ≥ 5 and the tails pooled into the outermost cells.
func integerCells(samples []int64, pmf func(int64) float64, symmetric bool) []cell {
	n := float64(len(samples))
	// L: largest |x| with n·pmf(x) ≥ 5 (pmfs here decrease in |x|).
	var L int64
	for n*pmf(L+1) >= 5 {
		L++
	}
	if L == 0 {
		panic("integerCells: distribution too concentrated for a chi-square test")
	}
	lo := int64(0)
	if symmetric {
		lo = -L
	}
	// Cells: (−∞, lo] (only if symmetric), lo+1..L−1 individually, [L, ∞).
	// For the non-symmetric case the first cell is {0}.
	idx := func(x int64) int {
		switch {
		case x <= lo:
			return 0
		case x >= L:
			return int(L - lo)
		}
		return int(x - lo)
	}
	cells := make([]cell, L-lo+1)
	inner := 0.0
	for x := lo + 1; x < L; x++ {
		cells[idx(x)].prob = pmf(x)
		inner += pmf(x)
	}
	if symmetric {
		cells[0].prob = (1 - inner) / 2
		cells[len(cells)-1].prob = (1 - inner) / 2
	} else {
		cells[0].prob = pmf(0)
		cells[len(cells)-1].prob = 1 - inner - pmf(0)
	}
	for _, x := range samples {
		if !symmetric && x < 0 {
			panic("negative sample for a non-negative distribution")
		}
		cells[idx(x)].observed++
	}
	return cells
}

// ksCritical5000 is the Kolmogorov–Smirnov critical value for n = 5000 samples
// at p = 1e-6, from OpenDP's sampler tests (DP_REFERENCE §1).
const ksCritical5000 = 0.038051617888080105

// ksStatistic returns sup_x |F_n(x) − F(x)| for the samples (sorted in place).
func ksStatistic(samples []float64, cdf func(float64) float64) float64 {
	sort.Float64s(samples)
	n := float64(len(samples))
	var d float64
	for i, x := range samples {
		f := cdf(x)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

// meanCheck compares the sample mean with want using Google's tolerance
// 4.41717·sqrt(variance/n) (two-sided false-failure rate 1e-5).
func meanCheck(t *testing.T, name string, samples []float64, want, variance float64) {
	t.Helper()
	var sum float64
	for _, x := range samples {
		sum += x
	}
	n := float64(len(samples))
	mean := sum / n
	if tol := 4.41717 * math.Sqrt(variance/n); math.Abs(mean-want) > tol {
		t.Errorf("%s: sample mean = %g, want %g ± %g", name, mean, want, tol)
	}
}
