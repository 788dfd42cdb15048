package modeler

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privbo/privbo/pkg/study"
)

// fixedCurator is a curator over a known projection z (n × dim) and answers f, with
// Laplace output privacy declared on [lo, hi] (nothing is noised: the test compares two
// studies' choices, which must be mirror images).
type fixedCurator struct {
	z      []float64
	n, dim int
	f      func(i int) float64
	lo, hi float64
}

// DatasetInfo states the Laplace noise of [lo, hi] at ε = 1 as a curator does; an empty
// range states none (the tests that use one declare exact answers over it).
func (c fixedCurator) DatasetInfo(context.Context) (*DatasetInfo, error) {
	op := study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: c.lo, Upper: c.hi}
	if c.lo < c.hi {
		op = mustStated(op)
	}
	return &DatasetInfo{Name: "fixed", Rows: c.n, Dimension: c.dim, MaxQueryIndices: 100, OutputPrivacy: op}, nil
}

func (c fixedCurator) ReleaseProjection(_ context.Context, req ProjectionRequest) (*Projection, error) {
	return &Projection{ReleaseID: "fixed", Rows: c.n, Cols: c.dim, Z: c.z}, nil
}

func (c fixedCurator) Quote(_ context.Context, req QuoteRequest) (*Quote, error) {
	return fakeQuote(req, c.dim), nil
}

func (c fixedCurator) Query(_ context.Context, rows []int) ([]Answer, study.Budget, error) {
	out := make([]Answer, len(rows))
	for k, i := range rows {
		out[k] = Answer{Index: i, Value: c.f(i)}
	}
	return out, study.Budget{}, nil
}

// TestMinimizeIsMaximizeOfNegation checks --direction minimize end to end through the
// study session: minimising f on [lo, hi] queries exactly the rows that maximising −f on
// [−hi, −lo] queries, in order and with batches, and reports f's own values, its smallest
// value as the best and the row of smallest posterior mean as the recommendation.
func TestMinimizeIsMaximizeOfNegation(t *testing.T) {
	const n, dim = 300, 3
	rng := rand.New(rand.NewPCG(5, 6))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = rng.NormFloat64()
	}
	f := func(i int) float64 { // smooth in z, with its minimum near the origin
		x := z[i*dim : (i+1)*dim]
		return 50 + 10*(x[0]*x[0]+x[1]*x[1]) + 3*x[2]
	}
	neg := func(i int) float64 { return -f(i) }
	for _, batch := range []int{1, 4} {
		cfg := Config{R: dim, Iterations: 25, Batch: batch, InitialIndex: 7, FitEvery: 5}
		minCfg := cfg
		minCfg.Direction = study.Minimize
		got, err := Run(context.Background(), fixedCurator{z, n, dim, f, 0, 200}, minCfg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Run(context.Background(), fixedCurator{z, n, dim, neg, -200, 0}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Queried, want.Queried) {
			t.Fatalf("batch %d: minimise f queried %v, maximise −f %v", batch, got.Queried, want.Queried)
		}
		for k, i := range got.Queried {
			if got.Values[k] != f(i) {
				t.Fatalf("batch %d: value %d is %g, want f(%d) = %g", batch, k, got.Values[k], i, f(i))
			}
		}
		if got.Direction != "minimize" || got.BestIndex != want.BestIndex || got.BestValue != -want.BestValue {
			t.Errorf("batch %d: best %s row %d value %g; maximising −f gave row %d value %g",
				batch, got.Direction, got.BestIndex, got.BestValue, want.BestIndex, want.BestValue)
		}
		minV := math.Inf(1)
		for _, v := range got.Values {
			minV = min(minV, v)
		}
		if got.BestValue != minV {
			t.Errorf("batch %d: best value %g is not the smallest answer %g", batch, got.BestValue, minV)
		}
		if got.Recommended != want.Recommended || math.Abs(got.RecommendedMean+want.RecommendedMean) > 1e-9*math.Abs(want.RecommendedMean) {
			t.Errorf("batch %d: recommended row %d mean %g; maximising −f recommended row %d mean %g",
				batch, got.Recommended, got.RecommendedMean, want.Recommended, want.RecommendedMean)
		}
		if got.Refits == 0 {
			t.Errorf("batch %d: no refit ran", batch)
		}
	}
}

// TestDirectionIsAStoredSetting checks that the direction round-trips through the
// stored settings and that an unknown one is refused before anything is asked.
func TestDirectionIsAStoredSetting(t *testing.T) {
	cfg := Config{R: 2, Iterations: 5, Direction: study.Minimize}
	set, err := cfg.Settings()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ConfigFromSettings(set)
	if err != nil || back.Direction != study.Minimize {
		t.Fatalf("ConfigFromSettings: direction %q, %v; want minimize", back.Direction, err)
	}
	cfg.Direction = "sideways"
	if _, err := cfg.Settings(); err == nil {
		t.Error("direction sideways accepted")
	}
}

// fakeQuote is a test curator's quote of req over dim columns: what req names, the
// default study (1, 1e-5) where it names nothing, and nothing charged.
func fakeQuote(req QuoteRequest, dim int) *Quote {
	q := &Quote{R: dim, Epsilon: req.Epsilon, Delta: req.Delta, Label: req.Label, Fits: true}
	if q.Epsilon == 0 {
		q.Epsilon, q.DefaultEpsilon = 1, true
	}
	if q.Delta == 0 {
		q.Delta, q.DefaultDelta = 1e-5, true
	}
	return q
}
