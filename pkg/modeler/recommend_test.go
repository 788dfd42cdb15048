package modeler

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privbo/privbo/pkg/study"
)

// noiseCurator is fixedCurator with a chosen output mechanism and answers that carry
// seeded noise of sd noise (a stand-in for the curator's; the tests compare studies over
// the same answers).
type noiseCurator struct {
	fixedCurator
	mechanism string
	noise     []float64 // per row
	// stopAfter > 0 cancels the run (cancel) once that many rows have been answered:
	// the next query fails as a query cancelled by Ctrl-C does.
	stopAfter int
	answered  *int
	cancel    context.CancelFunc
}

func (c noiseCurator) DatasetInfo(ctx context.Context) (*DatasetInfo, error) {
	info, _ := c.fixedCurator.DatasetInfo(ctx)
	op := info.OutputPrivacy
	info.OutputPrivacy = mustStated(study.OutputPrivacy{Mechanism: c.mechanism, EpsilonPerIndex: op.EpsilonPerIndex, Lower: op.Lower, Upper: op.Upper})
	return info, nil
}

func (c noiseCurator) Query(ctx context.Context, rows []int) ([]Answer, study.Budget, error) {
	if c.stopAfter > 0 && *c.answered >= c.stopAfter {
		c.cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, study.Budget{}, err
	}
	out, b, err := c.fixedCurator.Query(ctx, rows)
	for k := range out {
		if c.noise != nil {
			out[k].Value += c.noise[out[k].Index]
		}
	}
	*c.answered += len(rows)
	return out, b, err
}

func testProblem(n, dim int, seed uint64) (z []float64, f func(int) float64, noise []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	z = make([]float64, n*dim)
	for k := range z {
		z[k] = rng.NormFloat64()
	}
	noise = make([]float64, n)
	for i := range noise {
		noise[i] = 40 * rng.NormFloat64()
	}
	f = func(i int) float64 {
		x := z[i*dim : (i+1)*dim]
		return 200 - 30*(x[0]*x[0]+x[1]*x[1]) + 10*x[2]
	}
	return z, f, noise
}

// TestRecommendationOnTheAnswersScale checks that the recommended row's posterior mean
// and sd are in the answers' own units: answers a·y + b (with the public range mapped
// alike) give the same study, the mean a·m + b and the sd a·s, for the GP's output
// standardisation and for the direction (minimising −y is maximising y: the same rows,
// the mean negated, the same sd).
func TestRecommendationOnTheAnswersScale(t *testing.T) {
	const n, dim = 200, 3
	z, f, noise := testProblem(n, dim, 11)
	y := func(i int) float64 { return f(i) + noise[i] }
	cfg := Config{R: dim, Iterations: 20, InitialIndex: 4}
	ref, err := Run(context.Background(), fixedCurator{z, n, dim, y, 0, 400}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ref.Queried, ref.Recommended) || !(ref.RecommendedSD > 0) {
		t.Fatalf("recommended row %d (sd %g): want a queried row and a positive sd", ref.Recommended, ref.RecommendedSD)
	}
	// Laplace at ε = 1 on [0, 400]: sd √2·b, b = 400 rounded up to package dp's lattice.
	if got := ref.AnswerNoiseSD; math.Abs(got/(math.Sqrt2*400)-1) > 1e-5 || ref.AnswersRange == nil || *ref.AnswersRange != [2]float64{0, 400} {
		t.Errorf("answer noise sd %g on %v, want √2·400 = %g on [0, 400]", got, ref.AnswersRange, math.Sqrt2*400)
	}
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }
	const a, b = 10, 1000
	scaled, err := Run(context.Background(), fixedCurator{z, n, dim, func(i int) float64 { return a*y(i) + b }, b, a*400 + b}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(scaled.Queried, ref.Queried) || scaled.Recommended != ref.Recommended ||
		!close(scaled.RecommendedMean, a*ref.RecommendedMean+b) || !close(scaled.RecommendedSD, a*ref.RecommendedSD) {
		t.Errorf("answers ×%d + %d: recommended row %d, %g ± %g; want row %d, %g ± %g", a, b,
			scaled.Recommended, scaled.RecommendedMean, scaled.RecommendedSD, ref.Recommended, a*ref.RecommendedMean+b, a*ref.RecommendedSD)
	}
	minCfg := cfg
	minCfg.Direction = study.Minimize
	mirrored, err := Run(context.Background(), fixedCurator{z, n, dim, func(i int) float64 { return -y(i) }, -400, 0}, minCfg)
	if err != nil {
		t.Fatal(err)
	}
	if mirrored.Recommended != ref.Recommended || !close(mirrored.RecommendedMean, -ref.RecommendedMean) || !close(mirrored.RecommendedSD, ref.RecommendedSD) {
		t.Errorf("minimising −y: recommended row %d, %g ± %g; want row %d, %g ± %g",
			mirrored.Recommended, mirrored.RecommendedMean, mirrored.RecommendedSD, ref.Recommended, -ref.RecommendedMean, ref.RecommendedSD)
	}
	// Exact answers: the GP nearly interpolates them (noise variance 1e-3 of the
	// standardised answers), so the sd at a queried row is a few hundredths of their sd.
	exact, err := Run(context.Background(), noiseCurator{fixedCurator: fixedCurator{z, n, dim, f, 0, 400}, mechanism: "none", answered: new(int)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sum2 float64
	for _, v := range exact.Values {
		sum, sum2 = sum+v, sum2+v*v
	}
	k := float64(len(exact.Values))
	sdY := math.Sqrt((sum2 - sum*sum/k) / (k - 1))
	if exact.AnswerNoiseSD != 0 || exact.AnswersRange != nil || !(exact.RecommendedSD < 0.05*sdY) {
		t.Errorf("exact answers: noise sd %g, range %v, recommended sd %g; want 0, none and below 0.05·%g", exact.AnswerNoiseSD, exact.AnswersRange, exact.RecommendedSD, sdY)
	}
}

// TestReplayMatchesRun checks that the result modeler report shows (Replay, from the
// store alone) is the one the run ended with: the same recommendation, to rounding.
func TestReplayMatchesRun(t *testing.T) {
	const n, dim = 150, 3
	z, f, noise := testProblem(n, dim, 12)
	store, err := study.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cur := fixedCurator{z, n, dim, func(i int) float64 { return f(i) + noise[i] }, 0, 400}
	cfg := Config{R: dim, Iterations: 18, Batch: 3, FitEvery: 5, InitialIndex: 9}
	ctx := context.Background()
	res, err := RunStudy(ctx, cur, store, "rep", study.Connection{Curator: "fixed", Identity: "a"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Get(ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := store.Observations(ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Replay(store, st, obs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Recommended != res.Recommended || math.Abs(got.RecommendedMean-res.RecommendedMean) > 1e-9*math.Abs(res.RecommendedMean) ||
		math.Abs(got.RecommendedSD-res.RecommendedSD) > 1e-9*res.RecommendedSD || got.Refits != res.Refits || got.AnswerNoiseSD != res.AnswerNoiseSD {
		t.Errorf("Replay: row %d, %g ± %g (%d refits); the run ended with row %d, %g ± %g (%d refits)",
			got.Recommended, got.RecommendedMean, got.RecommendedSD, got.Refits, res.Recommended, res.RecommendedMean, res.RecommendedSD, res.Refits)
	}
	rec := got.Recommendation()
	if rec.Index != res.Recommended || rec.SD != got.RecommendedSD || rec.AnswerNoiseSD != got.AnswerNoiseSD {
		t.Errorf("Recommendation() = %+v, want the result's figures", rec)
	}
	if _, err := Replay(store, &study.Study{Name: "new"}, nil); !errors.Is(err, ErrNoRelease) {
		t.Errorf("Replay of a study without a release: %v, want ErrNoRelease", err)
	}
}

// TestInterruptedRunKeepsWhatIsKnown: a run stopped mid-study (a cancelled query, as
// Ctrl-C leaves it) returns its error with the answers so far and the recommendation
// among them, and a result that encodes as JSON; stopped before the first answer, it
// recommends nothing (row −1) and still encodes.
func TestInterruptedRunKeepsWhatIsKnown(t *testing.T) {
	const n, dim = 120, 3
	z, f, noise := testProblem(n, dim, 13)
	for _, stopAfter := range []int{7, 0} {
		ctx, cancel := context.WithCancel(context.Background())
		cur := noiseCurator{fixedCurator: fixedCurator{z, n, dim, f, 0, 400}, mechanism: "laplace", noise: noise,
			stopAfter: stopAfter, answered: new(int), cancel: cancel}
		if stopAfter == 0 {
			cancel() // before the first query
		}
		res, err := Run(ctx, cur, Config{R: dim, Iterations: 30, InitialIndex: 1})
		cancel()
		if !errors.Is(err, context.Canceled) || res == nil {
			t.Fatalf("stopped after %d answers: %v, result %v; want the cancellation and a result", stopAfter, err, res)
		}
		if res.Iterations != stopAfter || len(res.Queried) != stopAfter {
			t.Errorf("stopped after %d answers: result holds %d (%d rows)", stopAfter, res.Iterations, len(res.Queried))
		}
		if stopAfter > 0 && (!slices.Contains(res.Queried, res.Recommended) || !(res.RecommendedSD > 0)) {
			t.Errorf("stopped after %d answers: recommended row %d ± %g, want a queried row", stopAfter, res.Recommended, res.RecommendedSD)
		}
		if stopAfter == 0 && (res.Recommended != -1 || res.BestIndex != -1 || res.RecommendedMean != 0 || res.BestValue != 0) {
			t.Errorf("stopped before any answer: recommended %d (%g), best %d (%g); want −1 (0) for both", res.Recommended, res.RecommendedMean, res.BestIndex, res.BestValue)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Errorf("stopped after %d answers: result does not encode as JSON: %v", stopAfter, err)
		}
	}
}
