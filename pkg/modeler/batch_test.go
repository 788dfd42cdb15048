package modeler

import (
	"math"
	"math/rand/v2"
	"testing"

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
		nil, z, n, dim, study.OutputPrivacy{}, 0)
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
// sequential GP-UCB choice; after the stand-ins the posterior mean is unchanged (exact
// property of conditioning on y = µ(x)) and the variance at every pending row has shrunk.
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
			seq, err := s.gp.Next()
			if err != nil {
				t.Fatal(err)
			}
			one, scratch, err := s.chooseBatch(1)
			if err != nil {
				t.Fatal(err)
			}
			if len(one) != 1 || one[0] != seq || scratch != nil {
				t.Errorf("chooseBatch(1) = %v (scratch %v), want [%d] (the sequential choice) and no scratch GP", one, scratch != nil, seq)
			}
			batch, scratch, err := s.chooseBatch(tc.q)
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
			if s.gp.T() != tc.obs {
				t.Errorf("real GP has %d observations after chooseBatch, want %d (stand-ins must not reach it)", s.gp.T(), tc.obs)
			}
			if scratch.T() != tc.obs+tc.q-1 {
				t.Errorf("scratch GP has %d observations, want %d real + %d stand-ins", scratch.T(), tc.obs, tc.q-1)
			}
			m, sd := s.standardisation()
			// Mean unchanged: µ̃_{t,k}(z) = (µ_t(z) − m)/s for every z. The tolerance covers the
			// two GPs' different (but exact) arithmetic: 1e-8 in standardised units.
			var maxDiff float64
			for i := range s.n {
				maxDiff = max(maxDiff, math.Abs(scratch.Mean(i)-(s.gp.Mean(i)-m)/sd))
			}
			if maxDiff > 1e-8 {
				t.Errorf("stand-ins moved the posterior mean by up to %.3g (standardised units), want ≤ 1e-8", maxDiff)
			}
			// Variance shrunk at every pending row that entered as a stand-in (all but the last):
			// from σ²_t (at least σ_n² + something) to at most about σ_n².
			for _, i := range batch[:tc.q-1] {
				before := s.gp.Variance(i) / (sd * sd)
				after := scratch.Variance(i)
				if !(after < before) || after > 2e-3 {
					t.Errorf("variance at pending row %d: %.4g before the stand-in, %.4g after; want a decrease to ≤ 2e-3 (≈ σ_n² = 1e-3)", i, before, after)
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
	b1, _, err := s1.chooseBatch(6)
	if err != nil {
		t.Fatal(err)
	}
	b2, _, err := s2.chooseBatch(6)
	if err != nil {
		t.Fatal(err)
	}
	for k := range b1 {
		if b1[k] != b2[k] {
			t.Fatalf("chooseBatch(6) = %v and %v from identical observations, want equal", b1, b2)
		}
	}
}

func TestStandardisation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ys    []float64
		raw   bool
		m, sd float64
	}{
		{"none", nil, false, 0, 1},
		{"one", []float64{5}, false, 5, 1},
		{"equal", []float64{5, 5, 5}, false, 5, 1},
		// mean 2, Σ(y−m)² = 2, divisor 2: sd 1.
		{"three", []float64{1, 2, 3}, false, 2, 1},
		{"raw", []float64{1, 2, 3}, true, 0, 1},
	} {
		s := &session{ys: tc.ys}
		s.gcfg.Standardise = !tc.raw
		if m, sd := s.standardisation(); m != tc.m || sd != tc.sd {
			t.Errorf("standardisation(%s) = (%g, %g), want (%g, %g)", tc.name, m, sd, tc.m, tc.sd)
		}
	}
}
