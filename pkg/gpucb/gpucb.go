package gpucb

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/privbo/privbo/internal/hugepage"
)

// PosteriorConfig holds the GP prior and the execution settings of a Posterior.
type PosteriorConfig struct {
	Kernel Kernel
	// Lengthscale l > 0 of the kernel, in the units of the candidates
	// (see DefaultLengthscale).
	Lengthscale float64
	// SignalVariance σ_y² > 0 and NoiseVariance σ_n² ≥ 0. With Standardise
	// they are in standardised output units.
	SignalVariance, NoiseVariance float64
	// Standardise models (y − mean)/sd of the outputs seen so far; Mean,
	// Variance and the acquisition stay in the original units.
	Standardise bool
	// Workers is the number of goroutines for the O(n) loops; 0 means
	// GOMAXPROCS.
	Workers int
	// Capacity is the expected number of observations (fantasies included),
	// used to size buffers up front; more observations are still accepted.
	Capacity int
	// InputNoiseVariance σ² ≥ 0 is the variance of independent Gaussian noise
	// in every coordinate of every candidate: the candidates are z = x + e,
	// e ~ N(0, σ²I), and the objective is a function of the noise-free x (a
	// private projection's release, package projection's ProjectGaussian). The
	// GP then uses the kernel's expectation over the noise-free rows given the
	// candidates, under a Gaussian prior on the rows estimated from the
	// candidates (see "Noisy candidates" in the package documentation); 0
	// treats the candidates as exact.
	InputNoiseVariance float64
	// Lazy stores no rows of V: each candidate keeps its state as of the last
	// observation it was brought up to date at, and a scan recomputes only the
	// candidates whose bound could reach the best score ("Lazy evaluation" in the
	// package documentation). ArgmaxUpper and UCB choose exactly as without Lazy
	// in O(n) memory; Argmax, and Mean or Variance of a stale candidate, recompute.
	// With every column kept it is also the faster loop at 10⁵–10⁶ candidates
	// (docs/EXPERIMENTS.md, "GP-UCB at 10⁷ candidates").
	Lazy bool
	// LazyColumns, with Lazy, is how many candidates keep their column of V, so
	// that bringing them up to date costs what the eager update does (8 bytes per
	// row each, Capacity rows reserved); the others start again from the kernel.
	// 0 lets every candidate keep one (memory as without Lazy).
	LazyColumns int
}

// Config holds the settings of a GP: those of its Posterior (the fields of
// PosteriorConfig, documented there) and of its UCB rule (Delta, ConstantBeta,
// SkipQueried, documented on UCB), in one flat struct.
type Config struct {
	Kernel                        Kernel
	Lengthscale                   float64
	SignalVariance, NoiseVariance float64
	Delta, ConstantBeta           float64
	SkipQueried, Standardise      bool
	Workers, Capacity             int
	InputNoiseVariance            float64
	Lazy                          bool
	LazyColumns                   int
}

// lazyStride is the rows reserved in each kept column of V at the given Capacity.
func lazyStride(capacity int) int { return max(capacity, 16) }

// LazyColumnsWithin is the PosteriorConfig.LazyColumns whose columns of V fit in the
// given bytes with n candidates at capacity observations: at most n, at least 1.
func LazyColumnsWithin(bytes, n, capacity int) int {
	return max(1, min(n, bytes/(8*lazyStride(capacity))))
}

// Posterior returns the posterior's part of c.
func (c Config) Posterior() PosteriorConfig {
	return PosteriorConfig{Kernel: c.Kernel, Lengthscale: c.Lengthscale, SignalVariance: c.SignalVariance,
		NoiseVariance: c.NoiseVariance, Standardise: c.Standardise, Workers: c.Workers, Capacity: c.Capacity,
		InputNoiseVariance: c.InputNoiseVariance, Lazy: c.Lazy, LazyColumns: c.LazyColumns}
}

// UCB returns the acquisition rule's part of c.
func (c Config) UCB() UCB {
	return UCB{Delta: c.Delta, ConstantBeta: c.ConstantBeta, SkipQueried: c.SkipQueried}
}

// Posterior is an exact GP posterior over a fixed candidate set, updated
// incrementally (package documentation). Create one with NewPosterior; it is
// not safe for concurrent use. Memory: about 8·n bytes per observation (one
// row of V) plus four length-n buffers (five while fantasies are pending),
// beside the caller's candidates; with Lazy, 8·Capacity bytes per column kept
// (LazyColumns) plus about 33 bytes per candidate.
type Posterior struct {
	cands  []float64
	n, dim int
	cfg    PosteriorConfig
	kdiag  float64 // k(z, z) = σ_y²
	kern   kernelParams
	prior  *rowPrior // nil without input noise
	kc     []float64 // kernel coordinates: cands, or under input noise rowPrior.coords

	// Parallel execution: candidates [bounds[w], bounds[w+1]) go to worker w.
	bounds    []int
	bestIdx   []int
	bestScore []float64

	// V rows: rows[j] has length n. Backing chunks are allocated
	// geometrically and never copied.
	rows      [][]float64
	chunkFree []float64   // unused tail of the current chunk
	spare     [][]float64 // rows to reuse while SetHyper replays the observations
	refLS     float64     // DefaultLengthscale of cands, computed by Refit when needed

	lpk []float64 // packed lower-triangular L, row j at offset j(j+1)/2
	u   []float64 // L⁻¹ (y − shift)
	e   []float64 // L⁻¹ 1 (Standardise only)
	col []float64 // scratch: V_j(i), j < t

	a  []float64 // Σ_j V_j(z) u_j
	b  []float64 // Σ_j V_j(z) e_j (Standardise only)
	vr []float64 // σ̃²(z) = k(z,z) − Σ_j V_j(z)², in model units

	queried []bool
	idx     []int     // observed indices, in order
	ys      []float64 // observed outputs, in order
	nf      []float64 // each observation's noise variance as a multiple of NoiseVariance (ObserveNoise)

	// Standardisation: shift = first output; Welford mean/M2 of y − shift.
	shift, dmean, m2 float64

	// Fantasies (Fantasize): rows of V past T() are theirs; fant holds their
	// candidates, fantWas whether each was queried before, vrReal σ̃² under the
	// real observations alone, restored by DropFantasies.
	fant    []int
	fantWas []bool
	vrReal  []float64

	// Lazy evaluation (lazy.go): ls[z] real observations are reflected in a, b
	// and vr at z; lz holds one scratch per worker and one for the caller.
	// Candidate z's column of V is cache[slot[z]·stride:], if slot[z] ≥ 0.
	ls               []int32
	lz               []lazyScratch
	w2               []float64
	slot             []int32
	cache            []float64
	stride, maxSlots int
	nslots           atomic.Int64
	seeds            []int     // the previous scan's best candidates
	chunkIdx         []int     // the lazy scan's winner per chunk (or −1)
	chunkScore       []float64 // and its score
}

// Tile width (candidates) of the inner loops: the 16 KiB of the new row being
// accumulated stay in cache while the rows of V stream past in long runs.
const tile = 2048

// minBlock is the smallest number of candidates worth a goroutine.
const minBlock = 2048

// NewPosterior returns the prior (a posterior with no observations) over the
// n candidates cands (row-major n×dim). cands is not copied: the caller must
// not modify it while the posterior is in use.
func NewPosterior(cands []float64, n, dim int, cfg PosteriorConfig) (*Posterior, error) {
	if n < 1 {
		return nil, fmt.Errorf("gpucb: need at least one candidate, got n = %d", n)
	}
	if dim < 1 {
		return nil, fmt.Errorf("gpucb: dimension must be positive, got %d", dim)
	}
	if n > math.MaxInt/dim || len(cands) != n*dim {
		return nil, fmt.Errorf("gpucb: candidates have %d values, want n×dim = %d×%d", len(cands), n, dim)
	}
	for k, x := range cands {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("gpucb: candidate %d, coordinate %d is not finite (%g)", k/dim, k%dim, x)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := cfg.Workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	w = max(1, min(w, (n+minBlock-1)/minBlock))
	g := &Posterior{
		cands:     cands,
		n:         n,
		dim:       dim,
		cfg:       cfg,
		kdiag:     cfg.SignalVariance,
		bounds:    make([]int, w+1),
		bestIdx:   make([]int, w),
		bestScore: make([]float64, w),
		a:         make([]float64, n),
		vr:        make([]float64, n),
		queried:   make([]bool, n),
	}
	for k := range w + 1 {
		g.bounds[k] = int(int64(n) * int64(k) / int64(w))
	}
	if cfg.InputNoiseVariance > 0 {
		p, err := newRowPrior(cands, n, dim, cfg.InputNoiseVariance)
		if err != nil {
			return nil, err
		}
		g.prior = p
	}
	g.prepareKernel()
	for k := range g.vr {
		g.vr[k] = g.kdiag
	}
	if cfg.Standardise {
		g.b = make([]float64, n)
	}
	if cfg.Lazy {
		if n > math.MaxInt32 {
			return nil, fmt.Errorf("gpucb: lazy evaluation supports at most %d candidates, got %d", math.MaxInt32, n)
		}
		g.ls = make([]int32, n)
		g.lz = make([]lazyScratch, w+1)
		g.maxSlots, g.stride = n, lazyStride(cfg.Capacity)
		if cfg.LazyColumns > 0 {
			g.maxSlots = min(n, cfg.LazyColumns)
		}
		g.slot = make([]int32, n)
		for k := range g.slot {
			g.slot[k] = -1
		}
	}
	c := cfg.Capacity
	g.rows = make([][]float64, 0, c)
	g.lpk = make([]float64, 0, c*(c+1)/2)
	g.u = make([]float64, 0, c)
	g.e = make([]float64, 0, c)
	g.col = make([]float64, 0, c)
	g.idx = make([]int, 0, c)
	g.ys = make([]float64, 0, c)
	g.nf = make([]float64, 0, c)
	return g, nil
}

func (c *PosteriorConfig) validate() error {
	if !c.Kernel.valid() {
		return fmt.Errorf("gpucb: invalid kernel %v", c.Kernel)
	}
	if !(c.Lengthscale > 0) || math.IsInf(c.Lengthscale, 0) {
		return fmt.Errorf("gpucb: lengthscale must be positive and finite, got %g", c.Lengthscale)
	}
	if !(c.SignalVariance > 0) || math.IsInf(c.SignalVariance, 0) {
		return fmt.Errorf("gpucb: signal variance must be positive and finite, got %g", c.SignalVariance)
	}
	if !(c.NoiseVariance >= 0) || math.IsInf(c.NoiseVariance, 0) {
		return fmt.Errorf("gpucb: noise variance must be non-negative and finite, got %g", c.NoiseVariance)
	}
	if c.Workers < 0 {
		return fmt.Errorf("gpucb: workers must be non-negative (0 = GOMAXPROCS), got %d", c.Workers)
	}
	if c.Capacity < 0 {
		return fmt.Errorf("gpucb: capacity must be non-negative, got %d", c.Capacity)
	}
	if c.LazyColumns < 0 {
		return fmt.Errorf("gpucb: lazy columns must be non-negative (0 = every candidate), got %d", c.LazyColumns)
	}
	if !(c.InputNoiseVariance >= 0) || math.IsInf(c.InputNoiseVariance, 0) {
		return fmt.Errorf("gpucb: input noise variance must be non-negative and finite, got %g", c.InputNoiseVariance)
	}
	return nil
}

// Beta returns the GP-UCB exploration weight β_t = 2 log(n t² π² / (6 δ'))
// for n candidates at the 1-based iteration t (Srinivas et al. 2010,
// Theorem 1). It returns NaN unless n ≥ 1, t ≥ 1 and 0 < δ' < 1.
func Beta(n, t int, delta float64) float64 {
	if n < 1 || t < 1 || !(delta > 0 && delta < 1) {
		return math.NaN()
	}
	ft := float64(t)
	return 2 * math.Log(float64(n)*ft*ft*math.Pi*math.Pi/(6*delta))
}

// DefaultLengthscale returns a data-scaled default lengthscale: the median
// Euclidean distance of the rows of cands (row-major n×dim) to their mean row.
// If that median is 0 (more than half the rows sit on the mean) it returns
// the largest such distance, and 1 if all rows are identical or n or dim is 0.
// It panics if len(cands) ≠ n·dim.
//
// Why the median and not half of it: on the diabetes study of the backbone issue
// (r = 5, ε = e², δ = 1e-4, T = 40, 300 private projections), the best value
// reached the top 1% in 78% of runs with half the median, 88% with the median,
// and no better with 2× or 3× the median (integration.TestDiabetesTopOnePercent).
func DefaultLengthscale(cands []float64, n, dim int) float64 {
	if n < 0 || dim < 0 || len(cands) != n*dim {
		panic(fmt.Sprintf("gpucb: DefaultLengthscale: %d values for %d×%d candidates", len(cands), n, dim))
	}
	if n == 0 || dim == 0 {
		return 1
	}
	mean := rowMean(cands, n, dim)
	dist := make([]float64, n)
	for i := range n {
		dist[i] = math.Sqrt(sqDist(mean, cands[i*dim:(i+1)*dim]))
	}
	slices.Sort(dist)
	med := dist[n/2]
	if n%2 == 0 {
		med = (dist[n/2-1] + dist[n/2]) / 2
	}
	switch {
	case med > 0 && !math.IsInf(med, 0):
		return med
	case dist[n-1] > 0 && !math.IsInf(dist[n-1], 0):
		return dist[n-1]
	}
	return 1
}

// T returns the number of real observations so far (fantasies not counted).
func (g *Posterior) T() int { return len(g.idx) }

// Config returns the posterior's settings, with the hyperparameters in use
// (those of SetHyper or Refit, if called).
func (g *Posterior) Config() PosteriorConfig { return g.cfg }

// N returns the number of candidates.
func (g *Posterior) N() int { return g.n }

// Queried reports whether candidate i has been observed or fantasised. It
// panics if i is out of range.
func (g *Posterior) Queried(i int) bool { return g.queried[i] }

// scale returns the output mean offset terms and sd of the standardisation:
// µ(z) = base + a(z) − mp·b(z), σ²(z) = s²·σ̃²(z).
func (g *Posterior) scale() (base, mp, s float64) {
	if !g.cfg.Standardise {
		return 0, 0, 1
	}
	t := len(g.idx)
	s = 1
	if t >= 2 {
		if sd := math.Sqrt(g.m2 / float64(t-1)); sd > 0 && !math.IsInf(sd, 0) {
			s = sd
		}
	}
	return g.shift + g.dmean, g.dmean, s
}

// Standardisation returns the mean m and the sd s by which the outputs are
// standardised (package documentation): the sample mean and standard deviation
// (divisor t − 1) of the real observations, s = 1 while t < 2 or when they are
// all equal; (0, 1) without Standardise or before the first observation.
// Fantasies do not change them.
func (g *Posterior) Standardisation() (m, s float64) {
	base, _, s := g.scale()
	if !g.cfg.Standardise || len(g.idx) == 0 {
		return 0, 1
	}
	return base, s
}

// Mean returns the posterior mean µ_t at candidate i, in original output
// units. It panics if i is out of range.
func (g *Posterior) Mean(i int) float64 {
	if g.cfg.Lazy && int(g.ls[i]) < len(g.idx) {
		g.fresh(i)
	}
	base, mp, _ := g.scale()
	return g.muAt(i, base, mp)
}

// muAt is candidate x's posterior mean from its a and b, with base and mp from
// scale() (package documentation, "Standardised outputs").
func (g *Posterior) muAt(x int, base, mp float64) float64 {
	if !g.cfg.Standardise {
		return g.a[x]
	}
	return base + g.a[x] - float64(mp*g.b[x])
}

// Variance returns the posterior variance σ²_t at candidate i, in original
// output units (rounding below 0 is reported as 0). It panics if i is out of
// range.
func (g *Posterior) Variance(i int) float64 {
	_, _, s := g.scale()
	if g.cfg.Lazy && (int(g.ls[i]) < len(g.idx) || len(g.fant) > 0) {
		vr, _ := g.fresh(i)
		return s * s * max(vr, 0)
	}
	return s * s * max(g.vr[i], 0)
}

// ArgmaxUpper returns the candidate maximising µ(z) + w σ(z) (an upper
// confidence bound for w > 0, the mean for w = 0), in original output units;
// ties go to the lowest index. With skipQueried, candidates observed or
// fantasised are never returned, and it is an error if all are. It runs on
// the posterior's workers and is the scan UCB uses.
func (g *Posterior) ArgmaxUpper(w float64, skipQueried bool) (int, error) {
	base, mp, s := g.scale()
	sb := w * s
	if g.cfg.Lazy {
		g.lazyArgmaxUpper(base, mp, sb, skipQueried)
		return g.best(skipQueried)
	}
	g.parallel(func(wk, lo, hi int) {
		g.bestIdx[wk], g.bestScore[wk] = g.argmaxUpper(lo, hi, base, mp, sb, skipQueried)
	})
	return g.best(skipQueried)
}

// Argmax returns the candidate maximising score(i, µ(z_i), σ(z_i)), in
// original output units; ties go to the lowest index and NaN scores are
// never chosen. With skipQueried, candidates observed or fantasised are never
// returned. score is called concurrently from the posterior's workers, once
// per candidate. It is the scan for an acquisition rule that is not of the
// form µ + w σ (ArgmaxUpper is faster for those).
func (g *Posterior) Argmax(score func(i int, mean, sd float64) float64, skipQueried bool) (int, error) {
	if g.cfg.Lazy {
		g.lazyArgmax(score, skipQueried)
		return g.best(skipQueried)
	}
	g.parallel(func(wk, lo, hi int) {
		best, bestScore := -1, math.Inf(-1)
		for i := lo; i < hi; i++ {
			if skipQueried && g.queried[i] {
				continue
			}
			sc := score(i, g.Mean(i), math.Sqrt(g.Variance(i)))
			if math.IsNaN(sc) {
				continue
			}
			if best < 0 || sc > bestScore {
				best, bestScore = i, sc
			}
		}
		g.bestIdx[wk], g.bestScore[wk] = best, bestScore
	})
	return g.best(skipQueried)
}

// best combines the workers' results of a scan.
func (g *Posterior) best(skipQueried bool) (int, error) {
	best, bestScore := -1, math.Inf(-1)
	for w, i := range g.bestIdx {
		if i >= 0 && (best < 0 || g.bestScore[w] > bestScore) {
			best, bestScore = i, g.bestScore[w]
		}
	}
	if best < 0 {
		if skipQueried && !slices.Contains(g.queried, false) {
			return -1, fmt.Errorf("gpucb: all %d candidates have been queried", g.n)
		}
		return -1, errors.New("gpucb: no candidate has a defined acquisition value (NaN everywhere: outputs or hyperparameters beyond float64's range)")
	}
	return best, nil
}

func (g *Posterior) argmaxUpper(lo, hi int, base, mp, sb float64, skip bool) (int, float64) {
	best, bestScore := -1, math.Inf(-1)
	a, vr, q := g.a[lo:hi], g.vr[lo:hi], g.queried[lo:hi]
	var b []float64
	if g.cfg.Standardise {
		b = g.b[lo:hi]
	}
	for k := range a {
		if skip && q[k] {
			continue
		}
		mu := a[k]
		if b != nil {
			mu = base + a[k] - float64(mp*b[k])
		}
		sc := mu + float64(sb*math.Sqrt(max(vr[k], 0)))
		if math.IsNaN(sc) {
			continue
		}
		if best < 0 || sc > bestScore {
			best, bestScore = lo+k, sc
		}
	}
	return best, bestScore
}

// Observe conditions the posterior on output y at candidate i. Observing the
// same index again is allowed and counts as a second, independent noisy
// observation. It returns an error, leaving the posterior unchanged, if i is
// out of range, y is not finite, fantasies are pending (DropFantasies first),
// or the conditional variance plus noise at i is numerically zero (see the
// package documentation).
func (g *Posterior) Observe(i int, y float64) error {
	return g.ObserveNoise(i, y, 1)
}

// ObserveNoise is Observe for an observation whose noise variance is factor times
// PosteriorConfig.NoiseVariance (factor > 0 and finite): the heteroscedastic GP, in
// which the covariance of the observations is K + diag(σ_n²·factor_j) (Rasmussen &
// Williams 2006, §2.2, with a known noise variance per observation). The modeler uses
// it for answers released with a narrower clip range, whose noise is smaller
// (docs/MATHS.md §2.3).
func (g *Posterior) ObserveNoise(i int, y, factor float64) error {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return fmt.Errorf("gpucb: observation at candidate %d: noise factor must be positive and finite, got %g", i, factor)
	}
	if i < 0 || i >= g.n {
		return fmt.Errorf("gpucb: observation index %d out of range [0, %d)", i, g.n)
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return fmt.Errorf("gpucb: observation at candidate %d is not finite (%g)", i, y)
	}
	if len(g.fant) > 0 {
		return fmt.Errorf("gpucb: observation at candidate %d with %d fantasies pending; drop them first", i, len(g.fant))
	}
	t := len(g.idx)
	if g.cfg.Standardise && t > 0 && math.IsInf(y-g.shift, 0) {
		return fmt.Errorf("gpucb: observation at candidate %d is %g, and its difference from the first observation %g overflows float64; rescale the outputs", i, y, g.shift)
	}
	ltt, err := g.column(i, factor)
	if err != nil {
		return err
	}
	col := g.col

	// Standardisation shift and Welford statistics.
	if g.cfg.Standardise && t == 0 {
		g.shift = y
	}
	d := y - g.shift
	if g.cfg.Standardise {
		delta := d - g.dmean
		g.dmean += delta / float64(t+1)
		g.m2 += delta * (d - g.dmean)
	}

	// Forward substitution for the new entries of u = L⁻¹(y − shift), e = L⁻¹1.
	ut, et := d, 1.0
	for j, c := range col {
		ut -= c * g.u[j]
		if g.cfg.Standardise {
			et -= c * g.e[j]
		}
	}
	ut /= ltt
	et /= ltt
	g.u = append(g.u, ut)
	if g.cfg.Standardise {
		g.e = append(g.e, et)
	}
	g.appendRow(i, ltt, ut, et, true)
	g.idx = append(g.idx, i)
	g.ys = append(g.ys, y)
	g.nf = append(g.nf, factor)
	return nil
}

// Fantasize conditions the posterior on a pending observation at candidate i
// whose value is the posterior mean there: GP-BUCB's hallucinated observation
// (Desautels, Krause and Burdick 2014, JMLR 15). The mean stays as it is
// everywhere (conditioning on y = µ(z_i) does not move it) and is not
// recomputed; the variance shrinks as if z_i had been observed, and i counts
// as queried. The standardisation stays that of the real observations. Undo
// all fantasies with DropFantasies before the next Observe, SetHyper,
// SetNoiseFactors or Refit. It returns an error, leaving the posterior
// unchanged, if i is out of range or its conditional variance plus noise is
// numerically zero (a fantasy at a candidate already observed, with tiny
// NoiseVariance). The fantasy's noise variance is NoiseVariance
// (FantasizeNoise for another).
func (g *Posterior) Fantasize(i int) error {
	return g.FantasizeNoise(i, 1)
}

// FantasizeNoise is Fantasize for a pending observation whose noise variance will
// be factor times NoiseVariance (ObserveNoise): the variance then shrinks as the
// real answer, with its own noise, will shrink it. factor must be positive and
// finite.
func (g *Posterior) FantasizeNoise(i int, factor float64) error {
	if i < 0 || i >= g.n {
		return fmt.Errorf("gpucb: fantasy index %d out of range [0, %d)", i, g.n)
	}
	if !(factor > 0) || math.IsInf(factor, 0) {
		return fmt.Errorf("gpucb: fantasy at candidate %d: noise factor must be positive and finite, got %g", i, factor)
	}
	ltt, err := g.column(i, factor)
	if err != nil {
		return err
	}
	if len(g.fant) == 0 && !g.cfg.Lazy {
		g.vrReal = append(g.vrReal[:0], g.vr...)
	}
	g.fant = append(g.fant, i)
	g.fantWas = append(g.fantWas, g.queried[i])
	g.appendRow(i, ltt, 0, 0, false)
	return nil
}

// Pending returns the number of fantasies (Fantasize) not yet dropped.
func (g *Posterior) Pending() int { return len(g.fant) }

// DropFantasies undoes every Fantasize since the last real observation,
// exactly: the variance and the queried candidates are restored, not
// recomputed.
func (g *Posterior) DropFantasies() {
	if len(g.fant) == 0 {
		return
	}
	for k := len(g.fant) - 1; k >= 0; k-- {
		g.queried[g.fant[k]] = g.fantWas[k]
	}
	t := len(g.idx)
	g.lpk = g.lpk[:t*(t+1)/2]
	if !g.cfg.Lazy {
		g.spare = append(g.spare, g.rows[t:]...)
		clear(g.rows[t:])
		g.rows = g.rows[:t]
		copy(g.vr, g.vrReal)
	}
	g.fant, g.fantWas = g.fant[:0], g.fantWas[:0]
}

// column fills g.col with V_j(i) for every row of V and returns the new
// diagonal entry l_tt of L for an observation at i with noise variance factor ×
// NoiseVariance, or an error if l_tt² is numerically zero.
func (g *Posterior) column(i int, factor float64) (float64, error) {
	if g.cfg.Lazy {
		_, col := g.fresh(i)
		g.col = append(g.col[:0], col...)
	} else {
		g.col = g.col[:0]
		for _, r := range g.rows {
			g.col = append(g.col, r[i])
		}
	}
	var ss float64
	for _, v := range g.col {
		ss += v * v
	}
	nv := g.cfg.NoiseVariance * factor
	l2 := g.kdiag + nv - ss
	if tol := 1e-10 * (g.kdiag + nv); !(l2 > tol) {
		return 0, fmt.Errorf("gpucb: candidate %d: conditional variance plus noise %.3g is numerically zero (≤ %.3g); "+
			"it duplicates earlier observations: increase NoiseVariance or set SkipQueried", i, l2, tol)
	}
	return math.Sqrt(l2), nil
}

// appendRow appends row (g.col, ltt) to L and the new row of V for candidate
// i, updating the variance and, with means, the means by u_t = ut, e_t = et.
func (g *Posterior) appendRow(i int, ltt, ut, et float64, means bool) {
	g.lpk = append(append(g.lpk, g.col...), ltt)
	if g.cfg.Lazy {
		g.queried[i] = true
		return
	}
	nr := g.newRow()
	zi := g.kc[i*g.dim : (i+1)*g.dim]
	inv := 1 / ltt
	g.parallel(func(_, lo, hi int) {
		g.extend(nr, i, zi, lo, hi, inv, ut, et, means)
	})
	g.rows = append(g.rows, nr)
	g.queried[i] = true
}

// extend computes the new row of V on [lo, hi) and updates the variance and,
// with means, the means there. g.col holds V_j(i) for the rows already in
// g.rows.
func (g *Posterior) extend(nr []float64, i int, zi []float64, lo, hi int, inv, ut, et float64, means bool) {
	col := g.col
	rows := g.rows
	for t0 := lo; t0 < hi; t0 += tile {
		t1 := min(t0+tile, hi)
		seg := nr[t0:t1]
		g.kernelRow(i, zi, t0, t1, seg)
		subtractRows(seg, col, rows, t0)
		vr := g.vr[t0:t1]
		vr = vr[:len(seg)]
		if !means {
			for k := range seg {
				v := seg[k] * inv
				seg[k] = v
				vr[k] -= float64(v * v)
			}
			continue
		}
		a := g.a[t0:t1]
		a = a[:len(seg)]
		for k := range seg {
			v := seg[k] * inv
			seg[k] = v
			vr[k] -= float64(v * v)
			a[k] += float64(ut * v)
		}
		if g.cfg.Standardise {
			b := g.b[t0:t1]
			b = b[:len(seg)]
			for k, v := range seg {
				b[k] += float64(et * v)
			}
		}
	}
}

// newRow returns storage for one more row of V. Chunks grow geometrically
// (the first holds Capacity rows, later ones half the rows so far) and are
// never copied, so peak memory stays close to what the rows need.
func (g *Posterior) newRow() []float64 {
	if k := len(g.spare); k > 0 {
		r := g.spare[k-1]
		g.spare = g.spare[:k-1]
		return r
	}
	if len(g.chunkFree) < g.n {
		rowsNeeded := max(g.cfg.Capacity-len(g.rows), len(g.rows)/2, 8)
		g.chunkFree = hugepage.Floats(rowsNeeded * g.n)
	}
	r := g.chunkFree[:g.n:g.n]
	g.chunkFree = g.chunkFree[g.n:]
	return r
}

// parallel runs f on the candidate blocks, block 0 on the calling goroutine.
func (g *Posterior) parallel(f func(w, lo, hi int)) {
	nw := len(g.bounds) - 1
	if nw == 1 {
		f(0, 0, g.n)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < nw; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w, g.bounds[w], g.bounds[w+1])
		}()
	}
	f(0, g.bounds[0], g.bounds[1])
	wg.Wait()
}

// rowMean returns the mean of the n rows of cands (row-major n × dim), n ≥ 1.
func rowMean(cands []float64, n, dim int) []float64 {
	mean := make([]float64, dim)
	for i := range n {
		for k, x := range cands[i*dim : (i+1)*dim] {
			mean[k] += x
		}
	}
	for k := range mean {
		mean[k] /= float64(n)
	}
	return mean
}
