package dataset

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"

	"github.com/privbo/privbo/pkg/dp"
)

// BoundsEstimator names the algorithm of EstimateBoundsWith and its
// constants. A stored estimate is valid only for the estimator that made it:
// the curator puts this name into the ledger key of its private scaling
// estimate, so changing the algorithm (or any constant below) must change it.
const BoundsEstimator = "loghist-2release/1"

// The constants of the estimator (package doc, "Private bounds").
const (
	// boundsMinExp and boundsMaxExp span the log grid: magnitudes below
	// 2^boundsMinExp (≈ 9.5e-7) fall in the zero bin, magnitudes at or above
	// 2^boundsMaxExp (≈ 1.1e12) in the outermost bins, whose outer edge
	// ±2^boundsMaxExp is then the bound (values beyond are clamped).
	boundsMinExp = -20
	boundsMaxExp = 40
	// boundsMaxBinsPerOctave caps the grid's resolution f.
	boundsMaxBinsPerOctave = 64
	// boundsRefineShare is λ, the share of the privacy budget spent on the
	// second release (ρ₂ = λρ, or ε₂ = λε).
	boundsRefineShare = 0.15
	// boundsFineBins is the number of equal-width bins of the second
	// release's histogram over a concentrated column's located range.
	boundsFineBins = 64
	// boundsFalsePositive is β, the probability that an empty bin of any
	// column passes the detection threshold (union bound), and the per-column
	// probability of a false zero-bin, mirror or refinement detection.
	boundsFalsePositive = 1e-3
	// boundsWindowOctaves is the width of the window that locates the bulk.
	boundsWindowOctaves = 2
	// boundsGrowOctaves bounds how far the support grows from the window.
	boundsGrowOctaves = 8
	// boundsZeroExtension is c: an interval [L, U] with 0 < L ≤ c·(U − L)
	// (or the mirror) is extended to zero.
	boundsZeroExtension = 0.5
)

// BoundsPrivacy is the privacy of a bounds estimate under the replacement of
// one record (ledger.RelationRecord). Delta = 0 makes the estimate pure
// ε-DP (discrete Laplace noise, basic composition); Delta > 0 makes it
// (ε, δ)-DP through zero-concentrated DP (discrete Gaussian noise, whose
// lighter tails give much lower detection thresholds, and whose √columns
// scaling makes many columns cheaper).
type BoundsPrivacy struct {
	Epsilon, Delta float64
}

func (p BoundsPrivacy) validate() error {
	if err := dp.ValidateEpsilon(p.Epsilon); err != nil {
		return err
	}
	if p.Delta != 0 {
		if err := dp.ValidateDelta(p.Delta); err != nil {
			return err
		}
	}
	return nil
}

// String formats p as "ε = 1" or "ε = 1, δ = 1e-07", to six significant
// digits.
func (p BoundsPrivacy) String() string {
	s := "ε = " + strconv.FormatFloat(p.Epsilon, 'g', 6, 64)
	if p.Delta > 0 {
		s += ", δ = " + strconv.FormatFloat(p.Delta, 'g', 6, 64)
	}
	return s
}

// EstimateBounds estimates bounds of each column of the row-major n×d matrix
// x with ε-differential privacy (pure, δ = 0) under the replacement of one
// record: EstimateBoundsWith with BoundsPrivacy{Epsilon: epsilon}. DP-HyPO
// jobs (package tuning) charge ε alone, so they use this form.
func EstimateBounds(x []float64, n, d int, epsilon float64, src *dp.Source) ([]Bounds, error) {
	return EstimateBoundsWith(x, n, d, BoundsPrivacy{Epsilon: epsilon}, src)
}

// EstimateBoundsWith estimates public-safe bounds [Lower, Upper] of each
// column of the row-major n×d matrix x (n ≥ 1; d = 1 for a single column),
// differentially private with p under the replacement of one record
// (ledger.RelationRecord: one row of x replaced by any other row, n fixed).
// The algorithm, its privacy proof and what it achieves are in the package
// doc ("Private bounds"): two releases of noisy histograms of all columns at
// once, the first over a logarithmic grid, the second either the same again
// or, for a column found concentrated far from zero, a fine linear grid over
// its located range; everything after the noise is post-processing.
//
// Charge p to the ledger before calling. Values must be finite. The bounds
// aim at covering the bulk of each column (about its 1st to 99th
// percentile); ForecastBounds predicts from n, d and p alone how well.
func EstimateBoundsWith(x []float64, n, d int, p BoundsPrivacy, src *dp.Source) ([]Bounds, error) {
	fail := func(err error) ([]Bounds, error) { return nil, fmt.Errorf("dataset: bounds estimate: %w", err) }
	if n < 1 || d < 1 || len(x) != n*d {
		return nil, fmt.Errorf("dataset: EstimateBounds needs n ≥ 1, d ≥ 1 and len(x) = n·d, got n %d, d %d, len(x) %d", n, d, len(x))
	}
	if err := p.validate(); err != nil {
		return fail(err)
	}
	if src == nil {
		return fail(errors.New("nil Source"))
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fail(errors.New("the data hold a NaN or infinite value"))
		}
	}
	nz, err := newBoundsNoise(d, p)
	if err != nil {
		return fail(err)
	}
	prm := boundsParamsFor(n, nz.combinedSD())
	g := newLogGrid(prm.f)
	K := g.bins()
	col := func(j int, dst []float64) []float64 {
		for i := range n {
			dst[i] = x[i*d+j]
		}
		return dst
	}
	values := make([]float64, n)

	// Release 1: the log-grid histogram of every column, noised at once.
	counts := make([]int64, d*K)
	for j := range d {
		h := counts[j*K : (j+1)*K]
		for _, v := range col(j, values) {
			h[g.bin(v)]++
		}
	}
	noisy1 := make([]int64, len(counts))
	if err := nz.noise(0, src, noisy1); err != nil {
		return fail(err)
	}
	for i := range noisy1 {
		noisy1[i] += counts[i]
	}

	// Which columns to refine, from release 1 alone (post-processing).
	fine := make([]*fineGrid, d)
	h1 := make([]float64, K)
	for j := range d {
		toFloat(h1, noisy1[j*K:(j+1)*K])
		loc := g.locate(h1, n, nz.sd[0], nz, d, prm)
		fine[j] = g.concentrated(h1, loc, n, nz.sd[0])
	}

	// Release 2: per column, the fine histogram over its located range, or the
	// log-grid histogram again; one bin per record either way.
	offs := make([]int, d+1)
	for j := range d {
		w := K
		if fine[j] != nil {
			w = fine[j].m + 2
		}
		offs[j+1] = offs[j] + w
	}
	counts2 := make([]int64, offs[d])
	for j := range d {
		h := counts2[offs[j]:offs[j+1]]
		for _, v := range col(j, values) {
			if fine[j] != nil {
				h[fine[j].bin(v)]++
			} else {
				h[g.bin(v)]++
			}
		}
	}
	noisy2 := make([]int64, len(counts2))
	if err := nz.noise(1, src, noisy2); err != nil {
		return fail(err)
	}
	for i := range noisy2 {
		noisy2[i] += counts2[i]
	}

	// Post-processing.
	out := make([]Bounds, d)
	hc := make([]float64, K)
	for j := range d {
		toFloat(h1, noisy1[j*K:(j+1)*K])
		h2 := make([]float64, offs[j+1]-offs[j])
		toFloat(h2, noisy2[offs[j]:offs[j+1]])
		if fg := fine[j]; fg != nil {
			if b, ok := fg.bounds(h2, n, nz, prm); ok {
				out[j] = b
				continue
			}
			out[j] = g.bounds(g.locate(h1, n, nz.sd[0], nz, d, prm), prm)
			continue
		}
		// Inverse-variance combination of the two releases of the same
		// histogram: noise variance 1/(1/σ₁² + 1/σ₂²).
		w1, w2 := 1/(nz.sd[0]*nz.sd[0]), 1/(nz.sd[1]*nz.sd[1])
		for b := range hc {
			hc[b] = (h1[b]*w1 + h2[b]*w2) / (w1 + w2)
		}
		out[j] = g.bounds(g.locate(hc, n, nz.combinedSD(), nz, d, prm), prm)
	}
	return out, nil
}

func toFloat(dst []float64, src []int64) {
	for i, v := range src {
		dst[i] = float64(v)
	}
}

// boundsNoise is the noise of the two releases: discrete Gaussian with the
// variance parameters sigma2 (Delta > 0) or discrete Laplace with the scales
// scale (Delta = 0), release k getting the share 1 − λ (k = 0) or λ (k = 1).
type boundsNoise struct {
	gaussian bool
	rho      float64 // total ρ of the zCDP guarantee (Gaussian)
	sigma2   [2]*big.Rat
	scale    [2]*big.Rat
	sd       [2]float64 // standard deviation of one noise draw of each release
}

// newBoundsNoise calibrates the noise of columns histograms (package doc):
// every release has L2 sensitivity √(2·columns) and L1 sensitivity
// 2·columns under the replacement of one record.
func newBoundsNoise(columns int, p BoundsPrivacy) (*boundsNoise, error) {
	shares := [2]float64{1 - boundsRefineShare, boundsRefineShare}
	nz := &boundsNoise{gaussian: p.Delta > 0}
	c := float64(columns)
	if nz.gaussian {
		nz.rho = dp.ZCDPRho(p.Epsilon, p.Delta)
		if !(nz.rho > 0) {
			return nil, fmt.Errorf("no ρ > 0 gives (ε = %g, δ = %g)", p.Epsilon, p.Delta)
		}
		for k, s := range shares {
			// ρ_k = Δ²/(2σ_k²) with Δ² = 2·columns.
			v, err := ratUp(c / (s * nz.rho))
			if err != nil {
				return nil, err
			}
			nz.sigma2[k] = v
			f, _ := v.Float64()
			nz.sd[k] = math.Sqrt(f)
		}
		return nz, nil
	}
	for k, s := range shares {
		// ε_k = Δ₁/t_k with Δ₁ = 2·columns.
		v, err := ratUp(2 * c / (s * p.Epsilon))
		if err != nil {
			return nil, err
		}
		nz.scale[k] = v
		f, _ := v.Float64()
		nz.sd[k] = math.Sqrt2 * f
	}
	return nz, nil
}

// maxNoiseScale bounds σ² and t so that every noise draw fits an int64 with
// overwhelming probability (dp.DiscreteGaussianSampler.Int64s).
const maxNoiseScale = 1 << 60

// ratUp returns the smallest multiple of 2⁻²⁰ at or above v > 0: rounding
// the noise scale up keeps the guarantee.
func ratUp(v float64) (*big.Rat, error) {
	if !(v > 0) || v > maxNoiseScale {
		return nil, fmt.Errorf("noise scale %g is outside (0, 2^60]: ε is too small for this many columns", v)
	}
	num, _ := new(big.Float).SetFloat64(math.Ceil(math.Ldexp(v, 20))).Int(nil)
	return new(big.Rat).SetFrac(num, big.NewInt(1<<20)), nil
}

// combinedSD is the noise sd of the inverse-variance combination of both
// releases of the same histogram.
func (nz *boundsNoise) combinedSD() float64 {
	return 1 / math.Sqrt(1/(nz.sd[0]*nz.sd[0])+1/(nz.sd[1]*nz.sd[1]))
}

// tail returns the level one noise draw of standard deviation sd exceeds
// with probability q: σ·Φ⁻¹(1 − q) for Gaussian noise, t·ln(1/(2q)) for
// Laplace noise of scale t = sd/√2.
func (nz *boundsNoise) tail(sd, q float64) float64 {
	if nz.gaussian {
		return sd * math.Sqrt2 * math.Erfcinv(2*q)
	}
	return sd / math.Sqrt2 * math.Log(1/(2*q))
}

// noise fills dst with independent draws of release k's noise.
func (nz *boundsNoise) noise(k int, src *dp.Source, dst []int64) error {
	if nz.gaussian {
		s, err := dp.NewDiscreteGaussianSampler(nz.sigma2[k])
		if err != nil {
			return err
		}
		return s.Int64s(src, dst)
	}
	for i := range dst {
		z, err := dp.DiscreteLaplace(src, nz.scale[k])
		if err != nil {
			return err
		}
		if !z.IsInt64() {
			return errors.New("a discrete Laplace draw does not fit in 64 bits")
		}
		dst[i] = z.Int64()
	}
	return nil
}

// boundsParams are the estimator's public settings for n records and a
// combined noise sd (package doc): the grid's resolution f, the share α of
// the located mass an interval may leave out, and its margin.
type boundsParams struct {
	f             int
	alpha, margin float64
}

func boundsParamsFor(n int, sd float64) boundsParams {
	f := 1
	for 2*f <= boundsMaxBinsPerOctave && float64(2*f) <= float64(n)/(8*sd) {
		f *= 2
	}
	alpha := min(max(sd*math.Sqrt(2*float64(f))/float64(n), 0.02), 0.1)
	return boundsParams{f: f, alpha: alpha, margin: 0.15 + 0.2*(alpha-0.02)/0.08}
}

// logGrid is the signed logarithmic grid with f bins per octave: the zero bin
// (−p₀, p₀) with p₀ = 2^boundsMinExp, and for j = 1..M, M = f·(boundsMaxExp −
// boundsMinExp), the bins p_{j−1} ≤ |v| < p_j of either sign, p_j =
// p₀·2^{j/f}; magnitudes at or above p_M fall in bin M. Bin b covers
// [edges[b], edges[b+1]); bins run from the most negative to the most
// positive, the zero bin is bin zero = M.
type logGrid struct {
	f     int
	pos   []float64 // p_0 … p_M
	edges []float64 // −p_M … −p_0, p_0 … p_M
	zero  int
}

func newLogGrid(f int) *logGrid {
	m := f * (boundsMaxExp - boundsMinExp)
	pos := make([]float64, m+1)
	for j := range pos {
		pos[j] = math.Ldexp(math.Exp2(float64(j%f)/float64(f)), boundsMinExp+j/f)
	}
	edges := make([]float64, 0, 2*m+2)
	for j := m; j >= 0; j-- {
		edges = append(edges, -pos[j])
	}
	edges = append(edges, pos...)
	return &logGrid{f: f, pos: pos, edges: edges, zero: m}
}

func (g *logGrid) bins() int { return len(g.edges) - 1 }

// bin returns the bin of v.
func (g *logGrid) bin(v float64) int {
	a := math.Abs(v)
	// j = #{p_i ≤ |v|}: 0 in the zero bin, else the magnitude bin.
	j := sort.Search(len(g.pos), func(i int) bool { return g.pos[i] > a })
	j = min(j, len(g.pos)-1)
	if v < 0 {
		return g.zero - j
	}
	return g.zero + j
}

// located is what locate found: the narrowest bin range [la, lb] holding the
// target mass, and whether it holds bins of negative or positive values.
type located struct {
	la, lb   int
	neg, pos bool
	// mass is the noisy count of the support's bins, bins their number.
	mass float64
	bins int
}

// locate runs the post-processing of one column's noisy log histogram h
// (noise sd sd; n records; columns histograms released together): the
// support S is the best window of boundsWindowOctaves, the mirror of that
// window when it holds mass, every bin above the union-bound threshold and
// the zero bin above its own threshold, each with half an octave around it,
// grown by half-octave chunks while mass is missing; then the narrowest
// interval of S-bins holding (1 − α) of the located mass.
func (g *logGrid) locate(h []float64, n int, sd float64, nz *boundsNoise, columns int, prm boundsParams) located {
	K := len(h)
	pre := make([]float64, K+1)
	for b, v := range h {
		pre[b+1] = pre[b] + v
	}
	sum := func(a, b int) float64 { return pre[b+1] - pre[a] } // bins a..b
	in := make([]bool, K)
	mark := func(a, b int) {
		for i := max(a, 0); i <= min(b, K-1); i++ {
			in[i] = true
		}
	}
	w := boundsWindowOctaves * g.f
	half := max(1, g.f/2)
	// The bulk: the window of w bins with the largest noisy sum.
	ba, bs := 0, math.Inf(-1)
	for a := 0; a+w <= K; a++ {
		if s := sum(a, a+w-1); s > bs {
			ba, bs = a, s
		}
	}
	mark(ba-half, ba+w-1+half)
	// Its mirror, for data on both sides of zero: one test per column.
	if ma, mb := 2*g.zero-(ba+w-1), 2*g.zero-ba; ma >= 0 && mb < K &&
		sum(ma, mb) >= math.Sqrt(float64(w))*nz.tail(sd, boundsFalsePositive) {
		mark(ma-half, mb+half)
	}
	// Bins far from the bulk: a union bound over all bins of all columns, and
	// the zero bin (exact zeros are common) with its own per-column level.
	tau := nz.tail(sd, boundsFalsePositive/float64(K*columns))
	tau0 := nz.tail(sd, boundsFalsePositive)
	for b, v := range h {
		if v >= tau || (b == g.zero && v >= tau0) {
			mark(b-half, b+half)
		}
	}
	// Growth toward missing mass (n is public under replacement).
	mass := func() float64 {
		s := 0.0
		for b, ok := range in {
			if ok {
				s += h[b]
			}
		}
		return s
	}
	grow := math.Sqrt(float64(half)) * 2 * sd
	for range boundsGrowOctaves * g.f / half {
		if float64(n)-mass() <= prm.alpha/2*float64(n) {
			break
		}
		best, bv := -1, math.Inf(-1)
		for b := range K {
			if !in[b] {
				continue
			}
			if b+1 < K && !in[b+1] {
				if v := sum(b+1, min(b+half, K-1)); v > bv {
					best, bv = b+1, v
				}
			}
			if b > 0 && !in[b-1] {
				if a := max(b-half, 0); sum(a, b-1) > bv {
					best, bv = a, sum(a, b-1)
				}
			}
		}
		if best < 0 || bv < grow {
			break
		}
		mark(best, best+half-1)
	}
	var idx []int
	var sPre []float64 // sPre[i] = Σ_{k<i} h[idx[k]]
	sPre = append(sPre, 0)
	for b, ok := range in {
		if ok {
			idx = append(idx, b)
			sPre = append(sPre, sPre[len(sPre)-1]+h[b])
		}
	}
	target := (1 - prm.alpha) * min(float64(n), sPre[len(idx)])
	la, lb, ok := narrowest(idx, sPre, g.edges, target)
	if !ok {
		la, lb = idx[0], idx[len(idx)-1]
	}
	// The interval reaches a sign when it holds a bin of that sign beyond the
	// zero bin (the zero bin's neighbours alone are no evidence of either).
	return located{la: la, lb: lb, neg: la < g.zero, pos: lb > g.zero, mass: sPre[len(idx)], bins: len(idx)}
}

// narrowest returns the bins [idx[a], idx[b]] spanning the least width
// edges[idx[b]+1] − edges[idx[a]] among those whose bins in idx hold at least
// target (sPre the prefix sums over idx), and false if none does.
func narrowest(idx []int, sPre, edges []float64, target float64) (la, lb int, ok bool) {
	best := math.Inf(1)
	for a := range idx {
		for b := a; b < len(idx); b++ {
			if sPre[b+1]-sPre[a] >= target {
				if w := edges[idx[b]+1] - edges[idx[a]]; w < best {
					best, la, lb, ok = w, idx[a], idx[b], true
				}
				break
			}
		}
	}
	return la, lb, ok
}

// bounds turns a located range into bounds: a margin on either side, no
// extension across zero toward a sign the range did not hold, and the
// extension to zero of an interval that lies close to it.
func (g *logGrid) bounds(loc located, prm boundsParams) Bounds {
	lo, hi := g.edges[loc.la], g.edges[loc.lb+1]
	w := hi - lo
	lo, hi = lo-prm.margin*w, hi+prm.margin*w
	p0 := g.pos[0]
	if !loc.neg {
		lo = max(lo, -p0)
	}
	if !loc.pos {
		hi = min(hi, p0)
	}
	if lo > 0 && lo <= boundsZeroExtension*(hi-lo) {
		lo = -p0
	}
	if hi < 0 && -hi <= boundsZeroExtension*(hi-lo) {
		hi = p0
	}
	return Bounds{Lower: lo, Upper: hi}
}

// concentrated returns the fine grid of release 2 for a column whose located
// range (without margin) lies within two bins, or a quarter of an octave on a
// finer grid, of one sign away from zero, whose support's noisy mass is
// within two noise sds (sd per bin) of n and whose zero bin's noisy count h is
// below 2·sd; nil for any other column.
func (g *logGrid) concentrated(h []float64, loc located, n int, sd float64) *fineGrid {
	lo, hi := g.edges[loc.la], g.edges[loc.lb+1]
	ratio := math.Exp2(max(2/float64(g.f), 0.25))
	if !(lo > 0 && hi <= lo*ratio) && !(hi < 0 && -lo <= -hi*ratio) {
		return nil
	}
	// The support must account for the rows (n is public), and the zero bin must
	// look empty: a column whose other rows were not located (the 0s of a 0/1
	// column whose zero bin fell short of its threshold) is not concentrated,
	// and refining it would lose them.
	if loc.mass < float64(n)-2*sd*math.Sqrt(float64(loc.bins)) || h[g.zero] >= 2*sd {
		return nil
	}
	w := (hi - lo) / 2
	return &fineGrid{a: lo - w, b: hi + w, m: boundsFineBins}
}

// fineGrid is release 2's grid for a concentrated column: bin 0 holds the
// values below a, bins 1..m split [a, b) into equal widths, bin m+1 holds
// the values at or above b.
type fineGrid struct {
	a, b float64
	m    int
}

func (fg *fineGrid) bin(v float64) int {
	switch {
	case v < fg.a:
		return 0
	case v >= fg.b:
		return fg.m + 1
	}
	k := int((v - fg.a) / (fg.b - fg.a) * float64(fg.m))
	return 1 + min(max(k, 0), fg.m-1)
}

// edge returns the lower edge of bin k ∈ 1..m+1 (edge(m+1) = b).
func (fg *fineGrid) edge(k int) float64 {
	if k == fg.m+1 {
		return fg.b
	}
	return fg.a + (fg.b-fg.a)*float64(k-1)/float64(fg.m)
}

// bounds returns the narrowest run of fine bins holding (1 − α) of the rows
// inside [a, b) (n less the noisy under- and overflow counts; less whole noise
// sds when no run holds that much), with the margin, when some fine bin passes the union-bound threshold over the m
// bins; false otherwise (the column was not concentrated at this
// resolution, and release 1 decides).
func (fg *fineGrid) bounds(h []float64, n int, nz *boundsNoise, prm boundsParams) (Bounds, bool) {
	tau := nz.tail(nz.sd[1], boundsFalsePositive/float64(fg.m))
	if slices.Max(h[1:fg.m+1]) < tau {
		return Bounds{}, false
	}
	idx := make([]int, fg.m)
	sPre := make([]float64, fg.m+1)
	edges := make([]float64, fg.m+2)
	for k := 1; k <= fg.m; k++ {
		idx[k-1] = k
		sPre[k] = sPre[k-1] + h[k]
	}
	for k := range edges {
		edges[k] = fg.edge(min(max(k, 1), fg.m+1))
	}
	// The rows inside [a, b): n less the noisy underflow and overflow counts, whose
	// noise is that of two bins rather than of all m. A run's noisy mass may fall
	// short of its share of them by the noise; the target then steps down by one
	// noise sd until some run reaches it.
	inside := min(float64(n), max(0, float64(n)-max(h[0], 0)-max(h[fg.m+1], 0)))
	la, lb := 1, fg.m
	for target := (1 - prm.alpha) * inside; target > 0; target -= nz.sd[1] {
		if a, b, ok := narrowest(idx, sPre, edges, target); ok {
			la, lb = a, b
			break
		}
	}
	lo, hi := fg.edge(la), fg.edge(lb+1)
	w := hi - lo
	return Bounds{Lower: lo - prm.margin*w, Upper: hi + prm.margin*w}, true
}

// BoundsQuality is ForecastBounds' verdict.
type BoundsQuality int

const (
	// BoundsGood: a group of rows holding 10% of a column is found in 95% of
	// runs anywhere on the grid; intervals fit each column closely.
	BoundsGood BoundsQuality = iota
	// BoundsCoarse: such a group needs up to half the rows: the bulk of each
	// column is found, its edges coarsely.
	BoundsCoarse
	// BoundsPoor: it needs more than half the rows: the estimate cannot
	// locate the data reliably.
	BoundsPoor
)

// FoundShare levels separating the qualities.
const (
	boundsGoodFoundShare   = 0.10
	boundsCoarseFoundShare = 0.50
)

func (q BoundsQuality) String() string {
	switch q {
	case BoundsGood:
		return "good"
	case BoundsCoarse:
		return "coarse"
	}
	return "poor"
}

// BoundsForecast predicts the quality of EstimateBoundsWith from public
// quantities only: the number of records, of columns and the privacy.
type BoundsForecast struct {
	N, Columns int
	Privacy    BoundsPrivacy
	// NoiseSD is the standard deviation of one noisy count (records), both
	// releases combined; NoiseShare = NoiseSD/N.
	NoiseSD, NoiseShare float64
	// FoundShare is the share of a column's rows that one bin must hold to
	// pass the detection threshold (the union bound over all bins of all
	// columns) in 95% of runs: (threshold + 1.645·NoiseSD)/N, capped at 1.
	// Groups of rows away from a column's bulk (the 0s of a 0/1 column, a
	// second mode) are found only at this size; the bulk itself is located
	// by windows of two octaves, which need less.
	FoundShare float64
	// BinsPerOctave is the grid's resolution f.
	BinsPerOctave int
	Quality       BoundsQuality
}

// ForecastBounds predicts EstimateBoundsWith's quality for n records and
// columns columns at privacy p. The verdict rests on FoundShare (good up to
// 10%, coarse up to 50%, poor above), calibrated by simulation
// (docs/EXPERIMENTS.md, "Private bounds"): at the shipped diabetes file's
// 35% (n = 442, 11 columns, ε = 1, δ = 1e-7) every interval met 0.5–4× its
// column's 1st–99th percentile width with ≥ 90% coverage in 94 of 100 runs,
// while zero-centred, heavy-tailed and two-valued synthetic columns fail
// far more often at that level; at breast_cancer's 46% (31 columns) one
// interval in ten fails; at 63% most synthetic columns fail.
func ForecastBounds(n, columns int, p BoundsPrivacy) (BoundsForecast, error) {
	if n < 1 || columns < 1 {
		return BoundsForecast{}, fmt.Errorf("dataset: ForecastBounds needs n ≥ 1 and columns ≥ 1, got %d and %d", n, columns)
	}
	if err := p.validate(); err != nil {
		return BoundsForecast{}, fmt.Errorf("dataset: bounds forecast: %w", err)
	}
	nz, err := newBoundsNoise(columns, p)
	if err != nil {
		return BoundsForecast{}, fmt.Errorf("dataset: bounds forecast: %w", err)
	}
	return forecast(n, columns, p, nz), nil
}

func forecast(n, columns int, p BoundsPrivacy, nz *boundsNoise) BoundsForecast {
	sd := nz.combinedSD()
	prm := boundsParamsFor(n, sd)
	K := newLogGrid(prm.f).bins()
	tau := nz.tail(sd, boundsFalsePositive/float64(K*columns))
	f := BoundsForecast{N: n, Columns: columns, Privacy: p, NoiseSD: sd, NoiseShare: sd / float64(n),
		FoundShare: min(1, (tau+1.645*sd)/float64(n)), BinsPerOctave: prm.f}
	switch {
	case f.FoundShare <= boundsGoodFoundShare:
		f.Quality = BoundsGood
	case f.FoundShare <= boundsCoarseFoundShare:
		f.Quality = BoundsCoarse
	default:
		f.Quality = BoundsPoor
	}
	return f
}

// EpsilonFor returns the smallest ε (to 1%) at which the forecast, with its
// n, columns and δ, reaches quality q or better; +Inf above ε = 10⁴.
func (f BoundsForecast) EpsilonFor(q BoundsQuality) float64 {
	ok := func(eps float64) bool {
		p := BoundsPrivacy{Epsilon: eps, Delta: f.Privacy.Delta}
		nz, err := newBoundsNoise(f.Columns, p)
		return err == nil && forecast(f.N, f.Columns, p, nz).Quality <= q
	}
	lo, hi := 1e-6, 1.0
	for !ok(hi) {
		if lo, hi = hi, 2*hi; hi > 1e4 {
			return math.Inf(1)
		}
	}
	for hi/lo > 1.01 {
		if mid := math.Sqrt(lo * hi); ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// String summarises the forecast in one line, without the verdict.
func (f BoundsForecast) String() string {
	return fmt.Sprintf("%d records, %d columns at %s (record replacement): each noisy count has sd %.3g records (%s of the rows); "+
		"a group of rows away from a column's bulk is found when it holds %s of the rows",
		f.N, f.Columns, f.Privacy, f.NoiseSD, percent(f.NoiseShare), percent(f.FoundShare))
}

// percent formats a share as a percentage with two significant digits.
func percent(v float64) string {
	if p := 100 * v; p >= 10 {
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(100*v, 'g', 2, 64) + "%"
}

// EstimateScaling returns s (mode ScalePrivate) with its Schema set to
// bounds estimated by EstimateBoundsWith from r's features and, when
// targetEpsilon > 0, the target's range, all in one estimate with privacy
// (s.Epsilon + targetEpsilon, s.Delta) under the replacement of one record
// (ledger.RelationRecord). Charge that to the ledger before calling, then
// pass the result to r.Scale.
func (r *Raw) EstimateScaling(s Scaling, targetEpsilon float64, src *dp.Source) (Scaling, error) {
	if s.mode() != ScalePrivate {
		return Scaling{}, fmt.Errorf("dataset: EstimateScaling needs scaling mode %s, got %s", ScalePrivate, s.mode())
	}
	if !(s.Epsilon > 0) {
		return Scaling{}, fmt.Errorf("dataset: private scaling needs the ε to spend on its bounds (Scaling.Epsilon or \"private:EPS\"), got %g", s.Epsilon)
	}
	if targetEpsilon < 0 || math.IsNaN(targetEpsilon) || math.IsInf(targetEpsilon, 0) {
		return Scaling{}, fmt.Errorf("dataset: target ε must be finite and ≥ 0, got %g", targetEpsilon)
	}
	names := slices.Clone(r.Features)
	x, d := r.X, r.D
	if targetEpsilon > 0 {
		names = append(names, r.Target)
		x, d = r.XY(), r.D+1
	}
	b, err := EstimateBoundsWith(x, r.N, d, BoundsPrivacy{Epsilon: s.Epsilon + targetEpsilon, Delta: s.Delta}, src)
	if err != nil {
		return Scaling{}, err
	}
	s.Schema = SchemaFromBounds(fmt.Sprintf("(bounds estimated with %s)", BoundsPrivacy{Epsilon: s.Epsilon + targetEpsilon, Delta: s.Delta}), names, b)
	s.TargetEpsilon = targetEpsilon
	return s, nil
}

// XY returns the row-major N×(D+1) matrix of the features with the target as
// the last column.
func (r *Raw) XY() []float64 {
	out := make([]float64, 0, r.N*(r.D+1))
	for i := range r.N {
		out = append(out, r.X[i*r.D:(i+1)*r.D]...)
		out = append(out, r.Y[i])
	}
	return out
}
