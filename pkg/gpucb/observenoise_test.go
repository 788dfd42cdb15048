package gpucb

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestObserveNoiseMatchesDense: with per-observation noise factors f_j (ObserveNoise)
// the posterior mean and variance at every candidate equal the dense computation with
// covariance K + diag(σ_n²·f_j) (Rasmussen & Williams 2006, eq. 2.22–2.24, with a
// known noise variance per observation), and SetHyper keeps each observation's factor.
// A GP that ignored the factors (all 1) differs by far more than the tolerance.
func TestObserveNoiseMatchesDense(t *testing.T) {
	const n, dim = 60, 2
	rng := rand.New(rand.NewPCG(9, 9))
	cands := randomCands(rng, n, dim)
	cfg := Config{Kernel: SquaredExponential, Lengthscale: 0.4, SignalVariance: 1.3, NoiseVariance: 0.2, Delta: 0.05}
	g, err := New(cands, n, dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	var ys, fs []float64
	for step := range 12 {
		i := rng.IntN(n)
		f := []float64{1, 0.25, 4, 0.01}[step%4]
		y := smooth(cands[i*dim:(i+1)*dim]) + 0.1*rng.NormFloat64()
		if err := g.ObserveNoise(i, y, f); err != nil {
			t.Fatal(err)
		}
		idx, ys, fs = append(idx, i), append(ys, y), append(fs, f)
	}
	check := func(what string, g *GP, cfg Config) {
		tn := len(idx)
		a := mat.NewSymDense(tn, nil)
		for p := range tn {
			for q := 0; q <= p; q++ {
				v := refKernel(cfg, cands[idx[p]*dim:(idx[p]+1)*dim], cands[idx[q]*dim:(idx[q]+1)*dim])
				if p == q {
					v += cfg.NoiseVariance * fs[p]
				}
				a.SetSym(p, q, v)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(a) {
			t.Fatal("dense covariance not positive definite")
		}
		alpha := mat.NewVecDense(tn, nil)
		if err := ch.SolveVecTo(alpha, mat.NewVecDense(tn, append([]float64(nil), ys...))); err != nil {
			t.Fatal(err)
		}
		for z := range n {
			k := mat.NewVecDense(tn, nil)
			for p := range tn {
				k.SetVec(p, refKernel(cfg, cands[z*dim:(z+1)*dim], cands[idx[p]*dim:(idx[p]+1)*dim]))
			}
			mu := mat.Dot(k, alpha)
			w := mat.NewVecDense(tn, nil)
			if err := ch.SolveVecTo(w, k); err != nil {
				t.Fatal(err)
			}
			vr := cfg.SignalVariance - mat.Dot(k, w)
			if !near(g.Mean(z), mu, 1e-9) || !near(g.Variance(z), vr, 1e-9) {
				t.Fatalf("%s: candidate %d: mean %.12g variance %.12g, want %.12g and %.12g", what, z, g.Mean(z), g.Variance(z), mu, vr)
			}
		}
	}
	check("ObserveNoise", g, cfg)
	h := Hyper{Lengthscale: 0.3, SignalVariance: 2, NoiseVariance: 0.5}
	if err := g.SetHyper(h); err != nil {
		t.Fatal(err)
	}
	cfg2 := cfg
	cfg2.Lengthscale, cfg2.SignalVariance, cfg2.NoiseVariance = h.Lengthscale, h.SignalVariance, h.NoiseVariance
	check("after SetHyper", g, cfg2)
	if _, err := g.Refit(FitOptions{}); err == nil {
		t.Error("Refit with observations of different noise factors succeeded; it assumes one noise variance")
	}
	// Ignoring the factors gives another posterior.
	flat, _ := New(cands, n, dim, cfg2)
	for j, i := range idx {
		if err := flat.Observe(i, ys[j]); err != nil {
			t.Fatal(err)
		}
	}
	if d := math.Abs(flat.Mean(idx[2]) - g.Mean(idx[2])); d < 1e-3 {
		t.Errorf("posterior with and without the noise factors differ by %g at an observed row; the test would not see the factors ignored", d)
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if err := g.ObserveNoise(0, 1, bad); err == nil {
			t.Errorf("ObserveNoise with factor %g accepted", bad)
		}
	}
}
