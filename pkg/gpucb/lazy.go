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
type lazyScratch struct{ col [lazyBatch][]float64 }

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
		if g.nslots.Load() >= int64(g.maxSlots) {
			return nil // all taken: no shared write on the hot path
		}
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
	if g.cache != nil && nr <= g.stride {
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

// lazyBatch is how many candidates catchUp brings up to date together: their
// chains of dependent multiply-adds are independent, so the CPU overlaps them.
const lazyBatch = 4

// catchUp brings candidates xs (at most lazyBatch, distinct) up to date by the
// same operations as extend, each from its stored column if it has one and from
// no observation otherwise, so that every value is the one the eager loop
// computes. a, b and σ̃² under the real observations are stored (and ls set to
// T); out[k] is xs[k]'s σ̃² with the pending fantasies, and the column V_j(xs[0])
// over every row of L is returned.
func (g *Posterior) catchUp(xs []int, sc *lazyScratch, out []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	t, nr := len(g.idx), len(g.idx)+len(g.fant)
	var cols [lazyBatch][]float64
	var vr, a, b [lazyBatch]float64
	var st [lazyBatch]int
	s0 := nr
	for k, x := range xs {
		if cols[k] = g.slotCol(x); cols[k] == nil {
			cols[k] = slices.Grow(sc.col[k][:0], nr)[:nr]
			sc.col[k], g.ls[x] = cols[k], 0
		}
		st[k], vr[k] = int(g.ls[x]), g.kdiag
		if st[k] > 0 {
			vr[k], a[k] = g.vr[x], g.a[x]
			if g.cfg.Standardise {
				b[k] = g.b[x]
			}
		}
		s0 = min(s0, st[k])
	}
	for k := len(xs); k < lazyBatch; k++ {
		cols[k] = cols[0] // dot4 reads four columns: these values are dropped
	}
	for j := s0; j < nr; j++ {
		r := g.rowAt(j)
		zr := g.kc[r*g.dim : (r+1)*g.dim]
		var v [lazyBatch]float64
		for k, x := range xs {
			if j == t && j >= st[k] {
				g.vr[x] = vr[k]
			}
			if v[k] = g.kdiag; r != x && j >= st[k] {
				v[k] = g.kernelAt(zr, g.kc[x*g.dim:(x+1)*g.dim])
			}
		}
		off := j * (j + 1) / 2
		l := g.lpk[off : off+j]
		if len(xs) == 1 {
			v[0] = dot1(v[0], l, cols[0][:j])
		} else {
			dot4(&v, l, &cols) // the values of rows a candidate has already are dropped
		}
		inv := 1 / g.lpk[off+j]
		for k := range xs {
			if j < st[k] {
				continue
			}
			w := v[k] * inv
			cols[k][j] = w
			vr[k] -= w * w
			if j < t {
				a[k] += g.u[j] * w
				if g.cfg.Standardise {
					b[k] += g.e[j] * w
				}
			}
		}
	}
	for k, x := range xs {
		if nr == t {
			g.vr[x] = vr[k]
		}
		g.a[x], g.ls[x], out[k] = a[k], int32(t), vr[k]
		if g.cfg.Standardise {
			g.b[x] = b[k]
		}
	}
	return cols[0][:nr]
}

// dot1 returns v − Σ_i l_i c_i, summed four at a time as in subtractRows.
func dot1(v float64, l, c []float64) float64 {
	c = c[:len(l)]
	i := 0
	for ; i+4 <= len(l); i += 4 {
		v -= (l[i]*c[i] + l[i+1]*c[i+1]) + (l[i+2]*c[i+2] + l[i+3]*c[i+3])
	}
	for ; i < len(l); i++ {
		v -= l[i] * c[i]
	}
	return v
}

// dot4 is dot1 for four columns at once (v[k] −= Σ_i l_i c[k]_i), each summed in
// dot1's order: four independent chains that share the loads of l.
func dot4(v *[lazyBatch]float64, l []float64, c *[lazyBatch][]float64) {
	j := len(l)
	c0, c1, c2, c3 := c[0][:j], c[1][:j], c[2][:j], c[3][:j]
	v0, v1, v2, v3 := v[0], v[1], v[2], v[3]
	i := 0
	for ; i+4 <= j; i += 4 {
		l4 := l[i : i+4 : i+4]
		p, q, r, s := c0[i:i+4:i+4], c1[i:i+4:i+4], c2[i:i+4:i+4], c3[i:i+4:i+4]
		v0 -= (l4[0]*p[0] + l4[1]*p[1]) + (l4[2]*p[2] + l4[3]*p[3])
		v1 -= (l4[0]*q[0] + l4[1]*q[1]) + (l4[2]*q[2] + l4[3]*q[3])
		v2 -= (l4[0]*r[0] + l4[1]*r[1]) + (l4[2]*r[2] + l4[3]*r[3])
		v3 -= (l4[0]*s[0] + l4[1]*s[1]) + (l4[2]*s[2] + l4[3]*s[3])
	}
	for ; i < j; i++ {
		v0 -= l[i] * c0[i]
		v1 -= l[i] * c1[i]
		v2 -= l[i] * c2[i]
		v3 -= l[i] * c3[i]
	}
	v[0], v[1], v[2], v[3] = v0, v1, v2, v3
}

// fresh brings candidate i up to date and returns its σ̃² with the pending
// fantasies and its column V_j(i).
func (g *Posterior) fresh(i int) (float64, []float64) {
	g.lazyRoom()
	var vr [1]float64
	col := g.catchUp([]int{i}, &g.lz[len(g.lz)-1], vr[:])
	return vr[0], col
}

// lazyColumn is column for a lazy posterior: g.col = V_j(i).
func (g *Posterior) lazyColumn(i int) {
	_, col := g.fresh(i)
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
	s := int(g.ls[x])
	if lb.exact && s == len(g.idx) {
		return g.exactScore(lb, x, g.vr[x]), true
	}
	mu := g.muAt(x, lb.base, lb.mp)
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
	tau, xs := math.Inf(-1), make([]int, 0, lazyBatch)
	for wk, x := range top {
		tau = max(tau, g.bestScore[wk])
		if x >= 0 {
			xs = append(xs, x)
		}
	}
	var vr [lazyBatch]float64
	for len(xs) > 0 {
		k := min(len(xs), lazyBatch)
		g.catchUp(xs[:k], &g.lz[len(g.lz)-1], vr[:k])
		for i, x := range xs[:k] {
			if sc := g.exactScore(&lb, x, vr[i]); sc > tau {
				tau = sc
			}
		}
		xs = xs[k:]
	}
	g.parallel(func(wk, lo, hi int) {
		g.bestIdx[wk], g.bestScore[wk] = g.lazyScan(&lb, &g.lz[wk], lo, hi, tau, skip)
	})
}

// exactScore is the score of an up-to-date candidate x whose σ̃² with the
// pending fantasies is vr.
func (g *Posterior) exactScore(lb *lazyBound, x int, vr float64) float64 {
	return g.muAt(x, lb.base, lb.mp) + lb.sb*math.Sqrt(max(vr, 0))
}

// lazyScan returns the best candidate of [lo, hi) (ties to the lowest index),
// bringing up to date those whose bound is not below the best score so far (at
// least tau); candidates below tau are never returned. Candidates that pass are
// held back until lazyBatch of them need bringing up to date together, then
// judged in index order against the best score as it then is, so that the
// choices are those of a scan that takes one candidate at a time.
func (g *Posterior) lazyScan(lb *lazyBound, sc *lazyScratch, lo, hi int, tau float64, skip bool) (int, float64) {
	best, bestScore := -1, math.Inf(-1)
	var held [4 * lazyBatch]struct {
		x     int
		s     float64
		stale bool
	}
	var xs [lazyBatch]int
	var vr [lazyBatch]float64
	nh, ns := 0, 0
	flush := func() {
		g.catchUp(xs[:ns], sc, vr[:ns])
		k := 0
		for _, h := range held[:nh] {
			s := h.s
			if h.stale {
				if k++; s < max(tau, bestScore) {
					continue
				}
				s = g.exactScore(lb, h.x, vr[k-1])
			}
			if !math.IsNaN(s) && (best < 0 || s > bestScore) {
				best, bestScore = h.x, s
			}
		}
		nh, ns = 0, 0
	}
	for x := lo; x < hi; x++ {
		if skip && g.queried[x] {
			continue
		}
		s, ok := g.lazyScore(lb, x)
		switch {
		case !ok && s < max(tau, bestScore):
			continue
		case ok && nh == 0:
			if !math.IsNaN(s) && (best < 0 || s > bestScore) {
				best, bestScore = x, s
			}
			continue
		case ok && (math.IsNaN(s) || best >= 0 && s <= bestScore):
			continue // the best score only grows: x cannot win
		case !ok:
			xs[ns], ns = x, ns+1
		}
		held[nh].x, held[nh].s, held[nh].stale = x, s, !ok
		if nh++; ns == lazyBatch || nh == len(held) {
			flush()
		}
	}
	if nh > 0 {
		flush()
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
		var xs [lazyBatch]int
		var vr [lazyBatch]float64
		for x := lo; x < hi; {
			nb := 0
			for ; x < hi && nb < lazyBatch; x++ {
				if !skip || !g.queried[x] {
					xs[nb], nb = x, nb+1
				}
			}
			g.catchUp(xs[:nb], &g.lz[wk], vr[:nb])
			for k, x := range xs[:nb] {
				v := score(x, g.muAt(x, base, mp), math.Sqrt(s*s*max(vr[k], 0)))
				if !math.IsNaN(v) && (best < 0 || v > bestScore) {
					best, bestScore = x, v
				}
			}
		}
		g.bestIdx[wk], g.bestScore[wk] = best, bestScore
	})
}
