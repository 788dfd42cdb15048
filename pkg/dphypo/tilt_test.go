package dphypo

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// rampBase reads a broad landscape on the 20×20 grid — the mean falls linearly from 0.9
// with the distance to (0.75, 0.3), so that about a fifth of the grid is within 0.05 of
// the best, as on the digits — plus N(0, sd²).
type rampBase struct {
	m  []float64
	sd float64
	r  *rand.Rand
}

func (b *rampBase) Run(_ context.Context, i int) (float64, error) {
	return b.m[i] + b.sd*b.r.NormFloat64(), nil
}

func rampMeans(coords []float64) []float64 {
	m := make([]float64, len(coords)/2)
	for i := range m {
		dx, dy := coords[2*i]-0.75, coords[2*i+1]-0.3
		m[i] = 0.9 - 0.2*math.Sqrt(dx*dx+dy*dy)
	}
	return m
}

// topMass is the mass the last sampling distribution of a search put on the best fifth
// of the grid, averaged over seeds.
func topMass(t *testing.T, sd, beta float64) float64 {
	coords := grid20()
	m := rampMeans(coords)
	order := make([]int, len(m))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return m[order[a]] > m[order[b]] })
	top := map[int]bool{}
	for _, i := range order[:len(m)/5] {
		top[i] = true
	}
	var sum float64
	const seeds = 8
	for seed := range uint64(seeds) {
		cfg := Config{Theta: 1, Gamma: 0.01, C: 2, Cmin: 0.75, Tau: 0.1, Beta: beta, Candidates: coords, N: len(m), Dim: 2}
		var last []float64
		_, err := Run(context.Background(), dptest.Source(seed), cfg, &rampBase{m: m, sd: sd, r: rand.New(rand.NewPCG(seed, 3))},
			func(p Progress) { last = p.Sampling })
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range last {
			if top[i] {
				sum += p / seeds
			}
		}
	}
	return sum
}

// TestGPRuleTiltsLittleUnderNoisyReads pins why the GP rule does not beat uniform search
// under the paper's own protocol on the digits (docs/EXPERIMENTS.md, "The paper's own
// protocol"): the bounds leave room (TestBoundsLeaveRoom), but with reads noisy to ± 0.1
// the GP's posterior cannot tell the best fifth of a broad landscape from the rest, so
// after E[T] = 100 runs its sampling distribution puts about 0.28 on the best fifth —
// uniform 0.2, the most C = 2, c = 0.75 allow 0.4 — and a larger β does not help (it
// sharpens a ranking that is mostly noise). With reads ± 0.01 the same rule puts about
// 0.35 there. Seeded sources: the figures are deterministic.
func TestGPRuleTiltsLittleUnderNoisyReads(t *testing.T) {
	testrace.Statistical(t)
	for _, c := range []struct {
		sd, beta float64
		lo, hi   float64
	}{
		{0.1, 1, 0.22, 0.31},
		{0.1, 10, 0.22, 0.31},
		{0.01, 1, 0.33, 0.4},
	} {
		if got := topMass(t, c.sd, c.beta); got < c.lo || got > c.hi {
			t.Errorf("reads ± %g, β = %g: mass on the best fifth %.4f, want in [%g, %g]", c.sd, c.beta, got, c.lo, c.hi)
		}
	}
}
