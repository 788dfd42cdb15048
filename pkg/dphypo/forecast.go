package dphypo

import (
	"fmt"
	"math"
)

// Whether the GP rule can be expected to beat uniform search, said before a search is
// paid for, from measured landscapes (docs/EXPERIMENTS.md, "DP-HyPO under the paper's
// protocol"). Each figure is what sampling the true ranking as far as the density bounds
// allow gains over uniform search at the same total (ε, δ = 1e-5), each search's DP-SGD noise calibrated
// by the job: the expected released accuracy of sampling from the projection of the true
// ranking onto S_{C,c} (an oracle that knows the landscape) minus uniform search's,
// computed exactly, with reads = mean accuracy + N(0, 0.1²) as in Wang et al. 2023,
// §4.2.1 — on the digits grid of MeasuredGrid points (a fifth within 0.05 of the best)
// and on a synthetic landscape of the same grid with one small good region.
//
// A request is read in the rows of the measured C/c nearest its own (in log C/c, which
// its price grows with), at the largest measured ε not above its own and the largest
// measured E[T]/N not above its own; a request below every measured ε (or E[T]/N) is read
// at the smallest, and says so. Grids and landscapes other than these are extrapolation.

// MeasuredGrid is the number of grid points of the measurements (16 learning rates × 20
// clipping norms, the paper's Setting E.1).
const MeasuredGrid = 320

// MeasuredRuns are the E[T] of the columns of Measured.
var MeasuredRuns = [6]float64{4, 10, 100.0 / 3, 100, 200, 1000}

// Measurement is one row: the oracle's gain over uniform search at ratio C/c and total ε,
// for each of MeasuredRuns (NaN: not measured), on the digits (Broad) and on the
// landscape with one small good region (Narrow).
type Measurement struct {
	Ratio, Epsilon float64
	Broad, Narrow  [6]float64
}

var nan = math.NaN()

// Measured are the rows (PRIVBO_DIGITS_PROTOCOL=paper PRIVBO_DIGITS_EXACT=1).
var Measured = []Measurement{
	{1.1 / 0.9, 8, [6]float64{-0.0022, -0.0024, -0.0020, -0.0021, -0.0030, -0.0028}, [6]float64{0.0006, -0.0013, 0.0022, 0.0019, -0.0019, -0.0028}},
	{1.1 / 0.9, 10, [6]float64{-0.0009, -0.0013, -0.0011, -0.0021, -0.0015, -0.0013}, [6]float64{-0.0000, -0.0003, 0.0004, -0.0016, 0.0000, 0.0030}},
	{1.1 / 0.9, 12, [6]float64{-0.0014, -0.0014, -0.0010, -0.0011, -0.0006, -0.0016}, [6]float64{-0.0002, -0.0004, -0.0004, 0.0012, 0.0011, -0.0015}},
	{1.1 / 0.9, 15, [6]float64{nan, nan, -0.0012, -0.0005, -0.0005, -0.0007}, [6]float64{nan, nan, -0.0002, 0.0003, 0.0002, -0.0003}},
	{1.2247 / 0.8165, 8, [6]float64{-0.0045, -0.0047, -0.0041, -0.0055, -0.0064, nan}, [6]float64{-0.0001, -0.0011, 0.0050, -0.0004, -0.0049, nan}},
	{1.2247 / 0.8165, 10, [6]float64{-0.0020, -0.0032, -0.0031, -0.0035, -0.0032, -0.0030}, [6]float64{-0.0001, 0.0007, -0.0010, -0.0014, 0.0024, 0.0052}},
	{1.2247 / 0.8165, 12, [6]float64{-0.0032, -0.0022, -0.0020, -0.0017, -0.0021, -0.0030}, [6]float64{-0.0004, -0.0002, 0.0001, 0.0025, 0.0005, -0.0016}},
	{1.2247 / 0.8165, 15, [6]float64{nan, nan, -0.0027, -0.0010, -0.0010, -0.0016}, [6]float64{nan, nan, -0.0005, 0.0006, 0.0005, 0.0011}},
	{2 / 0.75, 8, [6]float64{-0.0143, -0.0155, nan, nan, nan, nan}, [6]float64{0.0030, 0.0011, nan, nan, nan, nan}},
	{2 / 0.75, 10, [6]float64{-0.0074, -0.0086, -0.0085, -0.0098, -0.0099, nan}, [6]float64{0.0021, 0.0019, 0.0067, 0.0062, 0.0062, nan}},
	{2 / 0.75, 12, [6]float64{-0.0061, -0.0061, -0.0057, -0.0064, -0.0064, -0.0064}, [6]float64{0.0012, 0.0031, 0.0042, 0.0040, 0.0042, 0.0087}},
	{2 / 0.75, 15, [6]float64{nan, nan, -0.0042, -0.0030, -0.0032, -0.0037}, [6]float64{nan, nan, 0.0033, 0.0049, 0.0059, 0.0056}},
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
			if !math.IsNaN(low.Broad[k]) {
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
		if r <= runs*(1+1e-9) && !math.IsNaN(m.Broad[j]) {
			k = j
		}
	}
	return k
}

// GPMayWin reports whether the oracle gained over uniform search on the digits at the
// row read (it never did; the simulated GP rule was 0.002 behind on average).
func (f Forecast) GPMayWin() bool { return f.Column >= 0 && f.At.Broad[f.Column] > 0 }

// String is the forecast in one line of at most 300 characters.
func (f Forecast) String() string {
	if f.Column < 0 {
		return "forecast: no measurement to compare the GP rule with uniform search"
	}
	k := f.Column
	verdict := "uniform search is expected to do at least as well as the GP rule"
	if f.GPMayWin() {
		verdict = "the GP rule may beat uniform search"
	}
	where := ""
	if f.Below {
		where = " (below the measurements: read at the smallest)"
	}
	return fmt.Sprintf("forecast: %s at ε=%.4g, E[T]=%.4g on %d points%s: at C/c=%.3g, ε=%.4g, E[T]=%.4g on 320 the bounds' oracle gains %+.4f accuracy on the digits, %+.4f with one small good region",
		verdict, f.Epsilon, f.Runs, f.N, where, f.At.Ratio, f.At.Epsilon, MeasuredRuns[k], f.At.Broad[k], f.At.Narrow[k])
}
