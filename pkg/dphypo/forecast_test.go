package dphypo

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestForecastRule looks requests up in the measured table (docs/EXPERIMENTS.md), at and
// on either side of its boundaries in ε, in runs per grid point and in C/c.
func TestForecastRule(t *testing.T) {
	for _, c := range []struct {
		name                  string
		ratio, eps, runs      float64
		n                     int
		wantRatio, wantEps    float64
		wantRuns              float64
		wantBelow             bool
		wantBroad, wantNarrow float64
	}{
		{"modeler defaults: ε=2 is below every measurement", 1.1 / 0.9, 2, 10, 4, 1.1 / 0.9, 8, 200, true, -0.0030, -0.0019},
		{"below every E[T]/N: the smallest column", 1.1 / 0.9, 10, 1, 320, 1.1 / 0.9, 8, 4, true, -0.0022, 0.0006},
		{"the paper's bounds at ε=15, E[T]=100 on the digits grid", 2 / 0.75, 15, 100, 320, 2 / 0.75, 15, 100, false, -0.0030, 0.0049},
		{"just below ε=10 reads ε=8", 2 / 0.75, 9.999, 10, 320, 2 / 0.75, 8, 10, false, -0.0155, 0.0011},
		{"ε=10 reads ε=10", 2 / 0.75, 10, 10, 320, 2 / 0.75, 10, 10, false, -0.0086, 0.0019},
		{"one more grid point: fewer runs per point", 2 / 0.75, 15, 100, 321, 2 / 0.75, 15, 100.0 / 3, false, -0.0042, 0.0033},
		{"a smaller grid: more runs per point", 2 / 0.75, 15, 100, 32, 2 / 0.75, 15, 1000, false, -0.0037, 0.0056},
		{"C/c=1.3 is nearest the default 1.22", 1.3, 12, 33.4, 320, 1.1 / 0.9, 12, 100.0 / 3, false, -0.0010, -0.0004},
		{"C/c=1.4 is nearest 1.5", 1.4, 12, 33.4, 320, 1.2247 / 0.8165, 12, 100.0 / 3, false, -0.0020, 0.0001},
		{"ε=8 at the paper's bounds has no column for E[T]=100: fewer runs read", 2 / 0.75, 8.5, 100, 320, 2 / 0.75, 8, 10, false, -0.0155, 0.0011},
	} {
		f := ForecastRule(c.ratio, c.eps, c.runs, c.n)
		if f.Column < 0 {
			t.Errorf("%s: no row read", c.name)
			continue
		}
		k := f.Column
		if f.At.Ratio != c.wantRatio || f.At.Epsilon != c.wantEps || MeasuredRuns[k] != c.wantRuns || f.Below != c.wantBelow ||
			f.At.Broad[k] != c.wantBroad || f.At.Narrow[k] != c.wantNarrow {
			t.Errorf("%s: read C/c=%g ε=%g E[T]=%g below=%v (%g, %g), want C/c=%g ε=%g E[T]=%g below=%v (%g, %g)", c.name,
				f.At.Ratio, f.At.Epsilon, MeasuredRuns[k], f.Below, f.At.Broad[k], f.At.Narrow[k],
				c.wantRatio, c.wantEps, c.wantRuns, c.wantBelow, c.wantBroad, c.wantNarrow)
		}
		s := f.String()
		if n := utf8.RuneCountInString(s); n > 300 || strings.Contains(s, "\n") || f.GPMayWin() ||
			!strings.Contains(s, "uniform search is expected to do at least as well") {
			t.Errorf("%s: %q (%d characters); want one line of at most 300 saying uniform is expected to do as well", c.name, s, n)
		}
	}
}

// TestMeasuredNeverFavoursGP pins what the table says: on the digits no rule within any
// measured bounds gained over uniform search at equal ε, and the one-good-region landscape
// gained at most 0.01.
func TestMeasuredNeverFavoursGP(t *testing.T) {
	for _, m := range Measured {
		for k := range MeasuredRuns {
			if m.Broad[k] >= 0 || m.Narrow[k] > 0.01 {
				t.Errorf("C/c=%.4g ε=%g E[T]=%.4g: digits %+g, narrow %+g; want digits < 0, narrow ≤ 0.01", m.Ratio, m.Epsilon, MeasuredRuns[k], m.Broad[k], m.Narrow[k])
			}
		}
	}
}
