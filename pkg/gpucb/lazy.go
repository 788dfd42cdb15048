package gpucb

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/privbo/privbo/internal/hugepage"
)

// Lazy evaluation (PosteriorConfig.Lazy; "Lazy evaluation" in the package
// documentation). Candidate z keeps a(z), b(z) and σ̃²(z) as of the first ls[z]
// real observations, and its column of V if it has a slot (LazyColumns); no row
// of V is stored. A scan bounds every stale candidate's score from that state
// and brings up to date only the candidates whose bound reaches the best exact
// score found so far.

// lazyScratch holds one goroutine's column of V for a candidate without a slot
// brought up to date alone, and a batch's columns interleaved (row i of
// candidate k at lazyBatch·i + k).
type lazyScratch struct {
	col, il, kv []float64 // kv: a batch's kernel values, row by row
	roff        []int     // the offsets of the rows' kernel coordinates
}

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
// any catchUp: when the rows outgrow them, every slot is freed and the stride set
// to twice the rows.
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
	g.cache = hugepage.Floats(g.maxSlots * g.stride)
}

// lazyBatch is how many candidates catchUp brings up to date together: their
// chains of dependent multiply-adds are independent, so the CPU overlaps them.
const lazyBatch = 4

// catchUp brings candidates xs (at most lazyBatch, distinct) up to date by the
// same operations as extend, each from its stored column if it has one and from
// no observation otherwise, so that every value is the one the eager loop
// computes. a, b and σ̃² under the real observations are stored (and ls set to
// T); out[k] is xs[k]'s σ̃² with the pending fantasies. For one candidate its
// column V_j over every row of L is returned (nil for a batch).
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
			g.ls[x] = 0
			if len(xs) == 1 { // a batch keeps no column for a candidate without a slot
				cols[k] = slices.Grow(sc.col[:0], nr)[:nr]
				sc.col = cols[k]
			}
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
	g.chainBatch(xs, sc, &cols, &st, s0, t, nr, &vr, &a, &b)
	for k, x := range xs {
		if nr == t {
			g.vr[x] = vr[k]
		}
		g.a[x], g.ls[x], out[k] = a[k], int32(t), vr[k]
		if g.cfg.Standardise {
			g.b[x] = b[k]
		}
	}
	if len(xs) > 1 {
		return nil
	}
	return cols[0][:nr]
}

// rowStep4 is chainBatch's update at row j when every lane takes it: the four
// lanes' V_j (w, stored in il), σ̃², a and b, the operations of the other path.
func (g *Posterior) rowStep4(v *[lazyBatch]float64, inv float64, il []float64, j, t int, vr, a, b *[lazyBatch]float64) {
	w0, w1, w2, w3 := v[0]*inv, v[1]*inv, v[2]*inv, v[3]*inv
	il = il[:4]
	il[0], il[1], il[2], il[3] = w0, w1, w2, w3
	vr[0] -= float64(w0 * w0)
	vr[1] -= float64(w1 * w1)
	vr[2] -= float64(w2 * w2)
	vr[3] -= float64(w3 * w3)
	if j >= t {
		return
	}
	u := g.u[j]
	a[0] += float64(u * w0)
	a[1] += float64(u * w1)
	a[2] += float64(u * w2)
	a[3] += float64(u * w3)
	if g.cfg.Standardise {
		e := g.e[j]
		b[0] += float64(e * w0)
		b[1] += float64(e * w1)
		b[2] += float64(e * w2)
		b[3] += float64(e * w3)
	}
}

// chainBatch is catchUp's recurrence for two to lazyBatch candidates at once:
// their columns are interleaved in sc.il so that one row's multiply-adds for all
// of them are one vector operation (chain4), run from the lowest st; a
// candidate's values for the rows it already has are computed and dropped.
func (g *Posterior) chainBatch(xs []int, sc *lazyScratch, cols *[lazyBatch][]float64, st *[lazyBatch]int, s0, t, nr int, vr, a, b *[lazyBatch]float64) {
	il := slices.Grow(sc.il[:0], lazyBatch*nr)[:lazyBatch*nr]
	sc.il = il
	for k := range lazyBatch {
		if k >= len(xs) {
			for i := range nr {
				il[lazyBatch*i+k] = 0
			}
			continue
		}
		for i, c := range cols[k][:st[k]] {
			il[lazyBatch*i+k] = c
		}
	}
	var kx [lazyBatch]int // offsets of the kernel coordinates; a lane past len(xs) repeats xs[0]
	self := false         // whether a candidate may be a row of L (every row's is queried)
	for k := range kx {
		x := xs[0]
		if k < len(xs) {
			x = xs[k]
			self = self || g.queried[x]
		}
		kx[k] = x * g.dim
		if g.slot[x] >= 0 && k < len(xs) {
			prefetchAVX(cols[k][st[k]:nr]) // the rows this catch-up writes
		}
	}
	s1 := 0 // from row s1 on every lane is computed (a lane past len(xs) is dropped)
	for k := range xs {
		s1 = max(s1, st[k])
	}
	roff := slices.Grow(sc.roff[:0], nr-s0)[:nr-s0]
	kv := slices.Grow(sc.kv[:0], lazyBatch*(nr-s0))[:lazyBatch*(nr-s0)]
	sc.roff, sc.kv = roff, kv
	for j := s0; j < nr; j++ {
		roff[j-s0] = g.rowAt(j) * g.dim
	}
	g.kernelRows4(kv, &kx, roff) // values for rows a candidate has are dropped
	for j := s0; j < nr; j++ {
		r := g.rowAt(j)
		v := [lazyBatch]float64(kv[lazyBatch*(j-s0):])
		if j == t {
			for k, x := range xs {
				if j >= st[k] {
					g.vr[x] = vr[k]
				}
			}
		}
		if self {
			for k, x := range xs {
				if r == x {
					v[k] = g.kdiag
				}
			}
		}
		off := j * (j + 1) / 2
		chain4(&v, g.lpk[off:off+j], il)
		inv := 1 / g.lpk[off+j]
		if j >= s1 {
			g.rowStep4(&v, inv, il[lazyBatch*j:lazyBatch*j+lazyBatch:lazyBatch*j+lazyBatch], j, t, vr, a, b)
			continue
		}
		for k := range xs {
			if j < st[k] {
				continue
			}
			w := v[k] * inv
			il[lazyBatch*j+k] = w
			vr[k] -= float64(w * w)
			if j < t {
				a[k] += float64(g.u[j] * w)
				if g.cfg.Standardise {
					b[k] += float64(g.e[j] * w)
				}
			}
		}
	}
	for k := range xs {
		if cols[k] == nil {
			continue
		}
		c := cols[k][:nr]
		for j := st[k]; j < nr; j++ {
			c[j] = il[lazyBatch*j+k]
		}
	}
}

// fresh brings candidate i up to date and returns its σ̃² with the pending
// fantasies and its column V_j(i).
func (g *Posterior) fresh(i int) (float64, []float64) {
	g.lazyRoom()
	var vr [1]float64
	col := g.catchUp([]int{i}, &g.lz[len(g.lz)-1], vr[:])
	return vr[0], col
}

// lazyBound holds what a scan needs to bound a stale candidate's score
// µ + sb·σ̃ (package documentation, "Lazy evaluation").
type lazyBound struct {
	base, mp, sb float64
	root         []float64 // root[s] = √(W_s + sb²), W_s = Σ_{s ≤ j < T} (u_j − m′ e_j)², both inflated for rounding
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
	for j, w := range w2 {
		w2[j] = math.Sqrt(w*(1+1e-9)+sb*sb) * (1 + 1e-12)
	}
	const eps = 0x1p-52
	f := float64(nr + 1)
	kd := math.Sqrt(g.kdiag)
	return lazyBound{
		base: base, mp: mp, sb: sb, root: w2,
		sd0:   math.Sqrt(16 * f * eps * g.kdiag),
		slack: 64 * f * eps * (math.Abs(base) + 2*kd*(math.Sqrt(nu)+math.Abs(mp)*math.Sqrt(ne)+math.Abs(sb))),
		exact: nr == t,
	}
}

// lazyScore returns candidate x's score and whether it is exact (else an upper
// bound on the exact score).
func (g *Posterior) lazyScore(lb *lazyBound, x int) (float64, bool) {
	s := int(g.ls[x])
	if lb.exact && s == len(g.idx) {
		return g.exactScore(lb, x, g.vr[x]), true
	}
	mu := g.muAt(x, lb.base, lb.mp)
	sd := math.Sqrt(max(g.vr[x], 0)) + lb.sd0
	return mu + sd*lb.root[s] + 1e-12*math.Abs(mu) + lb.slack, false
}

// lazyChunk is how many candidates a worker of the lazy scan takes at a time:
// stretches of candidates differ in how many pass the bound, and fixed blocks
// leave one worker idle while another catches up.
const lazyChunk = 1 << 14

// lazySeeds is how many of the previous scan's best candidates seed the next.
const lazySeeds = 8

// lazyArgmaxUpper is ArgmaxUpper for a lazy posterior. The previous scan's best
// candidates are brought up to date first: the best of their exact scores is a
// score some candidate has, so a candidate whose bound is below it can be
// neither the argmax nor tied with it. The workers then scan chunks of
// candidates, each raising a shared threshold to the best exact score found;
// the chunks' winners, taken in index order, give the argmax with ties to the
// lowest index, whatever the order the chunks ran in.
func (g *Posterior) lazyArgmaxUpper(base, mp, sb float64, skip bool) {
	g.lazyRoom()
	lb := g.newLazyBound(base, mp, sb)
	tau := math.Inf(-1)
	xs := make([]int, 0, lazySeeds)
	for _, x := range g.seeds {
		if !(skip && g.queried[x]) && !slices.Contains(xs, x) {
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
	nc := (g.n + lazyChunk - 1) / lazyChunk
	g.chunkIdx = slices.Grow(g.chunkIdx[:0], nc)[:nc]
	g.chunkScore = slices.Grow(g.chunkScore[:0], nc)[:nc]
	var next atomic.Int64
	var shared atomic.Uint64 // the threshold's bits; it only rises
	shared.Store(math.Float64bits(tau))
	work := func(wk int) {
		for {
			c := int(next.Add(1)) - 1
			if c >= nc {
				return
			}
			th := math.Float64frombits(shared.Load())
			i, sc := g.lazyScan(&lb, &g.lz[wk], c*lazyChunk, min((c+1)*lazyChunk, g.n), th, skip)
			g.chunkIdx[c], g.chunkScore[c] = i, sc
			for i >= 0 && sc > th && !shared.CompareAndSwap(math.Float64bits(th), math.Float64bits(sc)) {
				th = math.Float64frombits(shared.Load())
			}
		}
	}
	nw := min(len(g.bounds)-1, nc)
	var wg sync.WaitGroup
	for wk := 1; wk < nw; wk++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(wk)
		}()
	}
	work(0)
	wg.Wait()
	won := make([]int, 0, nc) // chunks with a winner, best first (ties: lowest index)
	for c, i := range g.chunkIdx {
		if i >= 0 {
			won = append(won, c)
		}
	}
	slices.SortStableFunc(won, func(a, b int) int { return cmp.Compare(g.chunkScore[b], g.chunkScore[a]) })
	for wk := range g.bestIdx {
		g.bestIdx[wk], g.bestScore[wk] = -1, math.Inf(-1)
	}
	if len(won) > 0 {
		g.bestIdx[0], g.bestScore[0] = g.chunkIdx[won[0]], g.chunkScore[won[0]]
	}
	g.seeds = g.seeds[:0]
	for _, c := range won[:min(len(won), lazySeeds)] {
		g.seeds = append(g.seeds, g.chunkIdx[c])
	}
}

// exactScore is the score of an up-to-date candidate x whose σ̃² with the
// pending fantasies is vr.
func (g *Posterior) exactScore(lb *lazyBound, x int, vr float64) float64 {
	return g.muAt(x, lb.base, lb.mp) + float64(lb.sb*math.Sqrt(max(vr, 0)))
}

// lazyHeld is how many candidates that pass the bound a scan holds back before
// bringing them up to date, in batches of lazyBatch of the nearest ls: a batch
// runs from its lowest ls, and the others' rows before their own are wasted.
// Holding them also gives the prefetches time. lazyHold bounds the candidates
// held in all (those already up to date too).
const (
	lazyHeld = 4 * lazyBatch
	lazyHold = 4 * lazyHeld
)

// catchUpSorted is catchUp for up to lazyHeld candidates: they are brought up to
// date lazyBatch at a time in order of the row they start from; out[k] is xs[k]'s σ̃² with the pending
// fantasies.
func (g *Posterior) catchUpSorted(xs []int, sc *lazyScratch, out []float64) {
	var order [lazyHeld]int
	ord := order[:len(xs)]
	for k := range ord {
		ord[k] = k
	}
	from := func(x int) int32 { // the row catchUp starts x from: 0 without a slot
		if g.slot[x] < 0 {
			return 0
		}
		return g.ls[x]
	}
	slices.SortFunc(ord, func(a, b int) int { return cmp.Compare(from(xs[a]), from(xs[b])) })
	var batch [lazyBatch]int
	var vr [lazyBatch]float64
	for len(ord) > 0 {
		m := min(len(ord), lazyBatch)
		for k, o := range ord[:m] {
			batch[k] = xs[o]
		}
		g.catchUp(batch[:m], sc, vr[:m])
		for k, o := range ord[:m] {
			out[o] = vr[k]
		}
		ord = ord[m:]
	}
}

// lazyScan returns the best candidate of [lo, hi) (ties to the lowest index),
// bringing up to date those whose bound is not below the best score so far (at
// least tau); a stale candidate whose bound is below tau is never brought up to
// date, so the result, if below tau, is not the argmax. Candidates that pass are
// held back until lazyHeld of them need bringing up to date, then judged in index
// order against the best score as it then is, so that the
// choices are those of a scan that takes one candidate at a time.
func (g *Posterior) lazyScan(lb *lazyBound, sc *lazyScratch, lo, hi int, tau float64, skip bool) (int, float64) {
	best, bestScore := -1, math.Inf(-1)
	var held [lazyHold]struct {
		x     int
		s     float64
		stale bool
	}
	var xs [lazyHeld]int
	var vr [lazyHeld]float64
	nh, ns := 0, 0
	flush := func() {
		g.catchUpSorted(xs[:ns], sc, vr[:ns])
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
			g.prefetch(x)
		}
		held[nh].x, held[nh].s, held[nh].stale = x, s, !ok
		if nh++; ns == len(xs) || nh == len(held) {
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
