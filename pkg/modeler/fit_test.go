package modeler

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/gptest"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
)

// funcClient answers every query with f of the row, as a curator over a known function
// would.
type funcClient struct {
	Curator
	f func(i int) float64
}

func (c funcClient) Query(_ context.Context, rows []int) ([]Answer, study.Budget, error) {
	out := make([]Answer, len(rows))
	for k, i := range rows {
		out[k] = Answer{Index: i, Value: c.f(i)}
	}
	return out, study.Budget{}, nil
}

// gpDraw returns n points uniform on [0, 1] and one draw of a zero-mean GP with the
// squared-exponential kernel of lengthscale l, unit signal variance and noise variance
// noise at them (dense Cholesky, gonum mat).
func gpDraw(t *testing.T, rng *rand.Rand, n int, l, noise float64) (x, y []float64) {
	t.Helper()
	x = make([]float64, n)
	for i := range x {
		x[i] = rng.Float64()
	}
	y = gptest.DrawPrior(t, rng, n, func(i, j int) float64 {
		d := x[i] - x[j]
		return math.Exp(-d * d / (2 * l * l))
	}, noise)
	return x, y
}

// TestFitEveryRecoversLengthscale runs the modeler's loop over a function drawn from a
// GP whose lengthscale l* = 0.05 is known, on 400 points of [0, 1], whose default
// lengthscale (the median distance to the mean) is about 0.25. Fixed hyperparameters
// must stay at the default; with FitEvery = 5 the 40 answers are fitted 8 times (t = 5,
// 10, …, 40) and the lengthscale must end within a factor 2 of l*.
func TestFitEveryRecoversLengthscale(t *testing.T) {
	const n, truth = 400, 0.05
	x, y := gpDraw(t, rand.New(rand.NewPCG(3, 4)), n, truth, 1e-4)
	def := gpucb.DefaultLengthscale(x, n, 1)
	if def < 4*truth {
		t.Fatalf("default lengthscale %g is close to the truth %g; the test needs them apart", def, truth)
	}
	client := funcClient{f: func(i int) float64 { return 100 + 10*y[i] }}
	for _, tc := range []struct {
		name     string
		fitEvery int
		batch    int
		refits   int
	}{
		{"fixed", 0, 1, 0},
		{"fit every 5", 5, 1, 8},
		// Rounds end at t = 1, 4, 7, …, 40: each multiple of 5 is crossed once.
		{"fit every 5, batches of 3", 5, 3, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{R: 1, Iterations: 40, Batch: tc.batch, FitEvery: tc.fitEvery, InitialIndex: 0}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			s, err := newSession(cfg, client, x, n, 1, study.OutputPrivacy{Noise: noise.None}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.loop(context.Background(), 0, nil); err != nil {
				t.Fatal(err)
			}
			res := s.finish()
			if res.Refits != tc.refits {
				t.Errorf("%d refits, want %d", res.Refits, tc.refits)
			}
			if h := s.post.Hyper(); res.Lengthscale != h.Lengthscale || res.SignalVariance != h.SignalVariance || res.NoiseVariance != h.NoiseVariance {
				t.Errorf("result hyperparameters (%g, %g, %g), GP's %+v; want the GP's", res.Lengthscale, res.SignalVariance, res.NoiseVariance, h)
			}
			if tc.fitEvery == 0 {
				if res.Lengthscale != def || res.SignalVariance != 1 || res.NoiseVariance != 1e-3 {
					t.Errorf("fixed hyperparameters ended as (%g, %g, %g), want the default (%g, 1, 0.001)", res.Lengthscale, res.SignalVariance, res.NoiseVariance, def)
				}
				return
			}
			if res.Lengthscale < truth/2 || res.Lengthscale > 2*truth {
				t.Errorf("fitted lengthscale %g, want within a factor 2 of the true %g (default %g)", res.Lengthscale, truth, def)
			}
		})
	}
}

// TestFitEveryRefused checks that a negative FitEvery is refused before anything is
// asked of the curator, with the reason.
func TestFitEveryRefused(t *testing.T) {
	cfg := Config{R: 5, Epsilon: 1, Delta: 1e-4, Iterations: 10, FitEvery: -2}
	want := "--fit-every -2: must be ≥ 0" // the flag, as the command line names it
	if _, err := Run(context.Background(), nil, cfg); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run(fit-every −2): err = %v, want %q", err, want)
	}
	store, err := study.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := RunStudy(context.Background(), nil, store, "neg", study.Connection{}, cfg); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("RunStudy(fit-every −2): err = %v, want %q", err, want)
	}
	if _, err := store.Get(context.Background(), "neg"); err == nil {
		t.Error("RunStudy(fit-every −2) stored the study")
	}
}
