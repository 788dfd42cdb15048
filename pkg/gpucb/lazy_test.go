package gpucb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
)

// lazyCase is one configuration of the lazy-against-eager comparison.
type lazyCase struct {
	n, dim, steps, batch int
	cfg                  Config
	noise                bool // ObserveNoise/FantasizeNoise with random factors
	refit                bool // SetHyper halfway
	distinct             int  // if > 0, the candidates repeat this many distinct rows (ties)
}

// runLazyPair drives an eager and a lazy GP with the same rule and outputs and
// fails at the first step where they choose differently or where a mean or
// variance differs in any bit.
func runLazyPair(t *testing.T, c lazyCase, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	cands := make([]float64, c.n*c.dim)
	for k := range cands {
		cands[k] = rng.NormFloat64()
	}
	if c.distinct > 0 {
		for k := range cands {
			cands[k] = cands[(k/c.dim%c.distinct)*c.dim+k%c.dim]
		}
	}
	cfg := c.cfg
	cfg.Lengthscale = DefaultLengthscale(cands, c.n, c.dim)
	eager, err := New(cands, c.n, c.dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Lazy = true
	lazy, err := New(cands, c.n, c.dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gps := []*GP{eager, lazy}
	both := func(f func(g *GP) error) {
		t.Helper()
		for _, g := range gps {
			if err := f(g); err != nil {
				t.Fatal(err)
			}
		}
	}
	for step := 0; eager.T() < c.steps; step++ {
		if c.refit && eager.T() == c.steps/2 {
			h := eager.Hyper()
			h.Lengthscale *= 0.8
			both(func(g *GP) error { return g.SetHyper(h) })
		}
		var batch []int
		var factors []float64
		for range c.batch {
			ie, errE := eager.Next()
			il, errL := lazy.Next()
			if errE != nil || errL != nil || ie != il {
				t.Fatalf("seed %d step %d: eager chose %d (%v), lazy %d (%v)", seed, step, ie, errE, il, errL)
			}
			f := 1.0
			if c.noise {
				f = 0.25 + 2*rng.Float64()
			}
			batch, factors = append(batch, ie), append(factors, f)
			if len(batch) < c.batch {
				both(func(g *GP) error { return g.FantasizeNoise(ie, f) })
			}
		}
		if step%4 == 2 { // Argmax brings every candidate up to date: only on some steps
			score := func(i int, mean, sd float64) float64 { return mean + 0.7*sd + 1e-9*float64(i%7) }
			ae, errE := eager.Argmax(score, cfg.SkipQueried)
			al, errL := lazy.Argmax(score, cfg.SkipQueried)
			if errE != nil || errL != nil || ae != al {
				t.Fatalf("seed %d step %d: eager Argmax %d (%v), lazy %d (%v)", seed, step, ae, errE, al, errL)
			}
		}
		probe := []int{batch[0], rng.IntN(c.n)}
		for _, i := range probe {
			if me, ml := eager.Mean(i), lazy.Mean(i); math.Float64bits(me) != math.Float64bits(ml) {
				t.Fatalf("seed %d step %d: Mean(%d) eager %v, lazy %v", seed, step, i, me, ml)
			}
			if ve, vl := eager.Variance(i), lazy.Variance(i); math.Float64bits(ve) != math.Float64bits(vl) {
				t.Fatalf("seed %d step %d: Variance(%d) eager %v, lazy %v", seed, step, i, ve, vl)
			}
		}
		both(func(g *GP) error { g.DropFantasies(); return nil })
		for k, i := range batch {
			y := smooth(cands[i*c.dim:(i+1)*c.dim]) + 0.1*rng.NormFloat64()
			both(func(g *GP) error { return g.ObserveNoise(i, y, factors[k]) })
		}
	}
}

func lazyConfig(std, skip bool, k Kernel) Config {
	return Config{Kernel: k, SignalVariance: 1, NoiseVariance: 1e-3, Delta: 0.05,
		Standardise: std, SkipQueried: skip, Capacity: 16}
}

// TestLazyMatchesEager compares the lazy and the eager posterior on small candidate
// sets in every configuration the lazy path changes: standardised or not, batches of
// fantasies, per-answer noise factors, re-queries, input noise, Matérn, new
// hyperparameters, one worker or several, columns kept for a few candidates only,
// more observations than Capacity (the slots' stride grows), and repeated rows whose
// ties span the scan's chunks.
func TestLazyMatchesEager(t *testing.T) {
	cases := map[string]lazyCase{
		"sequential":  {n: 3000, dim: 4, steps: 40, batch: 1, cfg: lazyConfig(true, true, SquaredExponential)},
		"raw outputs": {n: 3000, dim: 4, steps: 40, batch: 1, cfg: lazyConfig(false, true, SquaredExponential)},
		"batches":     {n: 5000, dim: 6, steps: 48, batch: 4, noise: true, cfg: lazyConfig(true, true, SquaredExponential)},
		"requery":     {n: 500, dim: 2, steps: 40, batch: 3, noise: true, cfg: lazyConfig(true, false, Matern52)},
		"refit":       {n: 4000, dim: 5, steps: 30, batch: 2, refit: true, cfg: lazyConfig(true, true, Matern52)},
	}
	inputNoise := lazyConfig(true, true, SquaredExponential)
	inputNoise.InputNoiseVariance = 0.1
	cases["input noise"] = lazyCase{n: 3000, dim: 4, steps: 30, batch: 2, noise: true, cfg: inputNoise}
	oneWorker := lazyConfig(true, true, SquaredExponential)
	oneWorker.Workers = 1
	cases["one worker"] = lazyCase{n: 3000, dim: 4, steps: 30, batch: 2, cfg: oneWorker}
	fewColumns := lazyConfig(true, true, SquaredExponential)
	fewColumns.LazyColumns = 200
	cases["few columns"] = lazyCase{n: 3000, dim: 4, steps: 40, batch: 3, noise: true, cfg: fewColumns}
	// Repeated rows tie across the lazy scan's chunks: the lowest index must win.
	cases["ties"] = lazyCase{n: 3*lazyChunk + 100, dim: 3, steps: 16, batch: 2, distinct: 37, cfg: lazyConfig(true, true, SquaredExponential)}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(3) {
				runLazyPair(t, c, seed)
			}
		})
	}
}

// TestLazyMatchesEagerLarge is the comparison on 10⁵ candidates in 20 dimensions
// (the size of BenchmarkLoop's smaller case) over many seeds, sequential and in
// batches with per-answer noise.
func TestLazyMatchesEagerLarge(t *testing.T) {
	testrace.Statistical(t)
	if testing.Short() {
		t.Skip("10⁵ candidates skipped with -short")
	}
	for _, c := range []lazyCase{
		{n: 100_000, dim: 20, steps: 60, batch: 1, cfg: lazyConfig(true, true, SquaredExponential)},
		{n: 100_000, dim: 20, steps: 60, batch: 5, noise: true, cfg: lazyConfig(true, true, SquaredExponential)},
	} {
		t.Run(fmt.Sprintf("batch=%d", c.batch), func(t *testing.T) {
			for seed := range uint64(6) {
				runLazyPair(t, c, seed)
			}
		})
	}
}

// TestLazyColumnsWithin: the columns that fit reserve at least 16 rows each, and the
// count stays in [1, n] (0 would mean every candidate keeps one).
func TestLazyColumnsWithin(t *testing.T) {
	for _, c := range []struct{ bytes, n, capacity, want int }{
		{1 << 30, 10, 50, 10},
		{1 << 30, 10_000_000, 50, 1 << 30 / 400},
		{1 << 30, 10_000_000, 5, 1 << 30 / 128},
		{1 << 30, 10_000_000, 1 << 28, 1},
	} {
		if got := LazyColumnsWithin(c.bytes, c.n, c.capacity); got != c.want {
			t.Errorf("LazyColumnsWithin(%d, %d, %d) = %d, want %d", c.bytes, c.n, c.capacity, got, c.want)
		}
	}
}
