package integration

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
)

// topOnePercentThreshold is the 99th percentile of the target (linear interpolation,
// numpy's default): the value a run must reach to count.
func topOnePercentThreshold(y []float64) float64 {
	s := append([]float64(nil), y...)
	sort.Float64s(s)
	pos := 0.99 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// hitProbabilityRandom is the exact probability that T rows drawn without replacement
// from n include at least one of k: 1 − C(n−k, T)/C(n, T).
func hitProbabilityRandom(n, k, T int) float64 {
	miss := 1.0
	for j := 0; j < T; j++ {
		miss *= float64(n-k-j) / float64(n-j)
	}
	return 1 - miss
}

// TestDiabetesTopOnePercent is the backbone's acceptance check: on the diabetes data with
// r = 5, ε = e², δ = 1e-4, T = 40, PO-GP-UCB must query a patient in the top 1% of
// progression clearly more often than a random choice of 40 patients, which does so with
// probability 0.379 (hitProbabilityRandom). Each run is a new identity — a new private
// projection, fresh answer noise, a new random first patient — so the runs are
// independent (one identity would be answered its earlier noisy values again).
//
// A run counts as a hit when one of the rows it queried has a TRUE progression in the top
// 1%. With private answers the study's best value is a noisy answer, which says nothing
// reliable about the patient's real progression; the rows a study queried are what the
// search found, and their true values are what the simulations measure (pkg/simulate,
// "Utility is measured on the noise-free target").
//
// Measured per-run hit rates (docs/EXPERIMENTS.md, "Honest defaults", 200 runs each):
// exact answers with the data's own standardisation 0.835 (and 0.846 over 480 runs with
// this test's earlier harness); public schema scaling with Laplace answers at ε_out = 1
// and 2 and the noise-aware GP (the modeler's default with private answers) 0.695 and
// 0.740; random search 0.379 exactly. This test itself, once with each configuration:
// exact answers (diabetesConfig as it stands) 108/120; the schema scaling with Laplace
// answers at ε_out = 1 on [0, 400] 87/120 (0.725) — and there the row with the best
// noisy answer was a top-1% patient in only 4 of the 120 runs, which is why hits are
// counted on the queried rows. The test passes for either curator configuration; it
// runs the demo's (public schema, Laplace answers at ε_out = 2.5, projection with
// orthonormal columns), where it measured 98/120 once, with the recommended row (highest
// posterior mean) at a mean true progression of 237 against 210 for the row with the
// best noisy answer.
//
// Up to 120 runs, at least 58 hits (48%). With H ~ Binomial(120, p):
//
//	p = 0.65: P[H < 58] = 6.4e-5   (false failure, below the measured rates)
//	p = 0.70: P[H < 58] < 1e-6
//	p = 0.60: P[H < 58] = 3.7e-3
//	p = 0.38: P[H ≥ 58] = 1.3e-2   (an implementation no better than random search)
//	p = 0.40: P[H ≥ 58] = 3.9e-2
//
// No threshold on 120 runs makes both a true rate of 0.60 fail with probability < 1e-4
// and random search pass with probability < 1e-2: the gap 0.60 − 0.38 is about 4.9
// binomial standard errors at this size, where 3.7 + 2.3 = 6.0 would be needed. The threshold
// keeps the false-failure rate below 1e-4 down to p = 0.65, under every measured
// configuration, and random search passes about once in 75 runs of the test.
//
// The test stops early, passing, once the hits make the verdict clear: at least 22 of
// the first 30 runs, 38 of 60 or 53 of 90 (each the smallest count that random search,
// p = 0.38, reaches with probability below 1e-4). Stopping only to pass never adds a
// failure, so the false-failure rates above stand; random search now passes with
// probability 0.01345 instead of 0.01340 (exact, summed over the stages). The expected
// number of runs is 32 at p = 0.82 (the demo configuration's measured rate), 42 at 0.74
// and 66 at 0.65, instead of 120.
func TestDiabetesTopOnePercent(t *testing.T) {
	testrace.Statistical(t)
	if testing.Short() {
		t.Skip("up to 120 studies; run without -short")
	}
	// The demo's curator: the shipped public schema (diabetesConfig), Laplace answers at
	// ε_out = 2.5 on the schema's target range [0, 400]. The dataset cap must hold 120
	// studies (projection e² plus the answers' one charge each).
	cfg := diabetesConfig(t, t.TempDir())
	cfg.Output = curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 2.5}
	cfg.DatasetBudget = ledger.Cost{Epsilon: 1e5, Delta: 0.5}
	cur := startCurator(t, cfg)
	ds := loadDiabetes(t)
	thr := topOnePercentThreshold(ds.Y)
	k := 0
	for _, y := range ds.Y {
		if y >= thr {
			k++
		}
	}
	const maxRuns, need = 120, 58
	early := map[int]int{30: 22, 60: 38, 90: 53} // runs → hits that pass at once
	hits, bestHits, recHits, runs := 0, 0, 0, 0
	var bestTrue, recTrue float64
	for run := 0; run < maxRuns; run++ {
		if c, ok := early[run]; ok && hits >= c {
			break
		}
		runs++
		client := cur.client(t, fmt.Sprintf("vendor-top1-%d", run))
		cfg := studySettings
		cfg.InitialIndex = -1
		res, err := modeler.Run(context.Background(), curatorclient.New(client), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Queried) != cfg.Iterations {
			t.Fatalf("run %d queried %d rows, want %d", run, len(res.Queried), cfg.Iterations)
		}
		for _, i := range res.Queried {
			if ds.Y[i] >= thr {
				hits++
				break
			}
		}
		if ds.Y[res.BestIndex] >= thr {
			bestHits++
		}
		if ds.Y[res.Recommended] >= thr {
			recHits++
		}
		bestTrue += ds.Y[res.BestIndex]
		recTrue += ds.Y[res.Recommended]
	}
	bestTrue, recTrue = bestTrue/float64(runs), recTrue/float64(runs)
	random := hitProbabilityRandom(len(ds.Y), k, studySettings.Iterations)
	t.Logf("top 1%% (progression ≥ %.2f, %d patients): PO-GP-UCB queried one in %d of %d runs (its best answer was one in %d, its recommended row in %d); random choice of %d patients reaches it with probability %.3f",
		thr, k, hits, runs, bestHits, recHits, studySettings.Iterations, random)
	t.Logf("mean true progression of the row with the best noisy answer %.1f, of the recommended row (highest posterior mean) %.1f", bestTrue, recTrue)
	if runs == maxRuns && hits < need {
		t.Errorf("PO-GP-UCB queried a top-1%% patient in %d of %d runs, want ≥ %d", hits, runs, need)
	}
}

func TestHitProbabilityRandom(t *testing.T) {
	// 1 − C(437,40)/C(442,40) by hand: 1 − Π_{j<5} (402−j)/(442−j) = 1 − 0.62092 = 0.37908
	if got, want := hitProbabilityRandom(442, 5, 40), 0.37908; math.Abs(got-want) > 1e-5 {
		t.Errorf("hitProbabilityRandom(442, 5, 40) = %.4f, want %.4f", got, want)
	}
	if got := topOnePercentThreshold([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); math.Abs(got-9.9) > 1e-12 {
		t.Errorf("topOnePercentThreshold(0..10) = %g, want 9.9", got)
	}
}
