package gpucb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privbo/privbo/internal/gptest"
	"github.com/privbo/privbo/internal/testrace"
)

// noisePosterior is an independent transcription (dense gonum algebra) of the row prior
// of the package documentation ("Noisy candidates") for noisy rows z = x + e with
// e ~ N(0, vI) and x ~ N(m, S): A = S(S + vI)⁻¹, x | z ~ N(m + A(z − m), vA).
type noisePosterior struct {
	dim int
	m   []float64
	a   *mat.Dense // A
	cov *mat.Dense // vA
}

// estimatedPosterior estimates S = Cov(z) − vI (eigenvalues clipped at 0) from the n
// candidates, as the GP does.
func estimatedPosterior(t *testing.T, cands []float64, n, dim int, v float64) noisePosterior {
	t.Helper()
	zm := mat.NewDense(n, dim, append([]float64(nil), cands...))
	m := make([]float64, dim)
	for k := range dim {
		m[k] = mat.Sum(zm.ColView(k)) / float64(n)
	}
	cov := mat.NewSymDense(dim, nil)
	for a := range dim {
		for b := range dim {
			var s float64
			for i := range n {
				s += (zm.At(i, a) - m[a]) * (zm.At(i, b) - m[b])
			}
			cov.SetSym(a, b, s/float64(n))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		t.Fatal("eigen")
	}
	var vec mat.Dense
	eig.VectorsTo(&vec)
	vals := eig.Values(nil)
	d := mat.NewDiagDense(dim, nil)
	for k, ev := range vals {
		d.SetDiag(k, max(ev-v, 0))
	}
	var s mat.Dense
	s.Product(&vec, d, vec.T())
	return posteriorOf(t, mat.NewSymDense(dim, s.RawMatrix().Data), m, v)
}

func posteriorOf(t *testing.T, s *mat.SymDense, m []float64, v float64) noisePosterior {
	t.Helper()
	dim := s.SymmetricDim()
	var sv mat.Dense
	sv.Add(s, identityTimes(dim, v))
	var inv mat.Dense
	if err := inv.Inverse(&sv); err != nil {
		t.Fatal(err)
	}
	var a mat.Dense
	a.Mul(s, &inv)
	var c mat.Dense
	c.Scale(v, &a)
	return noisePosterior{dim: dim, m: m, a: &a, cov: &c}
}

func identityTimes(dim int, v float64) *mat.Dense {
	d := mat.NewDense(dim, dim, nil)
	for k := range dim {
		d.Set(k, k, v)
	}
	return d
}

// kernel is the expected kernel between the rows behind two different noisy candidates
// zi and zj: with w = x_i − x_j ~ N(µ, 2vA), µ = A(zi − zj),
// E k_SE = σ_y² det(I + 2vA/l²)^{−1/2} exp(−½ µᵀ (l²I + 2vA)⁻¹ µ) (Girard et al. 2003,
// eq. 7, with the posterior of the rows in place of a flat one).
func (np noisePosterior) kernel(cfg Config, zi, zj []float64) float64 {
	dim := np.dim
	dz := make([]float64, dim)
	for k := range dim {
		dz[k] = zi[k] - zj[k]
	}
	var mu mat.VecDense
	mu.MulVec(np.a, mat.NewVecDense(dim, dz))
	l2 := cfg.Lengthscale * cfg.Lengthscale
	var mm mat.Dense
	mm.Scale(2, np.cov)
	mm.Add(&mm, identityTimes(dim, l2))
	var sol mat.VecDense
	if err := sol.SolveVec(&mm, &mu); err != nil {
		panic(err)
	}
	q := mat.Dot(&mu, &sol)
	det := mat.Det(&mm) / math.Pow(l2, float64(dim)) // det(I + 2vA/l²)
	c := 1 / math.Sqrt(det)
	switch cfg.Kernel {
	case SquaredExponential:
		return c * cfg.SignalVariance * math.Exp(-q/2)
	case Matern52:
		r := math.Sqrt(5 * q)
		return c * cfg.SignalVariance * (1 + r + r*r/3) * math.Exp(-r)
	}
	panic("bad kernel")
}

// expectedKernel is the GP's covariance between candidates a and b under input noise
// (the same index keeps the full σ_y²).
func expectedKernel(cfg Config, np noisePosterior, cands []float64, dim, a, b int) float64 {
	if a == b {
		return cfg.SignalVariance
	}
	return np.kernel(cfg, cands[a*dim:(a+1)*dim], cands[b*dim:(b+1)*dim])
}

// monteCarloKernel averages k(‖x_i − x_j‖²) over draws of the rows' posterior given
// zi and zj (independent, N(A z, vA) each, m = 0), returning the mean and its standard
// error.
func monteCarloKernel(t *testing.T, rng *rand.Rand, np noisePosterior, zi, zj []float64, draws int, k func(d2 float64) float64) (mean, se float64) {
	t.Helper()
	dim := np.dim
	sym := mat.NewSymDense(dim, nil)
	for a := range dim {
		for b := a; b < dim; b++ {
			sym.SetSym(a, b, (np.cov.At(a, b)+np.cov.At(b, a))/2)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		t.Fatal("eigen")
	}
	var vec mat.Dense
	eig.VectorsTo(&vec)
	sd := eig.Values(nil)
	var mi, mj mat.VecDense
	mi.MulVec(np.a, mat.NewVecDense(dim, zi))
	mj.MulVec(np.a, mat.NewVecDense(dim, zj))
	// The loop below runs draws·2·dim² times: it reads flat copies (the same values, in
	// the same order, as the matrices' accessors would give).
	diff, root, vf := make([]float64, dim), make([]float64, dim), make([]float64, dim*dim)
	for a := range dim {
		diff[a], root[a] = mi.AtVec(a)-mj.AtVec(a), math.Sqrt(max(sd[a], 0))
		for q := range dim {
			vf[a*dim+q] = vec.At(a, q)
		}
	}
	g := make([]float64, dim)
	w := make([]float64, dim)
	var sum, sum2 float64
	for range draws {
		copy(w, diff)
		for range 2 {
			for q := range g {
				g[q] = root[q] * rng.NormFloat64()
			}
			for a := range dim {
				for q := range dim {
					w[a] += vf[a*dim+q] * g[q]
				}
			}
		}
		var d2 float64
		for _, x := range w {
			d2 += x * x
		}
		kv := k(d2)
		sum += kv
		sum2 += kv * kv
	}
	mean = sum / float64(draws)
	return mean, math.Sqrt((sum2/float64(draws) - mean*mean) / float64(draws))
}

// TestExpectedSEMonteCarlo checks the expected squared-exponential kernel under input
// noise against a Monte Carlo average over the rows' posterior (x_i, x_j independent
// given z, each N(m + A(z − m), vA), drawn through the eigendecomposition of S) of
// 200,000 draws: |MC − formula| ≤ 5 standard errors of the average (a false failure
// about once in 1.7 million runs for a Gaussian average; the seed is fixed). One case
// has a direction of S with no signal (s_k = 0), where the row is known to sit at the
// mean. It also checks that the GP's kernel row equals the dense formula (1e-12) for
// another candidate and is σ_y² for the candidate itself.
func TestExpectedSEMonteCarlo(t *testing.T) {
	testrace.Statistical(t)
	const draws = 200_000
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		dim     int
		l, v, s float64
		zero    bool // one eigenvalue of S is 0
	}{{1, 1, 0.3, 1, false}, {3, 0.8, 0.1, 2, false}, {5, 2, 0.5, 0.7, true}, {10, 3, 0.4, 1, false}} {
		// S = B Bᵀ for a random B (one column dropped when zero).
		b := mat.NewDense(c.dim, c.dim, nil)
		for i := range c.dim {
			for j := range c.dim {
				if !(c.zero && j == 0) {
					b.Set(i, j, rng.NormFloat64()*c.l/math.Sqrt(float64(c.dim)))
				}
			}
		}
		var bb mat.Dense
		bb.Mul(b, b.T())
		s := mat.NewSymDense(c.dim, bb.RawMatrix().Data)
		m := make([]float64, c.dim)
		np := posteriorOf(t, s, m, c.v)
		zi, zj := make([]float64, c.dim), make([]float64, c.dim)
		for k := range c.dim {
			zi[k], zj[k] = rng.NormFloat64()*c.l, rng.NormFloat64()*c.l
		}
		mean, se := monteCarloKernel(t, rng, np, zi, zj, draws, func(d2 float64) float64 { return c.s * math.Exp(-d2/(2*c.l*c.l)) })
		cfg := Config{Kernel: SquaredExponential, Lengthscale: c.l, SignalVariance: c.s, InputNoiseVariance: c.v, Delta: 0.1}
		want := np.kernel(cfg, zi, zj)
		if math.Abs(mean-want) > 5*se {
			t.Errorf("dim %d, l %g, σ² %g: Monte Carlo %.6g ± %.2g, formula %.6g", c.dim, c.l, c.v, mean, se, want)
		}
	}
	// The GP's kernel row against the dense formula with S estimated from the candidates.
	const n, dim = 60, 4
	cands := randomCands(rng, n, dim)
	for k := range cands {
		cands[k] *= 3
	}
	cfg := Config{Kernel: SquaredExponential, Lengthscale: 0.7, SignalVariance: 1.5, InputNoiseVariance: 0.2, Delta: 0.1}
	g, err := New(cands, n, dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	np := estimatedPosterior(t, cands, n, dim, cfg.InputNoiseVariance)
	out := make([]float64, n)
	g.kernelRow(5, g.kc[5*dim:6*dim], 0, n, out)
	for z := range n {
		if want := expectedKernel(cfg, np, cands, dim, 5, z); !near(out[z], want, 1e-12) {
			t.Fatalf("kernel row at %d = %.15g, want %.15g", z, out[z], want)
		}
	}
}

// TestInputNoisePosteriorMatchesDense checks, after each of 30 observations (some at
// random rows, some repeating the last row), the incremental posterior mean and
// variance at every candidate against the dense posterior (gonum's Cholesky) built with
// the expected kernel, to 1e-9, for both kernels, raw and standardised outputs.
func TestInputNoisePosteriorMatchesDense(t *testing.T) {
	testrace.Statistical(t)
	const (
		n, dim, steps = 100, 3, 30
		tol           = 1e-9
	)
	for _, k := range []Kernel{SquaredExponential, Matern52} {
		for _, std := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/std=%v", k, std), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(5, uint64(k)))
				cands := randomCands(rng, n, dim)
				cfg := Config{Kernel: k, Lengthscale: 0.4, SignalVariance: 1.3, NoiseVariance: 0.01, InputNoiseVariance: 0.01,
					Delta: 0.05, Standardise: std, Capacity: 5}
				g, err := New(cands, n, dim, cfg)
				if err != nil {
					t.Fatal(err)
				}
				np := estimatedPosterior(t, cands, n, dim, cfg.InputNoiseVariance)
				// The expected kernel between every two candidates, computed once per
				// setting of cfg: the dense reference reads it 31 times.
				table := func() func(a, b int) float64 {
					kt := make([]float64, n*n)
					for a := range n {
						for b := range n {
							kt[a*n+b] = expectedKernel(cfg, np, cands, dim, a, b)
						}
					}
					return func(a, b int) float64 { return kt[a*n+b] }
				}
				kf := table()
				var idx []int
				var ys []float64
				for step := 0; step <= steps; step++ {
					mu, vr := denseIndexPosterior(t, n, kf, cfg.NoiseVariance, std, idx, ys)
					for z := range n {
						if got := g.Mean(z); !near(got, mu[z], tol) {
							t.Fatalf("t=%d: Mean(%d) = %.15g, want %.15g", step, z, got, mu[z])
						}
						if got := g.Variance(z); !near(got, vr[z], tol) {
							t.Fatalf("t=%d: Variance(%d) = %.15g, want %.15g", step, z, got, vr[z])
						}
					}
					if step == steps {
						break
					}
					i, err := g.Next()
					if err != nil {
						t.Fatal(err)
					}
					if step%3 == 1 {
						i = rng.IntN(n)
					}
					if step%5 == 3 {
						i = idx[len(idx)-1] // a repeat: the same noisy row
					}
					y := smooth(cands[i*dim:(i+1)*dim]) + 0.1*rng.NormFloat64()
					if err := g.Observe(i, y); err != nil {
						t.Fatalf("t=%d: Observe(%d): %v", step, i, err)
					}
					idx, ys = append(idx, i), append(ys, y)
				}
				// Refit and SetHyper keep the input noise: the rebuilt GP still matches.
				if err := g.SetHyper(Hyper{0.5, 1.1, 0.02}); err != nil {
					t.Fatal(err)
				}
				cfg.Lengthscale, cfg.SignalVariance, cfg.NoiseVariance = 0.5, 1.1, 0.02
				kf = table()
				mu, vr := denseIndexPosterior(t, n, kf, cfg.NoiseVariance, std, idx, ys)
				for z := range n {
					if !near(g.Mean(z), mu[z], tol) || !near(g.Variance(z), vr[z], tol) {
						t.Fatalf("after SetHyper: candidate %d: (%g, %g), want (%g, %g)", z, g.Mean(z), g.Variance(z), mu[z], vr[z])
					}
				}
			})
		}
	}
}

// denseIndexPosterior is the posterior of a GP whose covariance between candidates a
// and b is k(a, b), after observing ys at candidates idx with noise variance nv,
// computed from scratch (standardised as densePosterior does when std).
func denseIndexPosterior(t *testing.T, n int, k func(a, b int) float64, nv float64, std bool, idx []int, ys []float64) (mu, vr []float64) {
	t.Helper()
	nt := len(idx)
	mu, vr = make([]float64, n), make([]float64, n)
	m, s := 0.0, 1.0
	if std && nt > 0 {
		for _, y := range ys {
			m += y
		}
		m /= float64(nt)
		if nt >= 2 {
			var ss float64
			for _, y := range ys {
				ss += (y - m) * (y - m)
			}
			if sd := math.Sqrt(ss / float64(nt-1)); sd > 0 {
				s = sd
			}
		}
	}
	if nt == 0 {
		for z := range n {
			mu[z], vr[z] = m, k(z, z)
		}
		return mu, vr
	}
	chol := gptest.Factor(t, nt, func(p, q int) float64 { return k(idx[p], idx[q]) }, nv)
	yt := mat.NewVecDense(nt, nil)
	for p, y := range ys {
		yt.SetVec(p, (y-m)/s)
	}
	var alpha mat.VecDense
	if err := chol.SolveVecTo(&alpha, yt); err != nil {
		t.Fatal(err)
	}
	ks := mat.NewDense(nt, n, nil)
	for p := range nt {
		for z := range n {
			ks.Set(p, z, k(idx[p], z))
		}
	}
	var x mat.Dense
	if err := chol.SolveTo(&x, ks); err != nil {
		t.Fatal(err)
	}
	for z := range n {
		var mz, qz float64
		for p := range nt {
			mz += ks.At(p, z) * alpha.AtVec(p)
			qz += ks.At(p, z) * x.At(p, z)
		}
		mu[z], vr[z] = m+s*mz, s*s*(k(z, z)-qz)
	}
	return mu, vr
}

// TestInputNoiseZeroIsExact checks that InputNoiseVariance 0 gives the GP of the
// plain kernel (the dense reference with refKernel, to 1e-9).
func TestInputNoiseZeroIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const n, dim = 300, 4
	cands := randomCands(rng, n, dim)
	cfg := Config{Kernel: SquaredExponential, Lengthscale: 0.5, SignalVariance: 1, NoiseVariance: 1e-3, Delta: 0.05, Standardise: true}
	g, err := New(cands, n, dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := g.Observe(i*7, smooth(cands[i*7*dim:(i*7+1)*dim])); err != nil {
			t.Fatal(err)
		}
	}
	// Reference: the same observations, the kernel computed by refKernel.
	mu, vr := densePosterior(t, cands, n, dim, cfg, g.idx, g.ys)
	for z := range n {
		if !near(g.Mean(z), mu[z], 1e-9) || !near(g.Variance(z), vr[z], 1e-9) {
			t.Fatalf("candidate %d: (%g, %g), want (%g, %g)", z, g.Mean(z), g.Variance(z), mu[z], vr[z])
		}
	}
}

// TestInputNoiseLikelihoodGradient checks the gradient of the likelihood under input
// noise (expected kernel, repeated candidates) against central finite differences.
func TestInputNoiseLikelihoodGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const m, dim = 20, 3
	x := randomCands(rng, m, dim)
	ids := make([]int, m)
	for j := range ids {
		ids[j] = j
	}
	// Rows 5 and 6 are the same candidate observed twice.
	copy(x[6*dim:7*dim], x[5*dim:6*dim])
	ids[6] = 5
	y := make([]float64, m)
	for j := range y {
		y[j] = smooth(x[j*dim:(j+1)*dim]) + 0.05*rng.NormFloat64()
	}
	for _, k := range []Kernel{SquaredExponential, Matern52} {
		pr, err := newRowPrior(x, m, dim, 0.02)
		if err != nil {
			t.Fatal(err)
		}
		noise := inputNoise{prior: pr, cands: x, ids: ids}
		h := Hyper{0.6, 1.2, 0.05}
		_, _, jit, err := logMarginal(k, x, m, dim, y, h, noise, nil)
		if err != nil || jit != 0 {
			t.Fatalf("%v: err %v, jitter %g", k, err, jit)
		}
		checkGradient(t, k.String(), h, func(h Hyper) (float64, [3]float64, error) {
			v, g, _, err := logMarginal(k, x, m, dim, y, h, noise, nil)
			return v, g, err
		})
	}
}

// TestDebiasLengthscale checks that the de-biased median distance of noisy rows comes
// within 5% of the median distance of the noise-free rows (n = 20,000 rows of
// dimension 10 spread with sd 1 per coordinate, noise variance 0.5 per coordinate,
// which inflates the median by about 22%), and the floor m/10.
func TestDebiasLengthscale(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dim, v = 20_000, 10, 0.5
	x := make([]float64, n*dim)
	z := make([]float64, n*dim)
	for k := range x {
		x[k] = rng.NormFloat64()
		z[k] = x[k] + math.Sqrt(v)*rng.NormFloat64()
	}
	clean, noisy := DefaultLengthscale(x, n, dim), DefaultLengthscale(z, n, dim)
	if noisy < 1.15*clean {
		t.Fatalf("noisy median %g is not inflated against %g", noisy, clean)
	}
	if got := DebiasLengthscale(noisy, dim, v); math.Abs(got-clean) > 0.05*clean {
		t.Errorf("DebiasLengthscale = %g, want within 5%% of the noise-free %g (noisy %g)", got, clean, noisy)
	}
	if got := DebiasLengthscale(1, 10, 1); got != 0.1 {
		t.Errorf("DebiasLengthscale when noise explains everything = %g, want the floor 0.1", got)
	}
	if got := DebiasLengthscale(2, 3, 0); got != 2 {
		t.Errorf("DebiasLengthscale without noise = %g, want 2", got)
	}
}

func TestInputNoiseValidation(t *testing.T) {
	for _, v := range []float64{-1, math.Inf(1), math.NaN()} {
		if _, err := New([]float64{0}, 1, 1, Config{Lengthscale: 1, SignalVariance: 1, Delta: 0.1, InputNoiseVariance: v}); err == nil {
			t.Errorf("InputNoiseVariance %g accepted", v)
		}
	}
}

// TestMaternInputNoiseApproximation measures the Matérn 5/2 kernel under input noise
// (the structure of the squared exponential's expectation: effective lengthscales and
// the factor c) against a Monte Carlo average of the Matérn kernel over the rows'
// posterior (100,000 draws) for pairs at distances 0, l/2, l and 2l along a direction
// of S: it must be within 15% of the expectation.
func TestMaternInputNoiseApproximation(t *testing.T) {
	testrace.Statistical(t)
	const draws = 100_000
	rng := rand.New(rand.NewPCG(31, 32))
	matern := func(l float64) func(d2 float64) float64 {
		return func(d2 float64) float64 {
			s := math.Sqrt(5*d2) / l
			return (1 + s + s*s/3) * math.Exp(-s)
		}
	}
	for _, c := range []struct {
		dim     int
		l, v, s float64 // S = s·I
	}{{1, 1, 0.3, 1}, {3, 0.8, 0.1, 0.5}, {5, 2, 0.5, 4}, {10, 3, 0.4, 2}} {
		cfg := Config{Kernel: Matern52, Lengthscale: c.l, SignalVariance: 1, InputNoiseVariance: c.v}
		s := mat.NewSymDense(c.dim, nil)
		for k := range c.dim {
			s.SetSym(k, k, c.s)
		}
		np := posteriorOf(t, s, make([]float64, c.dim), c.v)
		for _, dist := range []float64{0, c.l / 2, c.l, 2 * c.l} {
			zi, zj := make([]float64, c.dim), make([]float64, c.dim)
			zi[0] = dist * (c.s + c.v) / c.s // so that the posterior means are dist apart
			mc, _ := monteCarloKernel(t, rng, np, zi, zj, draws, matern(c.l))
			if got := np.kernel(cfg, zi, zj); math.Abs(got-mc) > 0.15*mc {
				t.Errorf("dim %d, l %g, σ² %g, distance %g: approximation %.4g, Monte Carlo %.4g", c.dim, c.l, c.v, dist, got, mc)
			}
		}
	}
}
