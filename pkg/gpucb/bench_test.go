package gpucb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// snapshot records a GP's state so a benchmark can return to it; rows past
// the snapshot are overwritten in place afterwards.
type snapshot struct {
	nrows, nlpk   int
	chunkFree     []float64
	a, b, vr      []float64
	queried       []bool
	shift, dm, m2 float64
}

func (g *GP) snapshot() snapshot {
	return snapshot{
		nrows: len(g.rows), nlpk: len(g.lpk), chunkFree: g.chunkFree,
		a: slices.Clone(g.a), b: slices.Clone(g.b), vr: slices.Clone(g.vr), queried: slices.Clone(g.queried),
		shift: g.shift, dm: g.dmean, m2: g.m2,
	}
}

func (g *GP) restore(s snapshot) {
	t := s.nrows
	g.rows, g.lpk, g.u, g.idx, g.ys, g.nf = g.rows[:t], g.lpk[:s.nlpk], g.u[:t], g.idx[:t], g.ys[:t], g.nf[:t]
	if g.cfg.Standardise {
		g.e = g.e[:t]
	}
	g.chunkFree = s.chunkFree
	copy(g.a, s.a)
	copy(g.b, s.b)
	copy(g.vr, s.vr)
	copy(g.queried, s.queried)
	g.shift, g.dmean, g.m2 = s.shift, s.dm, s.m2
}

func benchCands(n, dim int) []float64 {
	rng := rand.New(rand.NewPCG(11, 12))
	c := make([]float64, n*dim)
	for k := range c {
		c[k] = rng.NormFloat64()
	}
	return c
}

func benchConfig(cands []float64, n, dim int) Config {
	return Config{
		Kernel: SquaredExponential, Lengthscale: DefaultLengthscale(cands, n, dim),
		SignalVariance: 1, NoiseVariance: 1e-3, Delta: 0.05, Standardise: true, Capacity: 64,
	}
}

// BenchmarkIteration times one Next + Observe at t = 50 (the state is
// restored to t = 50 outside the timer before each iteration).
func BenchmarkIteration(b *testing.B) {
	const dim, t0 = 20, 50
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			cands := benchCands(n, dim)
			g, err := New(cands, n, dim, benchConfig(cands, n, dim))
			if err != nil {
				b.Fatal(err)
			}
			for range t0 {
				step(b, g, cands, dim)
			}
			s := g.snapshot()
			b.ResetTimer()
			for range b.N {
				step(b, g, cands, dim)
				b.StopTimer()
				g.restore(s)
				b.StartTimer()
			}
		})
	}
}

func step(b *testing.B, g *GP, cands []float64, dim int) {
	i, err := g.Next()
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Observe(i, smooth(cands[i*dim:(i+1)*dim])); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLoop times a full GP-UCB run from New to T observations
// (candidates generated outside the timer), eager and lazy (Config.Lazy, which
// stores no V: the only one that fits n = 10⁷ in memory). Targets: n = 1e5,
// T = 100 in ≤ 0.6 s; n = 1e6, T = 200 in ≤ 20 s; n = 1e7 lazy in ≤ 15× the
// 1e6 case and ≤ 6 GiB peak RSS with the candidates (docs/EXPERIMENTS.md). The
// lazy cases are named lazy/n=…/T=…, so that a pattern selects one loop alone.
// The cases above 1e5 are skipped with -short.
func BenchmarkLoop(b *testing.B) {
	const dim = 20
	for _, c := range []struct {
		n, t    int
		lazy    bool
		columns int // Config.LazyColumns: 2·10⁶ columns of 200 rows are 3.2 GB
	}{{100_000, 100, false, 0}, {1_000_000, 200, false, 0}, {100_000, 100, true, 0}, {1_000_000, 200, true, 0}, {10_000_000, 200, true, 2_000_000}} {
		name := fmt.Sprintf("n=%d/T=%d", c.n, c.t)
		if c.lazy {
			name = "lazy/" + name
		}
		b.Run(name, func(b *testing.B) {
			if c.n > 100_000 && testing.Short() {
				b.Skip("large loop skipped with -short")
			}
			cands := benchCands(c.n, dim)
			cfg := benchConfig(cands, c.n, dim)
			cfg.Capacity, cfg.Lazy, cfg.LazyColumns = c.t, c.lazy, c.columns
			b.ResetTimer()
			for range b.N {
				g, err := New(cands, c.n, dim, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for range c.t {
					step(b, g, cands, dim)
				}
			}
		})
	}
}

// BenchmarkLoopInputNoise is BenchmarkLoop at n = 1e5, T = 100 with input noise of
// variance 0.25 per coordinate (Config.InputNoiseVariance): the row prior's covariance
// and coordinates, O(n·dim²) once, then the same loop.
func BenchmarkLoopInputNoise(b *testing.B) {
	const dim, n, t = 20, 100_000, 100
	cands := benchCands(n, dim)
	cfg := benchConfig(cands, n, dim)
	cfg.Capacity, cfg.InputNoiseVariance = t, 0.25
	b.ResetTimer()
	for range b.N {
		g, err := New(cands, n, dim, cfg)
		if err != nil {
			b.Fatal(err)
		}
		for range t {
			step(b, g, cands, dim)
		}
	}
}
