package worth

import (
	"math"
	"strings"
	"testing"
)

// The example: Laplace answers at ε_out = 1 on a range of width 50 have noise sd
// √2·50 = 70.71, 1.414× the width; ε_out = 1·1.414/0.7071 = 2 brings the ratio to
// BetterRatio, where the recommended row fell below the median in a fifth of runs.
func TestStudyLaplaceDefault(t *testing.T) {
	sd := math.Sqrt2 * 50 * (1 + 1e-6) // the sampler rounds the scale up a little
	f := Study(sd, 0, 50, 1)
	if f.Class != NearRandom || math.Abs(f.Ratio-math.Sqrt2) > 1e-5 || f.SuggestedEpsilon != 2 {
		t.Fatalf("forecast %+v, want near-random at ratio √2, suggesting ε_out 2", f)
	}
	want := "answer noise sd 70.71 is 1.414× the range's width: expect a recommendation little better than a random row; ε_out = 2 would make it 0.71×"
	if got := f.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// The ratio is the mechanism's, whatever the width.
	if g := Study(sd*8, 0, 400, 1); g.Ratio != f.Ratio || g.SuggestedEpsilon != f.SuggestedEpsilon {
		t.Fatalf("width 400: %+v, width 50: %+v", g, f)
	}
}

func TestStudyClasses(t *testing.T) {
	for _, tc := range []struct {
		eps   float64
		class Class
	}{{0.5, NearRandom}, {1.414, NearRandom}, {1.5, BetterThanMost}, {5, BetterThanMost}, {5.66, Good}, {10, Good}} {
		f := Study(math.Sqrt2*100/tc.eps, 100, 200, tc.eps)
		if f.Class != tc.class {
			t.Errorf("ε_out %g (ratio %.4g): class %d, want %d", tc.eps, f.Ratio, f.Class, tc.class)
		}
		if s := f.String(); len(s) > 300 || strings.Contains(s, "000000") {
			t.Errorf("ε_out %g: %d characters or float noise: %q", tc.eps, len(s), s)
		}
		// A suggestion brings the ratio to BetterRatio, or from there to GoodRatio.
		want := BetterRatio
		if f.Ratio <= BetterRatio {
			want = GoodRatio
		}
		if g := Study(math.Sqrt2*100/f.SuggestedEpsilon, 100, 200, f.SuggestedEpsilon); tc.class != Good && (f.SuggestedEpsilon == 0 || g.Ratio > want) {
			t.Errorf("ε_out %g: the suggested ε_out %g gives ratio %.4g, want at most %.4g", tc.eps, f.SuggestedEpsilon, g.Ratio, want)
		}
	}
	// Noise 8× the width at ε_out = 1 would need ε_out = 12: none is suggested.
	if f := Study(800, 0, 100, 1); f.SuggestedEpsilon != 0 || !strings.Contains(f.String(), "no ε_out ≤ 10") {
		t.Fatalf("sd 3× the width at ε_out 1: %+v %q", f, f.String())
	}
	if f := Study(0, 0, 1, 0); f.Class != Exact {
		t.Fatalf("exact answers: %+v", f)
	}
}

// Before its range is known the forecast states the ratio alone.
func TestRatio(t *testing.T) {
	f := Ratio(math.Sqrt2, 1)
	want := "answer noise sd is 1.414× the range's width: expect a recommendation little better than a random row; ε_out = 2 would make it 0.71×"
	if f.String() != want || f.Class != NearRandom {
		t.Fatalf("got %q (%+v), want %q", f.String(), f, want)
	}
}
