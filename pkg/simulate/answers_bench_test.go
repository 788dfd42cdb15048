package simulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
)

// BenchmarkDiabetesAnswers measures what a study's private answers let it find on the
// shipped diabetes data with the shipped public schema (docs/EXPERIMENTS.md, "More
// informative answers"): the demo's study (r = 5, ε = e², δ = 1e-4, T = 40, the
// Gaussian projection, a uniformly random first row) run by pkg/modeler's own Run — the
// modeler binary's session, with the modeler's default prior — against an in-process
// pkg/curator releasing Laplace answers on the schema's target range [0, 400], a new
// curator (new projection, fresh answer noise) per run. Judged by the TRUE progression
// only: whether a top-1% patient (≥ the 99th percentile, TopOnePercentThreshold) is
// among the rows queried, and the recommended row's percentile (the share of the 442
// patients whose progression is no higher) and top-1% rate.
//
// Settings, from the environment (defaults in brackets):
//
//	PRIVBO_ANSWERS_RUNS     runs [200]
//	PRIVBO_ANSWERS_EPSILON  ε_out of each answer, or 0 for exact answers [1]
//	PRIVBO_ANSWERS_CLIP     the study's clip range LO,HI (modeler.Config.Clip), or
//	                        "public" [public]
//	PRIVBO_ANSWERS_CONFIRM  K,P[,LO,HI]: P confirmation passes of the K rows with the
//	                        highest posterior mean (modeler.Config.ConfirmRows), clipped
//	                        to [LO, HI] [none]
//	PRIVBO_ANSWERS_LIKELIHOOD  the recommendation's likelihood
//	                        (modeler.Config.RecommendLikelihood): laplace, whose runs
//	                        also state the Gaussian rule's row, or gaussian [laplace]
//	PRIVBO_ANSWERS_WORKERS  concurrent runs [1]
//	PRIVBO_ANSWERS_SEED     seed of the first rows [1]
//
// go test -run '^$' -bench DiabetesAnswers -benchtime 1x ./pkg/simulate
func BenchmarkDiabetesAnswers(b *testing.B) {
	runs := envInt(b, "PRIVBO_ANSWERS_RUNS", 200)
	workers := envInt(b, "PRIVBO_ANSWERS_WORKERS", 1)
	seed := uint64(envInt(b, "PRIVBO_ANSWERS_SEED", 1))
	eps := 1.0
	if v := os.Getenv("PRIVBO_ANSWERS_EPSILON"); v != "" {
		var err error
		if eps, err = strconv.ParseFloat(v, 64); err != nil || eps < 0 {
			b.Fatal(err)
		}
	}
	var clip modeler.Clip
	if v := os.Getenv("PRIVBO_ANSWERS_CLIP"); v != "" && v != "public" {
		lo, hi, ok := strings.Cut(v, ",")
		l, err1 := strconv.ParseFloat(lo, 64)
		h, err2 := strconv.ParseFloat(hi, 64)
		if !ok || err1 != nil || err2 != nil {
			b.Fatalf("PRIVBO_ANSWERS_CLIP=%q: want LO,HI", v)
		}
		clip = modeler.Clip{Lower: l, Upper: h}
	}
	likelihood := os.Getenv("PRIVBO_ANSWERS_LIKELIHOOD")
	var confirmRows, confirmPasses int
	var confirmClip modeler.Clip
	if v := os.Getenv("PRIVBO_ANSWERS_CONFIRM"); v != "" && v != "none" {
		f := strings.Split(v, ",")
		var err error
		if confirmRows, err = strconv.Atoi(f[0]); err != nil || len(f) < 2 {
			b.Fatalf("PRIVBO_ANSWERS_CONFIRM=%q: want K,P[,LO,HI]", v)
		}
		if confirmPasses, err = strconv.Atoi(f[1]); err != nil {
			b.Fatal(err)
		}
		if len(f) == 4 {
			if confirmClip, err = modeler.ParseClip(f[2] + "," + f[3]); err != nil {
				b.Fatal(err)
			}
		}
	}
	sc, err := dataset.ParseScaling("schema:../../examples/data/diabetes.schema.csv")
	if err != nil {
		b.Fatal(err)
	}
	ds, err := dataset.LoadCSV("../../examples/data/diabetes.csv", dataset.Options{Target: "progression", Scaling: sc})
	if err != nil {
		b.Fatal(err)
	}
	output := curator.OutputPrivacy{Mechanism: "laplace", Epsilon: eps, Lower: 0, Upper: 400}
	if eps == 0 {
		output = curator.OutputPrivacy{Mechanism: "none"}
	}
	thr := TopOnePercentThreshold(ds.Y)
	pct := func(i int) float64 {
		k := 0
		for _, v := range ds.Y {
			if v <= ds.Y[i] {
				k++
			}
		}
		return float64(k) / float64(ds.N)
	}
	for b.Loop() {
		state := b.TempDir()
		store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{
			PerIdentity: ledger.Cost{Epsilon: 1e12, Delta: 0.999}, Dataset: ledger.Cost{Epsilon: 1e12, Delta: 0.999}})
		if err != nil {
			b.Fatal(err)
		}
		type outcome struct {
			hit, recTop, bestTop, gaussTop bool
			recPct, bestPct, gaussPct      float64
		}
		out, ferr := forRuns(runs, workers, func(run int) (outcome, error) {
			d := *ds
			d.Name = fmt.Sprintf("diabetes-%d", run)
			cur, err := curator.New(curator.Config{Dataset: &d, Ledger: store, StateDir: filepath.Join(state, strconv.Itoa(run)), Logger: zap.NewNop(),
				ProjectionMechanism: projection.MechanismGaussian,
				Output:              output})
			if err != nil {
				return outcome{}, err
			}
			first := rand.New(rand.NewPCG(seed, uint64(run))).IntN(ds.N)
			res, err := modeler.Run(context.Background(), &Local{Curator: cur, Identity: "vendor"}, modeler.Config{
				R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 40, InitialIndex: first, Clip: clip, Workers: 1,
				ConfirmRows: confirmRows, ConfirmPasses: confirmPasses, ConfirmClip: confirmClip,
				RecommendLikelihood: likelihood})
			if err != nil {
				return outcome{}, err
			}
			var o outcome
			for _, i := range res.Queried {
				o.hit = o.hit || ds.Y[i] >= thr
			}
			o.recTop, o.recPct = ds.Y[res.Recommended] >= thr, pct(res.Recommended)
			o.bestTop, o.bestPct = ds.Y[res.BestIndex] >= thr, pct(res.BestIndex)
			if g := res.GaussianRecommended; g != nil {
				o.gaussTop, o.gaussPct = ds.Y[*g] >= thr, pct(*g)
			}
			return o, nil
		})
		store.Close()
		if ferr != nil {
			b.Fatal(ferr)
		}
		var hits, recTop, bestTop, gaussTop, better, worse int
		var recPct, bestPct, gaussPct []float64
		for _, o := range out {
			hits += b2i(o.hit)
			recTop += b2i(o.recTop)
			bestTop += b2i(o.bestTop)
			recPct = append(recPct, o.recPct)
			bestPct = append(bestPct, o.bestPct)
			gaussTop += b2i(o.gaussTop)
			gaussPct = append(gaussPct, o.gaussPct)
			better += b2i(o.recPct > o.gaussPct)
			worse += b2i(o.recPct < o.gaussPct)
		}
		b.Logf("diabetes, schema, Laplace ε_out = %g on [0, 400], clip %q, confirmation %q, recommendation likelihood %q, %d runs:", eps, clip.String(), os.Getenv("PRIVBO_ANSWERS_CONFIRM"), likelihood, runs)
		b.Logf("  a top-1%% patient among the 40 queried: %s", rate(hits, runs))
		b.Logf("  recommended row in the top 1%%: %s; its percentile: %s", rate(recTop, runs), medianCI(recPct))
		b.Logf("  row of the highest noisy answer in the top 1%%: %s; its percentile: %s", rate(bestTop, runs), medianCI(bestPct))
		if likelihood != modeler.LikelihoodGaussian {
			b.Logf("  the same runs' Gaussian-likelihood recommendation in the top 1%%: %s; its percentile: %s; the robust one higher in %d runs, lower in %d",
				rate(gaussTop, runs), medianCI(gaussPct), better, worse)
		}
	}
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

func rate(k, n int) string {
	p := float64(k) / float64(n)
	return fmt.Sprintf("%d/%d = %.1f%% ± %.1f%%", k, n, 100*p, 100*math.Sqrt(p*(1-p)/float64(n)))
}

// medianCI is the median of v with its 95% confidence interval from the order
// statistics and the quartiles, as scripts/demo-stats.sh prints them.
func medianCI(v []float64) string {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	h := 1.96 * math.Sqrt(float64(n)) / 2
	lo, hi := max(int(float64(n)/2-h), 1), min(int(float64(n)/2+h+1), n)
	med := (s[(n+1)/2-1] + s[n/2]) / 2
	q := func(f float64) float64 { return s[max(int(f*float64(n)+0.5), 1)-1] }
	return fmt.Sprintf("median %.1f%% (95%% CI %.1f%%–%.1f%%), quartiles %.1f%%–%.1f%%", 100*med, 100*s[lo-1], 100*s[hi-1], 100*q(0.25), 100*q(0.75))
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// forRuns calls f for runs 0 … runs−1 on workers goroutines (parallel) and returns the
// outcomes in run order, with the first error (naming its run).
func forRuns[T any](runs, workers int, f func(run int) (T, error)) ([]T, error) {
	out := make([]T, runs)
	err := parallel(context.Background(), runs, workers, func(_ context.Context, run int) error {
		o, err := f(run)
		if err != nil {
			return fmt.Errorf("run %d: %w", run, err)
		}
		out[run] = o
		return nil
	}, nil)
	return out, err
}
