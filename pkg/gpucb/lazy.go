package gpucb

import (
	"math"
	"slices"
)

// Lazy evaluation (PosteriorConfig.Lazy; "Lazy evaluation" in the package
// documentation). Candidate z keeps a(z), b(z) and σ̃²(z) as of the first ls[z]
// real observations, and its column of V if it has a slot (LazyColumns); no row
// of V is stored. A scan bounds every stale candidate's score from that state
// and brings up to date only the candidates whose bound reaches the best exact
// score found so far.

// lazyScratch holds one goroutine's column of V for a candidate without a slot.
type lazyScratch struct{ col []float64 }

// rowAt returns the candidate of row j of L: a real observation, then the
// pending fantasies.
func (g *Posterior) rowAt(j int) int {
	if t := len(g.idx); j >= t {
		return g.fant[j-t]
	}
	return g.idx[j]
}

// slotCol returns the stored column of V of candidate x, assigning it a slot if
// one is free (then it starts from no observation), or nil.
func (g *Posterior) slotCol(x int) []float64 {
	k := int(g.slot[x])
	if k < 0 {
		if k = int(g.nslots.Add(1)) - 1; k >= g.maxSlots {
			return nil
		}
		g.slot[x] = int32(k)
		g.ls[x] = 0
	}
	return g.cache[k*g.stride : (k+1)*g.stride]
}

// lazyRoom makes the slots hold every row of L, on the calling goroutine before
// any catchUp: when the rows outgrow them, every slot is freed and the stride
// doubled.
func (g *Posterior) lazyRoom() {
	nr := len(g.idx) + len(g.fant)
	if g.maxSlots == 0 || (g.cache != nil && nr <= g.stride) {
		return
	}
	if nr > g.stride {
		g.stride = 2 * nr
		g.nslots.Store(0)
		for k := range g.slot {
			g.slot[k] = -1
		}
	}
	g.cache = nil // the old slots can go before the new ones are allocated
	g.cache = make([]float64, g.maxSlots*g.stride)
}

// catchUp brings candidate x up to date by the same operations as extend, from
// its stored column if it has one and from no observation otherwise, so that
// every value is the one the eager loop computes. a, b and σ̃² under the real
// observations are stored (and ls set to T); it returns σ̃² with the pending
// fantasies and the column V_j(x) over every row of L.
func (g *Posterior) catchUp(x int, sc *lazyScratch) (float64, []float64) {
	t, nr := len(g.idx), len(g.idx)+len(g.fant)
	col := g.slotCol(x)
	if col == nil {
		col = slices.Grow(sc.col[:0], nr)[:nr]
		sc.col, g.ls[x] = col, 0
	}
	s := int(g.ls[x])
	vr, a, b := g.kdiag, 0.0, 0.0
	if s > 0 {
		vr, a = g.vr[x], g.a[x]
		if g.cfg.Standardise {
			b = g.b[x]
		}
	}
	zx := g.kc[x*g.dim : (x+1)*g.dim]
	for j := s; j < nr; j++ {
		if j == t {
			g.vr[x] = vr
		}
		r := g.rowAt(j)
		v := g.kdiag
		if r != x {
			v = g.kernelAt(g.kc[r*g.dim:(r+1)*g.dim], zx)
		}
		off := j * (j + 1) / 2
		l, c := g.lpk[off:off+j], col[:j]
		i := 0
		for ; i+4 <= j; i += 4 {
			v -= (l[i]*c[i] + l[i+1]*c[i+1]) + (l[i+2]*c[i+2] + l[i+3]*c[i+3])
		}
		for ; i < j; i++ {
			v -= l[i] * c[i]
		}
		v *= 1 / g.lpk[off+j]
		col[j] = v
		vr -= v * v
		if j < t {
			a += g.u[j] * v
			if g.cfg.Standardise {
				b += g.e[j] * v
			}
		}
	}
	if nr == t {
		g.vr[x] = vr
	}
	g.a[x], g.ls[x] = a, int32(t)
	if g.cfg.Standardise {
		g.b[x] = b
	}
	return vr, col[:nr]
}

// fresh brings candidate i up to date and returns its σ̃² with the pending
// fantasies.
func (g *Posterior) fresh(i int) float64 {
	g.lazyRoom()
	vr, _ := g.catchUp(i, &g.lz[len(g.lz)-1])
	return vr
}

// lazyColumn is column for a lazy posterior: g.col = V_j(i).
func (g *Posterior) lazyColumn(i int) {
	g.lazyRoom()
	_, col := g.catchUp(i, &g.lz[len(g.lz)-1])
	g.col = append(g.col[:0], col...)
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
// block's best exact score and its candidate of highest bound, which is brought
// up to date; the best of these is the threshold of a second pass that brings
// up to date every candidate whose bound reaches the best score so far.
func (g *Posterior) lazyArgmaxUpper(base, mp, sb float64, skip bool) {
	g.lazyRoom()
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
// bringing up to date those whose bound is not below the best score so far (at
// least tau); candidates below tau are never returned.
func (g *Posterior) lazyScan(lb *lazyBound, sc *lazyScratch, lo, hi int, tau float64, skip bool) (int, float64) {
	best, bestScore := -1, math.Inf(-1)
	for x := lo; x < hi; x++ {
		if skip && g.queried[x] {
			continue
		}
		s, ok := g.lazyScore(lb, x)
		if !ok {
			if s < max(tau, bestScore) {
				continue
			}
			vr, _ := g.catchUp(x, sc)
			s = g.exactScore(lb, x, vr)
		}
		if !math.IsNaN(s) && (best < 0 || s > bestScore) {
			best, bestScore = x, s
		}
	}
	return best, bestScore
}

// lazyArgmax is Argmax for a lazy posterior: every candidate is brought up to
// date.
func (g *Posterior) lazyArgmax(score func(i int, mean, sd float64) float64, skip bool) {
	g.lazyRoom()
	base, mp, s := g.scale()
	g.parallel(func(wk, lo, hi int) {
		best, bestScore := -1, math.Inf(-1)
		for x := lo; x < hi; x++ {
			if skip && g.queried[x] {
				continue
			}
			vr, _ := g.catchUp(x, &g.lz[wk])
			mu := g.a[x]
			if g.cfg.Standardise {
				mu = base + g.a[x] - mp*g.b[x]
			}
			v := score(x, mu, math.Sqrt(s*s*max(vr, 0)))
			if !math.IsNaN(v) && (best < 0 || v > bestScore) {
				best, bestScore = x, v
			}
		}
		g.bestIdx[wk], g.bestScore[wk] = best, bestScore
	})
}
