package gpucb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// Hyper holds the kernel hyperparameters fitted by maximum likelihood.
type Hyper struct {
	Lengthscale, SignalVariance, NoiseVariance float64
}

func (h Hyper) valid() bool {
	return finitePositive(h.Lengthscale) && finitePositive(h.SignalVariance) && finitePositive(h.NoiseVariance)
}

func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// FitOptions bound and control the maximum-likelihood fit. Zero fields take the
// defaults documented on each.
type FitOptions struct {
	// Lower and Upper bound each hyperparameter (all three must be positive and
	// Lower < Upper). Zero fields default, with l₀ a reference lengthscale (the
	// DefaultLengthscale of the candidates for GP.Refit, of the inputs for FitHyper)
	// and v the sample variance of the outputs fitted (1 when standardised or
	// constant), to l ∈ [l₀/20, 20 l₀], σ_y² ∈ [v/100, 100 v], σ_n² ∈ [10⁻⁶ v, v].
	Lower, Upper Hyper
	// Restarts is the number of random starting points besides the current
	// hyperparameters (default 3; negative means none).
	Restarts int
	// MaxIterations of L-BFGS per start (default 200).
	MaxIterations int
	// Seed of the random restarts.
	Seed uint64
}

// LogMarginalLikelihood returns the log marginal likelihood of outputs y at the t
// inputs x (row-major t×dim) under a zero-mean GP with kernel k and hyperparameters h,
//
//	log p(y) = −½ yᵀ A⁻¹ y − ½ log det A − (t/2) log 2π,   A = K + σ_n² I,
//
// and its gradient with respect to (log l, log σ_y², log σ_n²) (Rasmussen and
// Williams 2006, eq. 5.8 and 5.9):
//
//	∂ log p / ∂θ_j = ½ tr((α αᵀ − A⁻¹) ∂A/∂θ_j),   α = A⁻¹ y,
//
// with ∂A/∂log σ_y² = K, ∂A/∂log σ_n² = σ_n² I and ∂A/∂log l = σ_y² ρ'(d) where, for
// the squared exponential, ρ' = exp(−d²/2l²)·d²/l², and for Matérn 5/2 with s = √5 d/l,
// ρ' = (s²/3)(1 + s) e^{−s}. If A is not numerically positive definite, a jitter
// 10⁻¹⁰·(σ_y² + σ_n²)·10^k (k = 0…5) is added to its diagonal; the jitter is reported
// and the gradient is that of the jittered A with respect to the same parameters. It
// returns an error if even the largest jitter fails or an argument is invalid.
func LogMarginalLikelihood(k Kernel, x []float64, t, dim int, y []float64, h Hyper) (lml float64, grad [3]float64, jitter float64, err error) {
	return logMarginal(k, x, t, dim, y, h, inputNoise{}, nil)
}

// inputNoise describes noisy inputs for the likelihood: the GP's row prior (nil: exact
// inputs) and ids, the candidate index of each input (equal ids are the same noisy row,
// which keeps the full σ_y²).
type inputNoise struct {
	prior *rowPrior
	cands []float64 // the candidates (n × dim) that ids index
	ids   []int
}

// corr returns the correlation matrix (t × t) of the observed candidates under the
// expected kernel at lengthscale l (package documentation, "Noisy candidates").
func (in inputNoise) corr(k Kernel, l float64) []float64 {
	pr, t, dim := in.prior, len(in.ids), in.prior.dim
	w := pr.weights(l)
	c := pr.factor(l)
	x := make([]float64, t*dim) // kernel coordinates of the observed candidates
	for j, id := range in.ids {
		pr.shrunk(in.cands[id*dim:(id+1)*dim], w, x[j*dim:(j+1)*dim])
	}
	rho := make([]float64, t*t)
	for i := range t {
		xi := x[i*dim : (i+1)*dim]
		for j := 0; j <= i; j++ {
			r := 1.0
			if in.ids[i] != in.ids[j] {
				d2 := sqDist(xi, x[j*dim:(j+1)*dim])
				if k == Matern52 {
					s := math.Sqrt(5 * d2)
					r = c * (1 + s + s*s/3) * math.Exp(-s)
				} else {
					r = c * math.Exp(-d2/2)
				}
			}
			rho[i*t+j], rho[j*t+i] = r, r
		}
	}
	return rho
}

// logMarginal is LogMarginalLikelihood with the kernel the GP uses under input noise
// when noise.prior is set (the inputs x are then unused: the kernel is computed from
// the prior's coordinates of the candidates noise.ids). Its derivative with respect to
// log l is a central difference (step 1e-5 in log l; the lengthscale enters through the
// per-direction effective lengthscales and the factor c), the other two are exact.
// Observation j's noise variance is σ_n²·nf[j] (nil nf: σ_n² for all), as
// Posterior.ObserveNoise models answers clipped to their own ranges: the covariance is
// σ_y²ρ + σ_n² diag(nf), and ∂/∂log σ_n² = ½ σ_n² Σ_j nf_j (α_j² − (K⁻¹)_jj).
func logMarginal(k Kernel, x []float64, t, dim int, y []float64, h Hyper, noise inputNoise, nf []float64) (lml float64, grad [3]float64, jitter float64, err error) {
	if !k.valid() {
		return 0, grad, 0, fmt.Errorf("gpucb: invalid kernel %v", k)
	}
	if t < 1 || dim < 1 || len(x) != t*dim || len(y) != t {
		return 0, grad, 0, fmt.Errorf("gpucb: likelihood needs t×dim inputs and t outputs, got %d values, %d outputs for t=%d, dim=%d", len(x), len(y), t, dim)
	}
	if !h.valid() {
		return 0, grad, 0, fmt.Errorf("gpucb: hyperparameters must be positive and finite, got %+v", h)
	}
	factor := func(int) float64 { return 1 }
	if nf != nil {
		if len(nf) != t {
			return 0, grad, 0, fmt.Errorf("gpucb: likelihood needs %d noise factors, got %d", t, len(nf))
		}
		for _, f := range nf {
			if !(f > 0) || math.IsInf(f, 0) {
				return 0, grad, 0, fmt.Errorf("gpucb: noise factors must be positive and finite, got %g", f)
			}
		}
		factor = func(j int) float64 { return nf[j] }
	}
	var rho, drho []float64 // correlation ρ(d_ij) and ∂ρ/∂log l, t × t
	l := h.Lengthscale
	if noise.prior != nil {
		if len(noise.ids) != t {
			return 0, grad, 0, fmt.Errorf("gpucb: likelihood under input noise needs %d candidate ids, got %d", t, len(noise.ids))
		}
		const step = 1e-5
		rho = noise.corr(k, l)
		up, down := noise.corr(k, l*math.Exp(step)), noise.corr(k, l*math.Exp(-step))
		for q := range up {
			up[q] = (up[q] - down[q]) / (2 * step)
		}
		drho = up
	} else {
		rho, drho = make([]float64, t*t), make([]float64, t*t)
		for i := range t {
			xi := x[i*dim : (i+1)*dim]
			for j := 0; j <= i; j++ {
				d2 := sqDist(xi, x[j*dim:(j+1)*dim])
				var r, dr float64
				switch k {
				case SquaredExponential:
					q := d2 / (l * l)
					r = math.Exp(-q / 2)
					dr = r * q
				case Matern52:
					s := math.Sqrt(5*d2) / l
					e := math.Exp(-s)
					r = (1 + s + s*s/3) * e
					dr = s * s / 3 * (1 + s) * e
				}
				rho[i*t+j], rho[j*t+i] = r, r
				drho[i*t+j], drho[j*t+i] = dr, dr
			}
		}
	}
	sf, sn := h.SignalVariance, h.NoiseVariance
	a := mat.NewSymDense(t, nil)
	var ch mat.Cholesky
	ok := false
	for step := -1; step <= 5 && !ok; step++ {
		if step >= 0 {
			jitter = 1e-10 * (sf + sn) * math.Pow(10, float64(step))
		}
		for i := range t {
			for j := 0; j <= i; j++ {
				v := sf * rho[i*t+j]
				if i == j {
					v += sn*factor(i) + jitter
				}
				a.SetSym(i, j, v)
			}
		}
		ok = ch.Factorize(a)
	}
	if !ok {
		return 0, grad, 0, errors.New("gpucb: covariance matrix is not positive definite even with jitter")
	}
	alpha := mat.NewVecDense(t, nil)
	if err := ch.SolveVecTo(alpha, mat.NewVecDense(t, append([]float64(nil), y...))); err != nil {
		return 0, grad, 0, fmt.Errorf("gpucb: likelihood solve: %w", err)
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return 0, grad, 0, fmt.Errorf("gpucb: likelihood inverse: %w", err)
	}
	lml = -0.5*mat.Dot(alpha, mat.NewVecDense(t, append([]float64(nil), y...))) - 0.5*ch.LogDet() - float64(t)/2*math.Log(2*math.Pi)
	al := alpha.RawVector().Data
	var gl, gs, gn float64
	for i := range t {
		for j := range t {
			w := al[i]*al[j] - inv.At(i, j)
			gl += w * drho[i*t+j]
			gs += w * rho[i*t+j]
			if i == j {
				gn += w * factor(i)
			}
		}
	}
	grad = [3]float64{0.5 * sf * gl, 0.5 * sf * gs, 0.5 * sn * gn}
	if math.IsNaN(lml) || math.IsInf(lml, 0) {
		return 0, grad, jitter, errors.New("gpucb: log marginal likelihood is not finite")
	}
	return lml, grad, jitter, nil
}

// bounds are the log-space bounds of (l, σ_y², σ_n²).
type bounds struct{ lo, hi [3]float64 }

func (o FitOptions) bounds(refLS, vy float64) (bounds, error) {
	def := func(v, d float64) float64 {
		if v == 0 {
			return d
		}
		return v
	}
	lo := Hyper{def(o.Lower.Lengthscale, refLS/20), def(o.Lower.SignalVariance, vy/100), def(o.Lower.NoiseVariance, 1e-6*vy)}
	hi := Hyper{def(o.Upper.Lengthscale, refLS*20), def(o.Upper.SignalVariance, vy*100), def(o.Upper.NoiseVariance, vy)}
	if !lo.valid() || !hi.valid() {
		return bounds{}, fmt.Errorf("gpucb: fit bounds must be positive and finite, got lower %+v, upper %+v", lo, hi)
	}
	b := bounds{
		lo: [3]float64{math.Log(lo.Lengthscale), math.Log(lo.SignalVariance), math.Log(lo.NoiseVariance)},
		hi: [3]float64{math.Log(hi.Lengthscale), math.Log(hi.SignalVariance), math.Log(hi.NoiseVariance)},
	}
	for j := range 3 {
		if !(b.lo[j] < b.hi[j]) {
			return bounds{}, fmt.Errorf("gpucb: fit bounds must have lower < upper, got lower %+v, upper %+v", lo, hi)
		}
	}
	return b, nil
}

// The optimiser works on u ∈ R³ with log θ_j = lo_j + (hi_j − lo_j)·σ(u_j), σ the
// logistic function, so every point it tries is inside the bounds.
func (b bounds) hyper(u []float64) (Hyper, [3]float64) {
	var th, dth [3]float64
	for j := range 3 {
		s := 1 / (1 + math.Exp(-u[j]))
		th[j] = b.lo[j] + (b.hi[j]-b.lo[j])*s
		dth[j] = (b.hi[j] - b.lo[j]) * s * (1 - s)
	}
	return Hyper{math.Exp(th[0]), math.Exp(th[1]), math.Exp(th[2])}, dth
}

func (b bounds) unconstrained(h Hyper) []float64 {
	th := [3]float64{math.Log(h.Lengthscale), math.Log(h.SignalVariance), math.Log(h.NoiseVariance)}
	u := make([]float64, 3)
	for j := range 3 {
		s := (th[j] - b.lo[j]) / (b.hi[j] - b.lo[j])
		s = min(max(s, 1e-6), 1-1e-6)
		u[j] = math.Log(s / (1 - s))
	}
	return u
}

// FitHyper maximises LogMarginalLikelihood over the hyperparameters within the bounds
// of opt (log-space, through a logistic transform), by L-BFGS (gonum optimize) from
// init and from opt.Restarts random points, and returns the best hyperparameters with
// their log marginal likelihood. A start whose covariance cannot be factorised, or
// whose optimisation fails, is skipped; if no start yields a finite likelihood it
// returns an error and init.
func FitHyper(k Kernel, x []float64, t, dim int, y []float64, init Hyper, opt FitOptions) (Hyper, float64, error) {
	if t < 2 || dim < 1 || len(x) != t*dim || len(y) != t {
		return init, 0, fmt.Errorf("gpucb: fitting needs at least 2 observations with t×dim inputs, got t=%d, dim=%d, %d values, %d outputs", t, dim, len(x), len(y))
	}
	vy := sampleVariance(y)
	if !(vy > 0) || math.IsInf(vy, 0) {
		vy = 1
	}
	return fitHyper(k, x, t, dim, y, init, opt, DefaultLengthscale(x, t, dim), vy, inputNoise{}, nil)
}

// fitHyper maximises logMarginal over (l, σ_y², σ_n²) within opt's bounds, with the
// observations' noise factors nf (nil: all 1).
func fitHyper(k Kernel, x []float64, t, dim int, y []float64, init Hyper, opt FitOptions, refLS, vy float64, noise inputNoise, nf []float64) (Hyper, float64, error) {
	b, err := opt.bounds(refLS, vy)
	if err != nil {
		return init, 0, err
	}
	if opt.Restarts == 0 {
		opt.Restarts = 3
	}
	if opt.MaxIterations <= 0 {
		opt.MaxIterations = 200
	}
	const penalty = 1e300
	// L-BFGS asks for the value and then the gradient at the same point, and one
	// LogMarginalLikelihood call (a Cholesky and an inverse, O(t³)) yields both: keep the
	// last point's results so each point costs one evaluation. Local methods evaluate
	// one point at a time, so the cache needs no lock.
	var (
		lastU   [3]float64
		lastOK  bool
		lastLML float64
		lastGr  [3]float64
		lastErr error
	)
	eval := func(u []float64) (float64, [3]float64, error) {
		if !lastOK || [3]float64(u) != lastU {
			h, _ := b.hyper(u)
			lml, gr, _, err := logMarginal(k, x, t, dim, y, h, noise, nf)
			lastU, lastOK, lastLML, lastGr, lastErr = [3]float64(u), true, lml, gr, err
		}
		return lastLML, lastGr, lastErr
	}
	prob := optimize.Problem{
		Func: func(u []float64) float64 {
			lml, _, err := eval(u)
			if err != nil {
				return penalty
			}
			return -lml
		},
		Grad: func(g, u []float64) {
			_, dth := b.hyper(u)
			_, gr, err := eval(u)
			for j := range 3 {
				if err != nil {
					g[j] = 0
				} else {
					g[j] = -gr[j] * dth[j]
				}
			}
		},
	}
	starts := [][]float64{}
	if init.valid() {
		starts = append(starts, b.unconstrained(init))
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0xf17))
	for range max(opt.Restarts, 0) {
		u := make([]float64, 3)
		for j := range u {
			s := 0.05 + 0.9*rng.Float64()
			u[j] = math.Log(s / (1 - s))
		}
		starts = append(starts, u)
	}
	best, bestF := init, math.Inf(1)
	for _, u0 := range starts {
		res, err := optimize.Minimize(prob, u0, &optimize.Settings{MajorIterations: opt.MaxIterations, GradientThreshold: 1e-7}, &optimize.LBFGS{})
		var u []float64
		var f float64
		switch {
		case res != nil && res.X != nil:
			u, f = res.X, res.F
		case err != nil:
			continue
		}
		if f < penalty && f < bestF {
			h, _ := b.hyper(u)
			best, bestF = h, f
		}
	}
	if math.IsInf(bestF, 1) {
		return init, 0, errors.New("gpucb: no start of the likelihood fit reached a positive-definite covariance")
	}
	return best, -bestF, nil
}

func sampleVariance(y []float64) float64 {
	if len(y) < 2 {
		return 0
	}
	var m float64
	for _, v := range y {
		m += v
	}
	m /= float64(len(y))
	var s float64
	for _, v := range y {
		s += (v - m) * (v - m)
	}
	return s / float64(len(y)-1)
}

// Hyper returns the current kernel hyperparameters.
func (g *Posterior) Hyper() Hyper {
	return Hyper{g.cfg.Lengthscale, g.cfg.SignalVariance, g.cfg.NoiseVariance}
}

// SetHyper replaces the kernel hyperparameters and rebuilds the incremental state
// exactly, by replaying every observation in order (O(n·t·(dim + t)), reusing the
// buffers already allocated). If the replay fails (a conditional variance numerically
// zero under h) the previous hyperparameters and state are restored and the error is
// returned.
func (g *Posterior) SetHyper(h Hyper) error {
	if len(g.fant) > 0 {
		return fmt.Errorf("gpucb: new hyperparameters with %d fantasies pending; drop them first", len(g.fant))
	}
	cfg := g.cfg
	cfg.Lengthscale, cfg.SignalVariance, cfg.NoiseVariance = h.Lengthscale, h.SignalVariance, h.NoiseVariance
	if err := cfg.validate(); err != nil {
		return err
	}
	old := g.cfg
	idx := append([]int(nil), g.idx...)
	ys := append([]float64(nil), g.ys...)
	nf := append([]float64(nil), g.nf...)
	if err := g.rebuild(cfg, idx, ys, nf); err != nil {
		if err2 := g.rebuild(old, idx, ys, nf); err2 != nil {
			// Cannot happen: the same observations were accepted under old before.
			panic(fmt.Sprintf("gpucb: restoring the previous hyperparameters failed: %v", err2))
		}
		return err
	}
	return nil
}

// SetNoiseFactors sets each observation's noise factor (ObserveNoise), in the order
// observed, and recomputes the posterior. On error, or with fantasies pending
// (DropFantasies first), the posterior is left as it was.
func (g *Posterior) SetNoiseFactors(nf []float64) error {
	if len(g.fant) > 0 {
		return fmt.Errorf("gpucb: new noise factors with %d fantasies pending; drop them first", len(g.fant))
	}
	if len(nf) != len(g.idx) {
		return fmt.Errorf("gpucb: %d noise factors for %d observations", len(nf), len(g.idx))
	}
	idx := append([]int(nil), g.idx...)
	ys := append([]float64(nil), g.ys...)
	old := append([]float64(nil), g.nf...)
	if err := g.rebuild(g.cfg, idx, ys, append([]float64(nil), nf...)); err != nil {
		if err2 := g.rebuild(g.cfg, idx, ys, old); err2 != nil {
			panic(fmt.Sprintf("gpucb: restoring the previous noise factors failed: %v", err2))
		}
		return err
	}
	return nil
}

// NoiseFactors returns each observation's noise factor, in the order observed.
func (g *Posterior) NoiseFactors() []float64 { return append([]float64(nil), g.nf...) }

// Observed returns the observed indices and outputs, in the order observed.
func (g *Posterior) Observed() ([]int, []float64) {
	return append([]int(nil), g.idx...), append([]float64(nil), g.ys...)
}

// rebuild resets the state to no observations under cfg and replays (idx, ys) with
// noise factors nf.
func (g *Posterior) rebuild(cfg PosteriorConfig, idx []int, ys, nf []float64) error {
	g.cfg = cfg
	g.kdiag = cfg.SignalVariance
	g.prepareKernel()
	g.spare = append(g.spare[:0], g.rows...)
	g.rows = g.rows[:0]
	g.lpk, g.u, g.e, g.col, g.idx, g.ys, g.nf = g.lpk[:0], g.u[:0], g.e[:0], g.col[:0], g.idx[:0], g.ys[:0], g.nf[:0]
	clear(g.a)
	clear(g.b)
	clear(g.queried)
	clear(g.ls)
	for k := range g.vr {
		g.vr[k] = g.kdiag
	}
	g.shift, g.dmean, g.m2 = 0, 0, 0
	for j, i := range idx {
		if err := g.ObserveNoise(i, ys[j], nf[j]); err != nil {
			return err
		}
	}
	g.spare = g.spare[:0]
	return nil
}

// Refit fits the hyperparameters by maximum likelihood on the observations so far
// (FitHyper from the current hyperparameters; the outputs standardised as the GP
// models them when Config.Standardise is set; with Config.InputNoiseVariance, the
// likelihood of the expected kernel the GP uses, its σ² held fixed) and rebuilds the incremental state with
// SetHyper. On any failure the GP keeps its previous hyperparameters and state and the
// error is returned. It needs at least two observations.
func (g *Posterior) Refit(opt FitOptions) (Hyper, error) {
	t := g.T()
	cur := g.Hyper()
	if t < 2 {
		return cur, fmt.Errorf("gpucb: refit needs at least 2 observations, have %d", t)
	}
	if len(g.fant) > 0 {
		return cur, fmt.Errorf("gpucb: refit with %d fantasies pending; drop them first", len(g.fant))
	}
	x := make([]float64, t*g.dim)
	for j, i := range g.idx {
		copy(x[j*g.dim:(j+1)*g.dim], g.cands[i*g.dim:(i+1)*g.dim])
	}
	y := append([]float64(nil), g.ys...)
	vy := 1.0
	if g.cfg.Standardise {
		base, _, s := g.scale()
		for j := range y {
			y[j] = (y[j] - base) / s
		}
	} else if v := sampleVariance(y); v > 0 && !math.IsInf(v, 0) {
		vy = v
	}
	if g.refLS == 0 {
		g.refLS = DefaultLengthscale(g.cands, g.n, g.dim)
	}
	var noise inputNoise
	if g.prior != nil {
		noise = inputNoise{prior: g.prior, cands: g.cands, ids: g.idx}
	}
	h, _, err := fitHyper(g.cfg.Kernel, x, t, g.dim, y, cur, opt, g.refLS, vy, noise, g.nf)
	if err != nil {
		return cur, err
	}
	if err := g.SetHyper(h); err != nil {
		return cur, err
	}
	return h, nil
}
