package dphypo

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestForecastRule looks requests up in the measured table (docs/EXPERIMENTS.md), at and
// on either side of its boundaries in ε, in runs per grid point and in C/c.
func TestForecastRule(t *testing.T) {
	const r125, r15, r267 = 1.118 / 0.8944, 1.2247 / 0.8165, 2 / 0.75
	for _, c := range []struct {
		name               string
		ratio, eps, runs   float64
		n                  int
		wantRatio, wantEps float64
		wantRuns           float64
		wantBelow          bool
		wantGP             float64
		wantExpect         int
		wantWords          string
	}{
		{"modeler defaults: ε=2 is below every measurement", 1.1 / 0.9, 2, 10, 4, r125, 10, 100, true, -0.0045, 0, "the GP rule is not expected to beat uniform search"},
		{"below every E[T]/N: the smallest column", 1.1 / 0.9, 10, 1, 320, r125, 10, 10, true, -0.0067, 0, "not expected"},
		{"the paper's bounds at ε=10, E[T]=100: uniform ahead", r267, 10, 100, 320, r267, 10, 100, false, -0.0169, -1, "uniform search is expected to beat the GP rule"},
		{"just below ε=12 reads ε=10", r267, 11.999, 100, 320, r267, 10, 100, false, -0.0169, -1, "uniform search is expected"},
		{"ε=12 reads ε=12", r267, 12, 100, 320, r267, 12, 100, false, -0.0070, 0, "not expected"},
		{"one more grid point: fewer runs per point", r267, 12, 100, 321, r267, 12, 100.0 / 3, false, -0.0085, 0, "not expected"},
		{"a smaller grid: more runs per point", r267, 10, 10, 32, r267, 10, 100, false, -0.0169, -1, "uniform search is expected"},
		{"C/c=1.3 is nearest 1.25", 1.3, 15, 33.4, 320, r125, 15, 100.0 / 3, false, 0.0030, 0, "not expected"},
		{"C/c=1.4 is nearest 1.5", 1.4, 15, 33.4, 320, r15, 15, 100.0 / 3, false, 0.0063, 0, "not expected"},
		{"ε=15 has no column for E[T]=10: the row below is read", r267, 15, 10, 320, r267, 12, 10, false, 0.0001, 0, "not expected"},
		{"E[T]/N below every column at ε=15 reads as E[T]=10 there, not the smallest ε", r267, 15, 5, 320, r267, 12, 10, true, 0.0001, 0, "not expected"},
	} {
		f := ForecastRule(c.ratio, c.eps, c.runs, c.n)
		if f.Column < 0 {
			t.Errorf("%s: no row read", c.name)
			continue
		}
		k := f.Column
		if f.At.Ratio != c.wantRatio || f.At.Epsilon != c.wantEps || MeasuredRuns[k] != c.wantRuns || f.Below != c.wantBelow ||
			f.At.GP[k] != c.wantGP || f.Expect() != c.wantExpect {
			t.Errorf("%s: read C/c=%g ε=%g E[T]=%g below=%v GP %g (%d), want C/c=%g ε=%g E[T]=%g below=%v GP %g (%d)", c.name,
				f.At.Ratio, f.At.Epsilon, MeasuredRuns[k], f.Below, f.At.GP[k], f.Expect(),
				c.wantRatio, c.wantEps, c.wantRuns, c.wantBelow, c.wantGP, c.wantExpect)
		}
		s := f.String()
		if n := utf8.RuneCountInString(s); n > 300 || strings.Contains(s, "\n") || !strings.Contains(s, c.wantWords) {
			t.Errorf("%s: %q (%d characters); want one line of at most 300 saying %q", c.name, s, n, c.wantWords)
		}
	}
}

// TestMeasuredNeverFavoursGP pins what the table says: the simulated GP rule was never
// ahead of uniform search by more than two standard errors, while an oracle sampling the
// true ranking within the same bounds gained at nearly every measured point.
func TestMeasuredNeverFavoursGP(t *testing.T) {
	for _, m := range Measured {
		for k := range MeasuredRuns {
			if m.GP[k]-m.TwoSE[k] > 0 || m.Oracle[k] < 0 {
				t.Errorf("C/c=%.4g ε=%g E[T]=%.4g: GP − uniform %+g ± %g, oracle %+g; want the GP rule not ahead, the oracle not behind",
					m.Ratio, m.Epsilon, MeasuredRuns[k], m.GP[k], m.TwoSE[k], m.Oracle[k])
			}
		}
	}
}
