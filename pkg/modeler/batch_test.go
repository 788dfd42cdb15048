package modeler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
)

// syntheticSession is a session over n random 3-dimensional candidates with a smooth
// objective, after t observations of rows chosen at random (fixed seed).
func syntheticSession(t *testing.T, raw bool, obs int) (*session, func(i int) float64) {
	t.Helper()
	const n, dim = 300, 3
	rng := rand.New(rand.NewPCG(7, 11))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = 4*rng.Float64() - 2
	}
	f := func(i int) float64 {
		x := z[i*dim : (i+1)*dim]
		return 100 + 20*math.Sin(2*x[0]) + 10*math.Cos(3*x[1]) - 5*x[2]*x[2]
	}
	s, err := newSession(Config{R: dim, Iterations: 60, Batch: 5, RawOutputs: raw, SignalVariance: 1, NoiseVariance: 1e-3, DeltaUCB: 0.05},
		nil, z, n, dim, study.OutputPrivacy{Noise: noise.None}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range rng.Perm(n)[:obs] {
		if err := s.observe(k+1, k+1, i, f(i), Clip{}); err != nil {
			t.Fatal(err)
		}
	}
	return s, f
}

// TestChooseBatch checks GP-BUCB's batches: q distinct unqueried rows, the first the
// sequential GP-UCB choice; with the fantasies pending the posterior mean is unchanged
// (exact property of conditioning on y = µ(x)), the variance at every pending row has
// shrunk, and the next choice is the batch's next row; chooseBatch leaves the posterior
// with the real answers alone.
func TestChooseBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  bool
		obs  int
		q    int
	}{
		{"standardised, t=1", false, 1, 5},
		{"standardised, t=8", false, 8, 5},
		{"standardised, t=20, q=10", false, 20, 10},
		{"raw outputs, t=8", true, 8, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := syntheticSession(t, tc.raw, tc.obs)
			seq, err := s.acq.Next(s.post)
			if err != nil {
				t.Fatal(err)
			}
			one, err := s.chooseBatch(1)
			if err != nil {
				t.Fatal(err)
			}
			if len(one) != 1 || one[0] != seq || s.post.Pending() != 0 {
				t.Errorf("chooseBatch(1) = %v (%d fantasies left), want [%d] (the sequential choice) and none", one, s.post.Pending(), seq)
			}
			mean0, var0 := make([]float64, s.n), make([]float64, s.n)
			for i := range s.n {
				mean0[i], var0[i] = s.post.Mean(i), s.post.Variance(i)
			}
			batch, err := s.fantasizeBatch(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(batch) != tc.q || batch[0] != seq {
				t.Fatalf("chooseBatch(%d) = %v, want %d rows starting with the sequential choice %d", tc.q, batch, tc.q, seq)
			}
			seen := map[int]bool{}
			for _, i := range s.res.Queried {
				seen[i] = true
			}
			for _, i := range batch {
				if seen[i] {
					t.Errorf("chooseBatch(%d) = %v repeats row %d (queried or already in the batch)", tc.q, batch, i)
				}
				seen[i] = true
			}
			if s.post.T() != tc.obs || s.post.Pending() != tc.q-1 {
				t.Errorf("posterior has %d observations and %d fantasies, want %d real + %d fantasies", s.post.T(), s.post.Pending(), tc.obs, tc.q-1)
			}
			for i := range s.n {
				if s.post.Mean(i) != mean0[i] {
					t.Fatalf("fantasies moved the posterior mean at %d from %g to %g", i, mean0[i], s.post.Mean(i))
				}
			}
			// Variance shrunk at every pending row that entered as a fantasy (all but the
			// last): from σ²_t (at least σ_n² + something) to at most about σ_n², in
			// standardised units.
			_, sd := s.post.Standardisation()
			for _, i := range batch[:tc.q-1] {
				before, after := var0[i]/(sd*sd), s.post.Variance(i)/(sd*sd)
				if !(after < before) || after > 2e-3 {
					t.Errorf("variance at pending row %d: %.4g before the fantasy, %.4g after; want a decrease to ≤ 2e-3 (≈ σ_n² = 1e-3)", i, before, after)
				}
			}
			s.post.DropFantasies()
			if again, err := s.chooseBatch(tc.q); err != nil || !slices.Equal(again, batch) || s.post.Pending() != 0 {
				t.Errorf("chooseBatch(%d) = %v, %v (%d fantasies left); want %v as fantasizeBatch chose, and none left", tc.q, again, err, s.post.Pending(), batch)
			}
			for i := range s.n {
				if s.post.Variance(i) != var0[i] {
					t.Fatalf("variance at %d is %g after chooseBatch, want %g as before it", i, s.post.Variance(i), var0[i])
				}
			}
		})
	}
}

// TestChooseBatchDeterministic: the same observations give the same batch (resume relies
// on it).
func TestChooseBatchDeterministic(t *testing.T) {
	s1, _ := syntheticSession(t, false, 10)
	s2, _ := syntheticSession(t, false, 10)
	b1, err := s1.chooseBatch(6)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := s2.chooseBatch(6)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b1, b2) {
		t.Fatalf("chooseBatch(6) = %v and %v from identical observations, want equal", b1, b2)
	}
}
