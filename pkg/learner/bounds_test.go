package learner

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestCheckBounds(t *testing.T) {
	for _, tt := range []struct {
		b    []Bounds
		d    int
		want string
	}{
		{[]Bounds{{0, 1}}, 2, "1 feature bounds given for 2 features"},
		{[]Bounds{{0, 1}, {1, 1}}, 2, "bounds of feature 1 must be finite with lower < upper"},
		{[]Bounds{{2, 1}}, 1, "bounds of feature 0"},
		{[]Bounds{{math.NaN(), 1}}, 1, "bounds of feature 0"},
		{[]Bounds{{0, math.Inf(1)}}, 1, "bounds of feature 0"},
		{[]Bounds{{-math.MaxFloat64, math.MaxFloat64}}, 1, "span more than the largest float"},
	} {
		err := CheckBounds(tt.b, tt.d)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckBounds(%v, %d) = %v, want an error containing %q", tt.b, tt.d, err, tt.want)
		}
	}
	if err := CheckBounds([]Bounds{{-1, 1}, {0, 1e-300}}, 2); err != nil {
		t.Errorf("CheckBounds(valid) = %v", err)
	}
}

// TestScaleToBounds checks the map on hand-computed rows: clamping, the
// affine map onto [−1, 1], and the row clip to the public norm.
func TestBoundedRowNorm(t *testing.T) {
	for _, tt := range []struct {
		d    int
		want float64
	}{{1, 1}, {4, 1}, {16, 2}, {30, math.Sqrt(30) / 2}, {100, 5}} {
		if got := BoundedRowNorm(tt.d); got != tt.want {
			t.Errorf("BoundedRowNorm(%d) = %g, want %g", tt.d, got, tt.want)
		}
	}
}

func TestScaleToBounds(t *testing.T) {
	b := []Bounds{{0, 10}, {-5, 5}}
	d, err := NewData([]float64{
		5, 0, // centre → (0, 0)
		10, 5, // upper corner → (1, 1), norm √2 → clipped to norm 1
		-3, 2.5, // clamp 0 → −1; 2.5 → 0.5; norm √1.25 → clipped
		2.5, -7, // 0.25 → −0.5; clamp −5 → −1; norm √1.25 → clipped
		7.5, 1, // (0.5, 0.2), norm < 1: unchanged
	}, []float64{0, 1, 0, 1, 1}, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ScaleToBounds(d, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	s2, s125 := 1/math.Sqrt2, 1/math.Sqrt(1.25)
	want := []float64{0, 0, s2, s2, -s125, 0.5 * s125, -0.5 * s125, -s125, 0.5, 0.2}
	for i := range want {
		if math.Abs(got.X[i]-want[i]) > 1e-15 {
			t.Errorf("ScaleToBounds: X[%d] = %.17g, want %.17g", i, got.X[i], want[i])
		}
	}
	for i := range got.N {
		if nrm := norm(got.Row(i)); nrm > 1 {
			t.Errorf("row %d has norm %.17g > 1", i, nrm)
		}
	}
	if !slices.Equal(got.Y, d.Y) || d.X[2] != 10 {
		t.Error("ScaleToBounds changed the labels or its input")
	}
	if _, err := ScaleToBounds(d, b[:1], 1); err == nil {
		t.Error("ScaleToBounds accepted one bound for two features")
	}
	if _, err := ScaleToBounds(d, b, 0); err == nil {
		t.Error("ScaleToBounds accepted a zero row norm")
	}
}

// TestScaleToBoundsRowwise: adding any row — however extreme — leaves every
// other row's output bit-for-bit unchanged, the property DP-SGD's add/remove
// accounting needs of the preprocessing. The Standardiser fails it (the
// test can tell the two apart).
func TestScaleToBoundsRowwise(t *testing.T) {
	base := randomData(t, 200, 4, 3)
	b := []Bounds{{-3, 3}, {-3, 3}, {-2, 4}, {-10, 10}}
	plus := withRow(t, base, []float64{1e300, -1e300, math.MaxFloat64, 5}, 1)
	p, _ := ScaleToBounds(base, b, BoundedRowNorm(4))
	q, _ := ScaleToBounds(plus, b, BoundedRowNorm(4))
	if !slices.Equal(p.X, q.X[:len(p.X)]) {
		t.Error("ScaleToBounds: adding one row changed other rows")
	}
	plus = withRow(t, base, []float64{1e6, 1e6, 1e6, 1e6}, 1)
	if s, s2 := FitStandardiser(base).Apply(base), FitStandardiser(plus).Apply(plus); slices.Equal(s.X, s2.X[:len(s.X)]) {
		t.Error("Standardiser: adding one row left the other rows unchanged; this test cannot tell the two apart")
	}
}

// withRow returns a copy of d with one more row (x, y) at the end.
func withRow(t testing.TB, d Data, x []float64, y float64) Data {
	t.Helper()
	out, err := NewData(append(slices.Clone(d.X), x...), append(slices.Clone(d.Y), y), d.N+1, d.D)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// firstStepChange returns ‖Σ g_i(D') − Σ g_i(D)‖₂ at w = 0, b = 0 for the
// clipped per-example gradients of DP-SGD's first step over a full batch,
// noise-free, with each data set preprocessed by prep.
func firstStepChange(t *testing.T, d, dPlus Data, prep func(Data) Data, clip float64) float64 {
	t.Helper()
	zero := Model{W: make([]float64, d.D)}
	g, err := ClippedGradientSum(prep(d), zero, clip)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ClippedGradientSum(prep(dPlus), zero, clip)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for j := range g {
		s += (h[j] - g[j]) * (h[j] - g[j])
	}
	return math.Sqrt(s)
}

// TestOneOutlierChangesFirstStepByAtMostC is the audit's check on the
// breast-cancer training part in raw units: add one row with 1e6 in every
// feature (either label) and measure how much the noise-free, full-batch,
// clipped gradient sum of DP-SGD's first step moves. DP-SGD is accounted for
// a change of norm ≤ C (the clipping norm). With public bounds
// (ScaleToBounds) that holds; with a Standardiser fitted to the training
// rows — the old default, now only behind tuning's standardise-nonprivate
// option — the outlier shifts every other row's features and the change is
// several times C, which the accounting does not cover.
func TestOneOutlierChangesFirstStepByAtMostC(t *testing.T) {
	train, _ := breastCancerRaw(t)
	outlier := make([]float64, train.D)
	for j := range outlier {
		outlier[j] = 1e6
	}
	bounded := func(d Data) Data {
		out, err := ScaleToBounds(d, breastCancerBounds, BoundedRowNorm(d.D))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	standardised := func(d Data) Data { return FitStandardiser(d).Apply(d) }
	for _, clip := range []float64{0.5, 1, 2} {
		for _, y := range []float64{0, 1} {
			plus := withRow(t, train, outlier, y)
			if got := firstStepChange(t, train, plus, bounded, clip); got > clip*(1+1e-12) {
				t.Errorf("public bounds, C=%g, outlier label %g: first-step gradient changed by %.4g > C", clip, y, got)
			}
			got := firstStepChange(t, train, plus, standardised, clip)
			if got <= 2*clip {
				t.Errorf("standardised with the training rows' own statistics, C=%g, outlier label %g: change %.4g ≤ 2C; the test has lost its power", clip, y, got)
			}
			t.Logf("C=%g, outlier label %g: change with standardisation %.4g (%.1f·C)", clip, y, got, got/clip)
		}
	}
}
