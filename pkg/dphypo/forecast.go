package dphypo

import (
	"fmt"
	"math"
)

// Whether the GP rule can be expected to beat uniform search, said before a search is
// paid for, from measured comparisons (docs/EXPERIMENTS.md, "DP-HyPO under the paper's
// protocol"): on the digits grid of MeasuredGrid points, the simulated GP rule against
// uniform search at the same total (ε, δ = 1e-5), each search's DP-SGD noise calibrated
// by the job, reads = mean accuracy + N(0, 0.1²) as in Wang et al. 2023, §4.2.1; with,
// for scale, the exact gain of an oracle that samples the true ranking as far as the
// density bounds allow.
//
// A request is read in the rows of the measured C/c nearest its own (in log C/c, which
// its price grows with), at the largest measured ε not above its own and the largest
// measured E[T]/N not above its own; a request below every measured ε (or E[T]/N) is read
// at the smallest, and says so. Grids and landscapes other than the digits' are
// extrapolation.

// MeasuredGrid is the number of grid points of the measurements (16 learning rates × 20
// clipping norms, the paper's Setting E.1).
const MeasuredGrid = 320

// MeasuredRuns are the E[T] of the columns of Measured.
var MeasuredRuns = [3]float64{10, 100.0 / 3, 100}

// Measurement is one row at ratio C/c and total ε: for each of MeasuredRuns, the GP
// rule's released accuracy minus uniform search's (200 repetitions each) with two
// standard errors, and the oracle's exact gain (NaN: not measured).
type Measurement struct {
	Ratio, Epsilon    float64
	GP, TwoSE, Oracle [3]float64
}

var nan = math.NaN()

// Measured are the rows (PRIVBO_DIGITS_PROTOCOL=paper; the oracle with
// PRIVBO_DIGITS_EXACT=1).
var Measured = []Measurement{
	{1.118 / 0.8944, 10, [3]float64{-0.0067, 0.0004, -0.0045}, [3]float64{0.0088, 0.0084, 0.0076}, [3]float64{0.0022, 0.0019, 0.0002}},
	{1.118 / 0.8944, 12, [3]float64{0.0031, 0.0024, -0.0016}, [3]float64{0.0086, 0.0081, 0.0076}, [3]float64{0.0022, 0.0020, 0.0014}},
	{1.118 / 0.8944, 15, [3]float64{nan, 0.0030, -0.0005}, [3]float64{nan, 0.0081, 0.0076}, [3]float64{nan, 0.0018, 0.0019}},
	{1.2247 / 0.8165, 10, [3]float64{-0.0102, -0.0028, -0.0051}, [3]float64{0.0091, 0.0081, 0.0075}, [3]float64{0.0036, 0.0025, 0.0009}},
	{1.2247 / 0.8165, 12, [3]float64{0.0049, -0.0001, -0.0056}, [3]float64{0.0087, 0.0080, 0.0077}, [3]float64{0.0045, 0.0035, 0.0028}},
	{1.2247 / 0.8165, 15, [3]float64{nan, 0.0063, 0.0024}, [3]float64{nan, 0.0079, 0.0074}, [3]float64{nan, 0.0029, 0.0034}},
	{2 / 0.75, 10, [3]float64{-0.0100, -0.0088, -0.0169}, [3]float64{0.0089, 0.0082, 0.0081}, [3]float64{0.0090, 0.0075, 0.0042}},
	{2 / 0.75, 12, [3]float64{0.0001, -0.0085, -0.0070}, [3]float64{0.0091, 0.0085, 0.0073}, [3]float64{0.0116, 0.0104, 0.0076}},
	{2 / 0.75, 15, [3]float64{nan, 0.0053, 0.0007}, [3]float64{nan, 0.0080, 0.0077}, [3]float64{nan, 0.0109, 0.0107}},
}

// Forecast is what the measurements say of one request.
type Forecast struct {
	Ratio, Epsilon, Runs float64
	N                    int
	// At is the row read; Column the E[T] column of MeasuredRuns; Below whether the
	// request lies below every measurement (read at the smallest).
	At     Measurement
	Column int
	Below  bool
}

// ForecastRule returns the forecast for a GP-rule search with density bounds of ratio
// C/c, total ε eps and E[T] runs on a grid of n points.
func ForecastRule(ratio, eps, runs float64, n int) Forecast {
	f := Forecast{Ratio: ratio, Epsilon: eps, Runs: runs, N: n, Column: -1}
	near := math.Inf(1)
	for _, m := range Measured {
		near = min(near, math.Abs(math.Log(m.Ratio/ratio)))
	}
	perPoint := runs / float64(n) * MeasuredGrid // the request's E[T] on the measured grid
	if perPoint < MeasuredRuns[0] {
		// Below every column: read the smallest, at the request's ε as for any other.
		perPoint, f.Below = MeasuredRuns[0], true
	}
	var low *Measurement
	for i := range Measured {
		m := &Measured[i]
		if math.Abs(math.Log(m.Ratio/ratio)) > near+1e-9 {
			continue
		}
		if low == nil || m.Epsilon < low.Epsilon {
			low = m
		}
		if m.Epsilon > eps || (f.Column >= 0 && m.Epsilon < f.At.Epsilon) {
			continue
		}
		if k := column(m, perPoint); k >= 0 {
			f.At, f.Column = *m, k
		}
	}
	if f.Column < 0 && low != nil {
		f.At, f.Below, f.Column = *low, true, column(low, perPoint)
		for k := 0; f.Column < 0 && k < len(MeasuredRuns); k++ {
			if !math.IsNaN(low.GP[k]) {
				f.Column = k
			}
		}
	}
	return f
}

// column is the largest measured column of m at most runs, or −1.
func column(m *Measurement, runs float64) int {
	k := -1
	for j, r := range MeasuredRuns {
		if r <= runs*(1+1e-9) && !math.IsNaN(m.GP[j]) {
			k = j
		}
	}
	return k
}

// Expect says what the row read expects: +1 the GP rule ahead, −1 uniform search
// ahead, 0 neither, each by more than two standard errors.
func (f Forecast) Expect() int {
	if f.Column < 0 {
		return 0
	}
	g, se := f.At.GP[f.Column], f.At.TwoSE[f.Column]
	switch {
	case g-se > 0:
		return 1
	case g+se < 0:
		return -1
	}
	return 0
}

// String is the forecast in one line of at most 300 characters.
func (f Forecast) String() string {
	if f.Column < 0 {
		return "forecast: no measurement to compare the GP rule with uniform search"
	}
	k := f.Column
	verdict := [...]string{"uniform search is expected to beat the GP rule", "the GP rule is not expected to beat uniform search",
		"the GP rule is expected to beat uniform search"}[f.Expect()+1]
	where := ""
	if f.Below {
		where = " (below the measurements: read at the smallest)"
	}
	return fmt.Sprintf("forecast: %s at ε=%.4g, E[T]=%.4g on %d points%s: at C/c=%.3g, ε=%.4g, E[T]=%.4g on %d digits points GP − uniform was %+.4f ± %.4f accuracy (an oracle: %+.4f)",
		verdict, f.Epsilon, f.Runs, f.N, where, f.At.Ratio, f.At.Epsilon, MeasuredRuns[k], MeasuredGrid, f.At.GP[k], f.At.TwoSE[k], f.At.Oracle[k])
}
