package modeler

import (
	"testing"

	"github.com/privbo/privbo/pkg/study"
)

// TestIsolatedLuckyRowNotTrusted pins why the shipped recommendation (the Laplace
// likelihood, robustRecommend) resists the winner's curse instead of amplifying it
// (docs/EXPERIMENTS.md, "A recommendation worth acting on"). Laplace answers at ε = 1 on
// [0, 400] (b = 400) under the default prior: the signal variance is 1/32 of the noise
// variance, so an isolated row's posterior mean moves only about 1/33 of the way to its
// own answer and its residual is nearly that answer's whole deviation. A lucky isolated
// answer (+1000, 2.5b, on a row as good as the rest) therefore keeps a large residual,
// and the EM gives it a noise variance b·|r| above the Gaussian's 2b² (a noise factor
// above 1): the floor |r| ≥ b/2, which trusts an answer up to 4 times more than the
// Gaussian, applies to the answers that agree with their posterior mean — here those of
// a cluster of good rows — not to the isolated one. The Gaussian rule recommends the
// isolated lucky row; the shipped rule recommends a row of the cluster.
func TestIsolatedLuckyRowNotTrusted(t *testing.T) {
	const dim = 2
	var z, y []float64
	add := func(x0, x1, v float64) { z, y = append(z, x0, x1), append(y, v) }
	for k := range 8 { // the cluster: eight good rows (260) within 0.1 of the origin
		add(0.01*float64(k), 0.02*float64(k%3), 260)
	}
	for i := range 6 { // the rest: rows as good as the median (140), 5 lengthscales apart
		for j := range 6 {
			if i+j > 0 {
				add(5*float64(i+1), 5*float64(j+1), 140)
			}
		}
	}
	lucky := len(y)
	add(-50, 50, 140+1000) // isolated, a median row with a lucky answer
	n := len(y)
	op := mustStated(study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 0, Upper: 400})
	s, err := newSession(Config{Iterations: n, Lengthscale: 1, DeltaUCB: 0.05, Batch: 1}, nil, z, n, dim, op, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := s.observe(i+1, i+1, i, y[i], Clip{}); err != nil {
			t.Fatal(err)
		}
	}
	res := s.finish()
	if res.GaussianRecommended == nil || *res.GaussianRecommended != lucky {
		t.Fatalf("the Gaussian rule recommends row %v, not the isolated lucky row %d: the test shows nothing", res.GaussianRecommended, lucky)
	}
	if res.Recommended >= 8 {
		t.Errorf("the shipped rule recommends row %d, want a row of the cluster (0–7), not the isolated lucky row %d", res.Recommended, lucky)
	}
	nf := s.post.NoiseFactors()
	if !(nf[lucky] > 1) || !(nf[0] < 1) {
		t.Errorf("EM noise factors: isolated lucky row %.3g, cluster row %.3g; want above 1 (trusted less than the Gaussian) and below 1", nf[lucky], nf[0])
	}
	t.Logf("noise factors: lucky %.3g, cluster %.3g, median row %.3g; means: lucky %.4g, cluster %.4g", nf[lucky], nf[0], nf[9], s.post.Mean(lucky), s.post.Mean(0))
}
