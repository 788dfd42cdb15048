package gpucb

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// Config holds the GP prior, the UCB schedule and execution settings.
type Config struct {
	Kernel Kernel
	// Lengthscale l > 0 of the kernel, in the units of the candidates
	// (see DefaultLengthscale).
	Lengthscale float64
	// SignalVariance σ_y² > 0 and NoiseVariance σ_n² ≥ 0. With Standardise
	// they are in standardised output units.
	SignalVariance, NoiseVariance float64
	// Delta is δ' ∈ (0, 1) of β_t = 2 log(n t² π² / (6 δ')). Ignored when
	// ConstantBeta > 0.
	Delta float64
	// ConstantBeta > 0 replaces the schedule by a constant β.
	ConstantBeta float64
	// SkipQueried makes Next never suggest an index already observed.
	SkipQueried bool
	// Standardise models (y − mean)/sd of the outputs seen so far; Mean,
	// Variance and the acquisition stay in the original units.
	Standardise bool
	// Workers is the number of goroutines for the O(n) loops; 0 means
	// GOMAXPROCS.
	Workers int
	// Capacity is the expected number of observations, used to size buffers
	// up front; more observations are still accepted.
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
}

// GP is an exact GP-UCB posterior over a fixed candidate set. Create one with
// New; it is not safe for concurrent use. Memory: about 8·n bytes per
// observation (one row of V) plus four length-n buffers, beside the
// caller's candidates.
type GP struct {
	cands  []float64
	n, dim int
	cfg    Config
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
}

// Tile width (candidates) of the inner loops: the 16 KiB of the new row being
// accumulated stay in cache while the rows of V stream past in long runs.
const tile = 2048

// minBlock is the smallest number of candidates worth a goroutine.
const minBlock = 2048

// New returns a GP-UCB posterior with no observations over the n candidates
// cands (row-major n×dim). cands is not copied: the caller must not modify
// it while the GP is in use.
func New(cands []float64, n, dim int, cfg Config) (*GP, error) {
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
	g := &GP{
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
	c := cfg.Capacity
	g.rows = make([][]float64, 0, c)
	g.lpk = make([]float64, 0, c*(c+1)/2)
	g.u = make([]float64, 0, c)
	g.e = make([]float64, 0, c)
	g.col = make([]float64, 0, c)
	g.idx = make([]int, 0, c)
	g.ys = make([]float64, 0, c)
	return g, nil
}

func (c *Config) validate() error {
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
	if !(c.ConstantBeta >= 0) || math.IsInf(c.ConstantBeta, 0) {
		return fmt.Errorf("gpucb: constant beta must be non-negative and finite (0 = use the schedule), got %g", c.ConstantBeta)
	}
	if c.ConstantBeta == 0 && !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("gpucb: delta' of the beta schedule must be in (0, 1), got %g", c.Delta)
	}
	if c.Workers < 0 {
		return fmt.Errorf("gpucb: workers must be non-negative (0 = GOMAXPROCS), got %d", c.Workers)
	}
	if c.Capacity < 0 {
		return fmt.Errorf("gpucb: capacity must be non-negative, got %d", c.Capacity)
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

// T returns the number of observations so far.
func (g *GP) T() int { return len(g.idx) }

// Beta returns the β that the next call of Next uses: ConstantBeta if set,
// otherwise β_{t+1} of the schedule with t = T().
func (g *GP) Beta() float64 {
	if g.cfg.ConstantBeta > 0 {
		return g.cfg.ConstantBeta
	}
	return Beta(g.n, g.T()+1, g.cfg.Delta)
}

// scale returns the output mean offset terms and sd of the standardisation:
// µ(z) = base + a(z) − mp·b(z), σ²(z) = s²·σ̃²(z).
func (g *GP) scale() (base, mp, s float64) {
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

// Mean returns the posterior mean µ_t at candidate i, in original output
// units. It panics if i is out of range.
func (g *GP) Mean(i int) float64 {
	if !g.cfg.Standardise {
		return g.a[i]
	}
	base, mp, _ := g.scale()
	return base + g.a[i] - mp*g.b[i]
}

// Variance returns the posterior variance σ²_t at candidate i, in original
// output units (rounding below 0 is reported as 0). It panics if i is out of
// range.
func (g *GP) Variance(i int) float64 {
	_, _, s := g.scale()
	return s * s * max(g.vr[i], 0)
}

// Next returns the candidate maximising µ_t(z) + sqrt(β_{t+1}) σ_t(z), with
// t = T() and β from Beta; ties go to the lowest index. With SkipQueried,
// observed candidates are never returned and it is an error if all are.
func (g *GP) Next() (int, error) {
	base, mp, s := g.scale()
	sb := math.Sqrt(g.Beta()) * s
	g.parallel(func(w, lo, hi int) {
		g.bestIdx[w], g.bestScore[w] = g.argmax(lo, hi, base, mp, sb)
	})
	best, bestScore := -1, math.Inf(-1)
	for w, i := range g.bestIdx {
		if i >= 0 && (best < 0 || g.bestScore[w] > bestScore) {
			best, bestScore = i, g.bestScore[w]
		}
	}
	if best < 0 {
		if g.cfg.SkipQueried && !slices.Contains(g.queried, false) {
			return -1, fmt.Errorf("gpucb: all %d candidates have been queried", g.n)
		}
		return -1, errors.New("gpucb: no candidate has a defined acquisition value (NaN everywhere: outputs or hyperparameters beyond float64's range)")
	}
	return best, nil
}

func (g *GP) argmax(lo, hi int, base, mp, sb float64) (int, float64) {
	best, bestScore := -1, math.Inf(-1)
	a, vr, q := g.a[lo:hi], g.vr[lo:hi], g.queried[lo:hi]
	var b []float64
	if g.cfg.Standardise {
		b = g.b[lo:hi]
	}
	skip := g.cfg.SkipQueried
	for k := range a {
		if skip && q[k] {
			continue
		}
		mu := a[k]
		if b != nil {
			mu = base + a[k] - mp*b[k]
		}
		sc := mu + sb*math.Sqrt(max(vr[k], 0))
		if math.IsNaN(sc) {
			continue
		}
		if best < 0 || sc > bestScore {
			best, bestScore = lo+k, sc
		}
	}
	return best, bestScore
}

// Observe conditions the GP on output y at candidate i. Observing the same
// index again is allowed and counts as a second, independent noisy
// observation. It returns an error, leaving the GP unchanged, if i is out of
// range, y is not finite, or the conditional variance plus noise at i is
// numerically zero (see the package documentation).
func (g *GP) Observe(i int, y float64) error {
	return g.ObserveNoise(i, y, 1)
}

// ObserveNoise is Observe for an observation whose noise variance is factor times
// Config.NoiseVariance (factor > 0 and finite): the heteroscedastic GP, in which the
// covariance of the observations is K + diag(σ_n²·factor_j) (Rasmussen & Williams 2006,
// §2.2, with a known noise variance per observation). The modeler uses it for answers
// released with a narrower clip range, whose noise is smaller (docs/MATHS.md §2.3).
func (g *GP) ObserveNoise(i int, y, factor float64) error {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return fmt.Errorf("gpucb: observation at candidate %d: noise factor must be positive and finite, got %g", i, factor)
	}
	if i < 0 || i >= g.n {
		return fmt.Errorf("gpucb: observation index %d out of range [0, %d)", i, g.n)
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return fmt.Errorf("gpucb: observation at candidate %d is not finite (%g)", i, y)
	}
	t := len(g.idx)
	if g.cfg.Standardise && t > 0 && math.IsInf(y-g.shift, 0) {
		return fmt.Errorf("gpucb: observation at candidate %d is %g, and its difference from the first observation %g overflows float64; rescale the outputs", i, y, g.shift)
	}
	col := g.col[:0]
	var ss float64
	for _, r := range g.rows {
		v := r[i]
		col = append(col, v)
		ss += v * v
	}
	g.col = col
	nv := g.cfg.NoiseVariance * factor
	l2 := g.kdiag + nv - ss
	if tol := 1e-10 * (g.kdiag + nv); !(l2 > tol) {
		return fmt.Errorf("gpucb: candidate %d: conditional variance plus noise %.3g is numerically zero (≤ %.3g); "+
			"it duplicates earlier observations: increase NoiseVariance or set SkipQueried", i, l2, tol)
	}
	ltt := math.Sqrt(l2)

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
	g.lpk = append(append(g.lpk, col...), ltt)
	g.u = append(g.u, ut)
	if g.cfg.Standardise {
		g.e = append(g.e, et)
	}

	nr := g.newRow()
	zi := g.kc[i*g.dim : (i+1)*g.dim]
	inv := 1 / ltt
	g.parallel(func(_, lo, hi int) {
		g.extend(nr, i, zi, lo, hi, inv, ut, et)
	})
	g.rows = append(g.rows, nr)
	g.queried[i] = true
	g.idx = append(g.idx, i)
	g.ys = append(g.ys, y)
	g.nf = append(g.nf, factor)
	return nil
}

// extend computes the new row of V on [lo, hi) and updates the variance and
// the means there. g.col holds V_j(i) for the rows already in g.rows.
func (g *GP) extend(nr []float64, i int, zi []float64, lo, hi int, inv, ut, et float64) {
	col := g.col
	rows := g.rows
	for t0 := lo; t0 < hi; t0 += tile {
		t1 := min(t0+tile, hi)
		seg := nr[t0:t1]
		g.kernelRow(i, zi, t0, t1, seg)
		j := 0
		for ; j+4 <= len(col); j += 4 {
			c0, c1, c2, c3 := col[j], col[j+1], col[j+2], col[j+3]
			r0 := rows[j][t0:t1]
			r1 := rows[j+1][t0:t1]
			r2 := rows[j+2][t0:t1]
			r3 := rows[j+3][t0:t1]
			r0, r1, r2, r3 = r0[:len(seg)], r1[:len(seg)], r2[:len(seg)], r3[:len(seg)]
			for k := range seg {
				seg[k] -= (c0*r0[k] + c1*r1[k]) + (c2*r2[k] + c3*r3[k])
			}
		}
		for ; j < len(col); j++ {
			c := col[j]
			r := rows[j][t0:t1]
			r = r[:len(seg)]
			for k := range seg {
				seg[k] -= c * r[k]
			}
		}
		vr := g.vr[t0:t1]
		a := g.a[t0:t1]
		vr, a = vr[:len(seg)], a[:len(seg)]
		for k := range seg {
			v := seg[k] * inv
			seg[k] = v
			vr[k] -= v * v
			a[k] += ut * v
		}
		if g.cfg.Standardise {
			b := g.b[t0:t1]
			b = b[:len(seg)]
			for k, v := range seg {
				b[k] += et * v
			}
		}
	}
}

// newRow returns storage for one more row of V. Chunks grow geometrically
// (the first holds Capacity rows, later ones half the rows so far) and are
// never copied, so peak memory stays close to what the rows need.
func (g *GP) newRow() []float64 {
	if k := len(g.spare); k > 0 {
		r := g.spare[k-1]
		g.spare = g.spare[:k-1]
		return r
	}
	if len(g.chunkFree) < g.n {
		rowsNeeded := max(g.cfg.Capacity-len(g.rows), len(g.rows)/2, 8)
		g.chunkFree = make([]float64, rowsNeeded*g.n)
	}
	r := g.chunkFree[:g.n:g.n]
	g.chunkFree = g.chunkFree[g.n:]
	return r
}

// parallel runs f on the candidate blocks, block 0 on the calling goroutine.
func (g *GP) parallel(f func(w, lo, hi int)) {
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
