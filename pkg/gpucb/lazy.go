package gpucb

import (
	"math"
	"slices"
)

// Lazy evaluation (PosteriorConfig.Lazy; "Lazy evaluation" in the package
// documentation). Candidate z keeps a(z), b(z) and σ̃²(z) as of the first ls[z]
// real observations; no row of V is stored. A scan bounds every stale
// candidate's score from that state and recomputes, from the kernel and L, only
// the candidates whose bound reaches the best exact score found so far.

// lazyBatch is the number of candidates recomputed together: their columns of V
// (lazyBatch × rows) stay in cache.
const lazyBatch = 64

// lazyScratch holds one goroutine's buffers for recompute.
type lazyScratch struct {
	v    []float64   // V_j of the batch, row j at [j·len(xs), (j+1)·len(xs))
	rows [][]float64 // the rows of v, for subtractRows
	vr   []float64   // σ̃² of the batch with the pending fantasies
	xs   []int       // the batch
}

// rowAt returns the candidate of row j of L: a real observation, then the
// pending fantasies.
func (g *Posterior) rowAt(j int) int {
	if t := len(g.idx); j >= t {
		return g.fant[j-t]
	}
	return g.idx[j]
}

// recompute computes, for the candidates sc.xs, their columns of V over every
// row of L by the same operations as extend, so that every value is the one the
// eager loop computes: a, b and σ̃² under the real observations are stored (and
// ls set to T), σ̃² with the fantasies goes to sc.vr.
func (g *Posterior) recompute(sc *lazyScratch) {
	xs := sc.xs
	k := len(xs)
	t, nr := len(g.idx), len(g.idx)+len(g.fant)
	sc.v = slices.Grow(sc.v[:0], nr*k)[:nr*k]
	sc.rows = sc.rows[:0]
	sc.vr = slices.Grow(sc.vr[:0], k)[:k]
	vr := sc.vr
	var a, b [lazyBatch]float64
	for m := range vr {
		vr[m] = g.kdiag
	}
	for j := range nr {
		seg := sc.v[j*k : (j+1)*k]
		r := g.rowAt(j)
		zi := g.kc[r*g.dim : (r+1)*g.dim]
		for m, x := range xs {
			seg[m] = g.kernelAt(zi, x)
			if x == r {
				seg[m] = g.kdiag
			}
		}
		off := j * (j + 1) / 2
		subtractRows(seg, g.lpk[off:off+j], sc.rows, 0)
		sc.rows = append(sc.rows, seg)
		inv := 1 / g.lpk[off+j]
		if j == t {
			for m, x := range xs {
				g.vr[x] = vr[m]
			}
		}
		if j >= t {
			for m := range seg {
				v := seg[m] * inv
				seg[m] = v
				vr[m] -= v * v
			}
			continue
		}
		ut := g.u[j]
		for m := range seg {
			v := seg[m] * inv
			seg[m] = v
			vr[m] -= v * v
			a[m] += ut * v
		}
		if g.cfg.Standardise {
			et := g.e[j]
			for m, v := range seg {
				b[m] += et * v
			}
		}
	}
	for m, x := range xs {
		if nr == t {
			g.vr[x] = vr[m]
		}
		g.a[x] = a[m]
		if g.cfg.Standardise {
			g.b[x] = b[m]
		}
		g.ls[x] = int32(t)
	}
}

// fresh brings candidate i up to date on the main scratch and returns its σ̃²
// with the pending fantasies; the scratch's v then holds its column of V.
func (g *Posterior) fresh(i int) float64 {
	sc := &g.lz[len(g.lz)-1]
	sc.xs = append(sc.xs[:0], i)
	g.recompute(sc)
	return sc.vr[0]
}

// lazyColumn is column for a lazy posterior: g.col = V_j(i) recomputed.
func (g *Posterior) lazyColumn(i int) {
	g.fresh(i)
	g.col = append(g.col[:0], g.lz[len(g.lz)-1].v...)
}

// lazyBound holds what a scan needs to bound a stale candidate's score
// µ + sb·σ̃ (package documentation, "Lazy evaluation").
type lazyBound struct {
	base, mp, sb float64
	w2           []float64 // w2[s] = Σ_{s ≤ j < T} (u_j − m′ e_j)², inflated for rounding
	sd0, slack   float64   // rounding allowances on σ̃_s and on the score
	exact        bool      // no fantasies pending: a candidate with ls = T is exact
}

func (g *Posterior) newLazyBound(base, mp, sb float64) lazyBound {
	t, nr := len(g.idx), len(g.idx)+len(g.fant)
	g.w2 = slices.Grow(g.w2[:0], t+1)[:t+1]
	w2 := g.w2
	w2[t] = 0
	var nu, ne float64
	for j := t - 1; j >= 0; j-- {
		w := g.u[j]
		nu += g.u[j] * g.u[j]
		if g.cfg.Standardise {
			w -= mp * g.e[j]
			ne += g.e[j] * g.e[j]
		}
		w2[j] = w2[j+1] + w*w
	}
	for j := range w2 {
		w2[j] *= 1 + 1e-9
	}
	const eps = 0x1p-52
	f := float64(nr + 1)
	kd := math.Sqrt(g.kdiag)
	return lazyBound{
		base: base, mp: mp, sb: sb, w2: w2,
		sd0:   math.Sqrt(16 * f * eps * g.kdiag),
		slack: 64 * f * eps * (math.Abs(base) + 2*kd*(math.Sqrt(nu)+math.Abs(mp)*math.Sqrt(ne)+math.Abs(sb))),
		exact: nr == t,
	}
}

// score returns candidate x's score and whether it is exact (else an upper
// bound on the exact score).
func (g *Posterior) lazyScore(lb *lazyBound, x int) (float64, bool) {
	mu := g.a[x]
	if g.cfg.Standardise {
		mu = lb.base + g.a[x] - lb.mp*g.b[x]
	}
	s := int(g.ls[x])
	if lb.exact && s == len(g.idx) {
		return mu + lb.sb*math.Sqrt(max(g.vr[x], 0)), true
	}
	sd := math.Sqrt(max(g.vr[x], 0)) + lb.sd0
	return mu + sd*math.Sqrt(lb.w2[s]+lb.sb*lb.sb)*(1+1e-12) + 1e-12*math.Abs(mu) + lb.slack, false
}

// lazyArgmaxUpper is ArgmaxUpper for a lazy posterior: a first pass finds each
// block's best exact score and its candidate of highest bound, which is
// recomputed; the best of these is the threshold of a second pass that
// recomputes, in batches, every candidate whose bound reaches it.
func (g *Posterior) lazyArgmaxUpper(base, mp, sb float64, skip bool) {
	lb := g.newLazyBound(base, mp, sb)
	top := g.bestIdx // reused: candidate of highest bound per block
	g.parallel(func(wk, lo, hi int) {
		bi, bs, hi1, hs := -1, math.Inf(-1), -1, math.Inf(-1)
		for x := lo; x < hi; x++ {
			if skip && g.queried[x] {
				continue
			}
			sc, ok := g.lazyScore(&lb, x)
			if ok && !math.IsNaN(sc) && (bi < 0 || sc > bs) {
				bi, bs = x, sc
			}
			if !ok && (hi1 < 0 || sc > hs) {
				hi1, hs = x, sc
			}
		}
		g.bestScore[wk] = bs
		top[wk] = hi1
	})
	tau := math.Inf(-1)
	for wk, x := range top {
		tau = max(tau, g.bestScore[wk])
		if x >= 0 {
			v := g.fresh(x)
			if sc := g.exactScore(&lb, x, v); sc > tau {
				tau = sc
			}
		}
	}
	g.parallel(func(wk, lo, hi int) {
		g.bestIdx[wk], g.bestScore[wk] = g.lazyScan(&lb, &g.lz[wk], lo, hi, tau, skip)
	})
}

// exactScore is the score of an up-to-date candidate x whose σ̃² with the
// pending fantasies is vr.
func (g *Posterior) exactScore(lb *lazyBound, x int, vr float64) float64 {
	mu := g.a[x]
	if g.cfg.Standardise {
		mu = lb.base + g.a[x] - lb.mp*g.b[x]
	}
	return mu + lb.sb*math.Sqrt(max(vr, 0))
}

// lazyScan returns the best candidate of [lo, hi) (ties to the lowest index),
// recomputing those whose bound is not below the best score so far (at least
// tau); candidates below tau are never returned.
func (g *Posterior) lazyScan(lb *lazyBound, sc *lazyScratch, lo, hi int, tau float64, skip bool) (int, float64) {
	best, bestScore := -1, math.Inf(-1)
	consider := func(x int, s float64) {
		if !math.IsNaN(s) && (best < 0 || s > bestScore || s == bestScore && x < best) {
			best, bestScore = x, s
		}
	}
	flush := func() {
		if len(sc.xs) == 0 {
			return
		}
		g.recompute(sc)
		for m, x := range sc.xs {
			consider(x, g.exactScore(lb, x, sc.vr[m]))
		}
		sc.xs = sc.xs[:0]
	}
	sc.xs = sc.xs[:0]
	for x := lo; x < hi; x++ {
		if skip && g.queried[x] {
			continue
		}
		s, ok := g.lazyScore(lb, x)
		if ok {
			consider(x, s)
			continue
		}
		if s < max(tau, bestScore) {
			continue
		}
		sc.xs = append(sc.xs, x)
		if len(sc.xs) == lazyBatch {
			flush()
		}
	}
	flush()
	return best, bestScore
}

// lazyArgmax is Argmax for a lazy posterior: every candidate is recomputed.
func (g *Posterior) lazyArgmax(score func(i int, mean, sd float64) float64, skip bool) {
	base, mp, s := g.scale()
	g.parallel(func(wk, lo, hi int) {
		sc := &g.lz[wk]
		best, bestScore := -1, math.Inf(-1)
		for b0 := lo; b0 < hi; b0 += lazyBatch {
			sc.xs = sc.xs[:0]
			for x := b0; x < min(b0+lazyBatch, hi); x++ {
				if !skip || !g.queried[x] {
					sc.xs = append(sc.xs, x)
				}
			}
			g.recompute(sc)
			for m, x := range sc.xs {
				mu := g.a[x]
				if g.cfg.Standardise {
					mu = base + g.a[x] - mp*g.b[x]
				}
				v := score(x, mu, math.Sqrt(s*s*max(sc.vr[m], 0)))
				if !math.IsNaN(v) && (best < 0 || v > bestScore) {
					best, bestScore = x, v
				}
			}
		}
		g.bestIdx[wk], g.bestScore[wk] = best, bestScore
	})
}
