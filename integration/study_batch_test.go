package integration

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
)

// batchRun is one study's best value after each evaluation.
type batchRun struct{ best []float64 }

func (r batchRun) bestAt(n int) float64 { return r.best[n-1] }

// firstHit is the number of evaluations until the top 1% is reached, or 0 if never.
func (r batchRun) firstHit(thr float64) int {
	for k, b := range r.best {
		if b >= thr {
			return k + 1
		}
	}
	return 0
}

// binomialUpperTail is P[Binomial(n, 1/2) ≥ k].
func binomialUpperTail(n, k int) float64 {
	var p float64
	for j := k; j <= n; j++ {
		lg, _ := math.Lgamma(float64(n + 1))
		lj, _ := math.Lgamma(float64(j + 1))
		lnj, _ := math.Lgamma(float64(n - j + 1))
		p += math.Exp(lg - lj - lnj - float64(n)*math.Ln2)
	}
	return p
}

// TestBatchVersusSequential compares GP-BUCB batches of q = 5 rows with sequential
// GP-UCB (q = 1) on the diabetes data with the acceptance settings (r = 5, ε = e²,
// δ = 1e-4, T = 40). Each of the runs is a pair: a fresh private projection (its own
// label) and a random first patient shared by q = 1 and q = 5, so that the comparison is
// paired. Both are run to 48 = 1.2 T evaluations (the first 40 evaluations of a T = 48
// study are those of a T = 40 study: a batch is chosen greedily, row by row).
//
// "q = 5 reaches the same best value as q = 1 within the same number of evaluations
// ± 20%" is checked as: q = 5 given 48 evaluations reaches the top 1% in at least as many
// runs as q = 1 given 40, up to chance. The test is McNemar's exact one-sided sign test on
// the discordant pairs: with a runs where only q = 1 hits and b where only q = 5 hits, it
// fails when P[Binomial(a + b, 1/2) ≥ a] < 0.001. If q = 5 within 48 is at least as good
// as q = 1 within 40, the false-failure rate is at most 0.001.
func TestBatchVersusSequential(t *testing.T) {
	testrace.Statistical(t)
	if testing.Short() {
		t.Skip("80 studies; run without -short")
	}
	// The paper's runs: many studies by one identity, with exact answers; the
	// operator lets it read every row (the default cap is 200 distinct rows).
	cfg := diabetesConfig(t, t.TempDir())
	cfg.ExactAnswersMaxRows = 442
	cur := startCurator(t, cfg)
	client := cur.client(t, "vendor-batch")
	ds := loadDiabetes(t)
	thr := topOnePercentThreshold(ds.Y)
	const runs, T, T20 = 40, 40, 48
	qs := []int{1, 5}
	res := map[int][]batchRun{}
	for run := 0; run < runs; run++ {
		initial := -1
		for _, q := range qs {
			cfg := studySettings
			cfg.Label = fmt.Sprintf("batch-%d", run)
			cfg.Iterations, cfg.Batch, cfg.InitialIndex = T20, q, initial
			r, err := modeler.Run(context.Background(), curatorclient.New(client), cfg)
			if err != nil {
				t.Fatal(err)
			}
			initial = r.Queried[0]
			br := batchRun{best: make([]float64, len(r.Values))}
			best := math.Inf(-1)
			for k, v := range r.Values {
				best = max(best, v)
				br.best[k] = best
			}
			res[q] = append(res[q], br)
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| q | rounds for T=%d | mean best at %d | mean best at %d | top 1%% by %d | top 1%% by %d | mean evaluations to top 1%% (hits) |\n|---|---|---|---|---|---|---|\n", T, T, T20, T, T20)
	hits := map[int][2]int{}
	for _, q := range qs {
		var sum40, sum48, evals float64
		var h40, h48 int
		for _, r := range res[q] {
			sum40 += r.bestAt(T)
			sum48 += r.bestAt(T20)
			if n := r.firstHit(thr); n > 0 {
				if n <= T {
					h40++
				}
				h48++
				evals += float64(n)
			}
		}
		hits[q] = [2]int{h40, h48}
		rounds := 1 + (T-1+q-1)/q
		fmt.Fprintf(&table, "| %d | %d | %.1f | %.1f | %d/%d | %d/%d | %.1f |\n", q, rounds, sum40/runs, sum48/runs, h40, runs, h48, runs, evals/math.Max(1, float64(h48)))
	}
	a, b := 0, 0 // discordant pairs: only q = 1 within 40 hits; only q = 5 within 48 hits
	for k := range runs {
		h1 := res[1][k].firstHit(thr)
		h5 := res[5][k].firstHit(thr)
		hit1, hit5 := h1 > 0 && h1 <= T, h5 > 0
		switch {
		case hit1 && !hit5:
			a++
		case hit5 && !hit1:
			b++
		}
	}
	p := binomialUpperTail(a+b, a)
	t.Logf("diabetes, r = 5, ε = e², δ = 1e-4, %d paired runs, top 1%% = progression ≥ %.2f:%s"+
		"discordant pairs: %d where only q = 1 (40 evaluations) reaches the top 1%%, %d where only q = 5 (48) does; one-sided sign-test p = %.3g",
		runs, thr, table.String(), a, b, p)
	if p < 0.001 {
		t.Errorf("q = 5 within %d evaluations reaches the top 1%% less often than q = 1 within %d (%d vs %d discordant runs, p = %.3g < 0.001)",
			T20, T, a, b, p)
	}
}

func TestBinomialUpperTail(t *testing.T) {
	// By hand: P[Bin(16, 1/2) ≥ 14] = (120 + 16 + 1)/65536 = 0.0020904541015625.
	for _, tc := range []struct {
		n, k int
		want float64
	}{{16, 14, 137.0 / 65536}, {0, 0, 1}, {5, 0, 1}, {5, 5, 1.0 / 32}} {
		if got := binomialUpperTail(tc.n, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("binomialUpperTail(%d, %d) = %g, want %g", tc.n, tc.k, got, tc.want)
		}
	}
}
