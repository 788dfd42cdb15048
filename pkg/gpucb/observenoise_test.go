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
	// Refit fits under the same heteroscedastic likelihood: the fitted hyperparameters
	// are a stationary point of the dense log marginal likelihood with covariance
	// σ_y²ρ + σ_n² diag(f_j) (its gradient in log space vanishes, or the fit stopped at
	// a bound), and better than the same fit that ignored the factors.
	got, err := g.Refit(FitOptions{Seed: 1})
	if err != nil {
		t.Fatalf("Refit with per-observation noise factors: %v", err)
	}
	x := make([]float64, len(idx)*dim)
	for j, i := range idx {
		copy(x[j*dim:], cands[i*dim:(i+1)*dim])
	}
	if cfg.Standardise {
		t.Fatal("the dense likelihood below takes the raw answers; the test's GP must not standardise")
	}
	refLS, vy := DefaultLengthscale(cands, n, dim), sampleVariance(ys)
	lml, grad, _, err := logMarginal(cfg.Kernel, x, len(idx), dim, ys, got, inputNoise{}, fs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FitOptions{}.bounds(refLS, vy)
	if err != nil {
		t.Fatal(err)
	}
	th := [3]float64{math.Log(got.Lengthscale), math.Log(got.SignalVariance), math.Log(got.NoiseVariance)}
	for j := range 3 {
		atBound := math.Abs(th[j]-b.lo[j]) < 1e-3 || math.Abs(th[j]-b.hi[j]) < 1e-3
		if !atBound && math.Abs(grad[j]) > 1e-3*max(1, math.Abs(lml)) {
			t.Errorf("refit hyperparameters %+v: gradient[%d] = %g of the heteroscedastic likelihood, want ≈ 0", got, j, grad[j])
		}
	}
	ignored, _, err := fitHyper(cfg.Kernel, x, len(idx), dim, ys, got, FitOptions{Seed: 1}, refLS, vy, inputNoise{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	withIgnored, _, _, err := logMarginal(cfg.Kernel, x, len(idx), dim, ys, ignored, inputNoise{}, fs)
	if err != nil {
		t.Fatal(err)
	}
	if !(lml >= withIgnored-1e-9) {
		t.Errorf("heteroscedastic likelihood at the refit %g < at the fit that ignored the factors %g", lml, withIgnored)
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

// TestFantasizeNoise: a fantasy with noise factor f (FantasizeNoise) shrinks the variance
// exactly as a real observation of the posterior mean with factor f would (a twin
// posterior that observes it), on a posterior whose real observations have mixed
// factors; the mean is unchanged, the fantasy's factor is not one of the observations'
// (NoiseFactors), SetNoiseFactors waits for the fantasies to be dropped, and a fantasy
// of factor 1 gives another variance, so the test would see the factor ignored.
func TestFantasizeNoise(t *testing.T) {
	const n, dim = 80, 2
	rng := rand.New(rand.NewPCG(4, 21))
	cands := randomCands(rng, n, dim)
	cfg := PosteriorConfig{Kernel: SquaredExponential, Lengthscale: 0.4, SignalVariance: 1.1, NoiseVariance: 0.3}
	build := func() *Posterior {
		p, err := NewPosterior(cands, n, dim, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 5))
		for step, i := range r.Perm(n)[:10] {
			if err := p.ObserveNoise(i, smooth(cands[i*dim:(i+1)*dim]), []float64{1, 0.25, 0.04}[step%3]); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	p, twin := build(), build()
	const f = 0.04
	i := 3
	mean := make([]float64, n)
	for z := range n {
		mean[z] = p.Mean(z)
	}
	if err := p.FantasizeNoise(i, f); err != nil {
		t.Fatal(err)
	}
	if err := twin.ObserveNoise(i, twin.Mean(i), f); err != nil {
		t.Fatal(err)
	}
	for z := range n {
		if !near(p.Variance(z), twin.Variance(z), 1e-9) || p.Mean(z) != mean[z] {
			t.Fatalf("candidate %d: fantasy variance %.12g mean %.12g, want %.12g and %.12g", z, p.Variance(z), p.Mean(z), twin.Variance(z), mean[z])
		}
	}
	if got := p.NoiseFactors(); len(got) != p.T() {
		t.Errorf("NoiseFactors has %d entries with a fantasy pending, want the %d real observations'", len(got), p.T())
	}
	if err := p.SetNoiseFactors(p.NoiseFactors()); err == nil {
		t.Error("SetNoiseFactors with a fantasy pending succeeded")
	}
	one := build()
	if err := one.Fantasize(i); err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(one.Variance(i) - p.Variance(i)); d < 1e-3 {
		t.Errorf("fantasies of factor 1 and %g differ by %g in variance at the row; the test would not see the factor ignored", f, d)
	}
	p.DropFantasies()
	if err := p.SetNoiseFactors(p.NoiseFactors()); err != nil {
		t.Errorf("SetNoiseFactors after DropFantasies: %v", err)
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if err := p.FantasizeNoise(0, bad); err == nil || p.Pending() != 0 {
			t.Errorf("FantasizeNoise with factor %g accepted", bad)
		}
	}
}

// TestLogMarginalNoiseFactorsGradient: with per-observation noise factors the analytic
// gradient of the log marginal likelihood equals central finite differences in every
// log hyperparameter, and factors of 1 give exactly the likelihood without factors.
func TestLogMarginalNoiseFactorsGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []Kernel{SquaredExponential, Matern52} {
		h := Hyper{0.5, 1.2, 0.1}
		x, y := gpSample(t, rng, k, 20, 2, h)
		nf := make([]float64, 20)
		ones := make([]float64, 20)
		for j := range nf {
			nf[j], ones[j] = []float64{1, 0.25, 4, 0.01}[j%4], 1
		}
		checkGradient(t, k.String(), h, func(h Hyper) (float64, [3]float64, error) {
			v, g, _, err := logMarginal(k, x, 20, 2, y, h, inputNoise{}, nf)
			return v, g, err
		})
		a, ga, _, err1 := logMarginal(k, x, 20, 2, y, h, inputNoise{}, ones)
		b, gb, _, err2 := logMarginal(k, x, 20, 2, y, h, inputNoise{}, nil)
		if err1 != nil || err2 != nil || a != b || ga != gb {
			t.Errorf("%v: factors of 1 give %g %v, none %g %v", k, a, ga, b, gb)
		}
		if _, _, _, err := logMarginal(k, x, 20, 2, y, h, inputNoise{}, nf[:3]); err == nil {
			t.Errorf("%v: 3 noise factors for 20 observations accepted", k)
		}
	}
}
