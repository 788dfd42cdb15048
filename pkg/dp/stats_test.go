package dp_test

import (
	"math"
	"sort"
	"testing"

	"github.com/privbo/privbo/pkg/dp/dptest"
)

// Statistical helpers shared by the sampler and mechanism tests.
//
// False-failure rates: every chi-square test below rejects at a critical value
// whose upper tail probability under the null is at most 1e-6
// (dptest.ChiSquareCritical), every Kolmogorov–Smirnov test at p = 1e-6 and every
// mean test at 4.41717 standard errors (two-sided normal tail 1e-5, Google's
// differential-privacy library). So each test fails spuriously with
// probability ≤ 1e-5 for a random seed. The tests use fixed seeds
// (dptest.Source), so they are also reproducible.

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
	counts, p := make([]int, len(cells)), make([]float64, len(cells))
	for i, c := range cells {
		counts[i], p[i] = c.observed, c.prob
	}
	dptest.ChiSquareCheck(t, name, counts, p)
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
// at p = 1e-6, from OpenDP's sampler tests (docs/MATHS.md §5.6).
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
