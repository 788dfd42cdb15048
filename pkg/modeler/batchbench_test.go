package modeler

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
)

// BenchmarkChooseBatch times the choice of one batch of q = 5 rows (GP-BUCB: four
// stand-ins) after t = 100 answers over n = 10⁴ candidates in R⁵.
func BenchmarkChooseBatch(b *testing.B) {
	const n, dim, t, q = 10_000, 5, 100, 5
	rng := rand.New(rand.NewPCG(3, 5))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = rng.NormFloat64()
	}
	s, err := newSession(Config{R: dim, Iterations: t + q, Batch: q, SignalVariance: 1, NoiseVariance: 1e-3, DeltaUCB: 0.05},
		nil, z, n, dim, study.OutputPrivacy{Noise: noise.None}, 0)
	if err != nil {
		b.Fatal(err)
	}
	for k, i := range rng.Perm(n)[:t] {
		x := z[i*dim : (i+1)*dim]
		if err := s.observe(k+1, k+1, i, 10*math.Sin(x[0])+x[1]*x[2], Clip{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.chooseBatch(q); err != nil {
			b.Fatal(err)
		}
	}
}
