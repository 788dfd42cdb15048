package dataset

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// TestLogGrid checks the grid every record is binned on: strictly increasing,
// symmetric edges; 2·f·(boundsMaxExp − boundsMinExp) + 1 bins; every value in
// exactly the bin whose edges hold it, including exact edges, zero, values too
// small for any octave and values beyond the last edge (the outermost bins).
func TestLogGrid(t *testing.T) {
	for _, f := range []int{1, 2, 4, 64} {
		g := newLogGrid(f)
		if want := 2*f*(boundsMaxExp-boundsMinExp) + 1; g.bins() != want {
			t.Fatalf("f = %d: %d bins, want %d", f, g.bins(), want)
		}
		for i := 1; i < len(g.edges); i++ {
			if !(g.edges[i] > g.edges[i-1]) {
				t.Fatalf("f = %d: edges %d and %d are %g and %g, want strictly increasing", f, i-1, i, g.edges[i-1], g.edges[i])
			}
			if g.edges[i] != -g.edges[len(g.edges)-1-i] {
				t.Fatalf("f = %d: edge %d = %g is not the mirror of edge %d = %g", f, i, g.edges[i], len(g.edges)-1-i, g.edges[len(g.edges)-1-i])
			}
		}
		if g.edges[g.zero] != -math.Ldexp(1, boundsMinExp) || g.edges[g.zero+1] != math.Ldexp(1, boundsMinExp) {
			t.Errorf("f = %d: zero bin [%g, %g), want ±2^%d", f, g.edges[g.zero], g.edges[g.zero+1], boundsMinExp)
		}
		for _, e := range []int{-3, 0, 1, 6, 10} { // whole octaves are edges
			if !slices.Contains(g.edges, math.Ldexp(1, e)) {
				t.Errorf("f = %d: 2^%d is not an edge", f, e)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(f), 1))
		vals := []float64{0, math.Ldexp(1, boundsMinExp-3), -math.Ldexp(1, boundsMinExp-3), 1, -1, 2, 64, 62.5, math.Ldexp(1, boundsMaxExp), 1e300, -1e300}
		for range 2000 {
			vals = append(vals, math.Ldexp(rng.NormFloat64(), rng.IntN(80)-30))
		}
		vals = append(vals, g.edges...)
		for _, v := range vals {
			b := g.bin(v)
			lo, hi := g.edges[b], g.edges[b+1]
			inside := lo <= v && v < hi
			switch {
			case b == 0 && v <= lo, b == g.bins()-1 && v >= hi: // beyond the last edge
			case b < g.zero && v == hi: // negative bins hold their upper edge: (−p_j, −p_{j−1}]
			case !inside:
				t.Fatalf("f = %d: bin(%g) = %d = [%g, %g), which does not hold it", f, v, b, lo, hi)
			}
		}
	}
}

// randomTable returns an n×d table of values of many magnitudes and signs,
// with ties and exact zeros.
func randomTable(rng *rand.Rand, n, d int) []float64 {
	x := make([]float64, n*d)
	for i := range x {
		switch rng.IntN(6) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = float64(rng.IntN(3))
		default:
			x[i] = math.Ldexp(rng.NormFloat64(), rng.IntN(60)-25)
		}
	}
	return x
}

// histograms returns what EstimateBoundsWith releases for table x, before
// noise: release 1's log-grid histograms, and release 2's, with the fine grid
// fine[j] for column j where set (the plan release 1 made public).
func histograms(g *logGrid, fine []*fineGrid, x []float64, n, d int) (r1, r2 []int64) {
	K := g.bins()
	r1 = make([]int64, d*K)
	for i := range n {
		for j := range d {
			r1[j*K+g.bin(x[i*d+j])]++
		}
	}
	for j := range d {
		var h []int64
		if fine[j] != nil {
			h = make([]int64, fine[j].m+2)
		} else {
			h = make([]int64, K)
		}
		for i := range n {
			if fine[j] != nil {
				h[fine[j].bin(x[i*d+j])]++
			} else {
				h[g.bin(x[i*d+j])]++
			}
		}
		r2 = append(r2, h...)
	}
	return r1, r2
}

// TestBoundsHistogramSensitivity checks the sensitivity the privacy argument
// rests on (package doc, "Private bounds"): replacing one record moves each
// column's histogram by −1 in one bin and +1 in another (or not at all), in
// both releases, whatever fine grids release 1 chose. So the released vector
// of all d columns moves by at most √(2d) in L2 and 2d in L1, for which the
// noise is calibrated.
func TestBoundsHistogramSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		f := []int{1, 2, 8, 64}[trial%4]
		g := newLogGrid(f)
		n, d := 1+rng.IntN(30), 1+rng.IntN(4)
		x := randomTable(rng, n, d)
		fine := make([]*fineGrid, d)
		for j := range fine {
			if rng.IntN(2) == 0 {
				a := math.Ldexp(rng.NormFloat64(), rng.IntN(20)-10)
				fine[j] = &fineGrid{a: a, b: a + math.Ldexp(1, rng.IntN(10)-5), m: boundsFineBins}
			}
		}
		y := slices.Clone(x)
		i := rng.IntN(n)
		copy(y[i*d:(i+1)*d], randomTable(rng, 1, d)) // replace one whole record
		a1, a2 := histograms(g, fine, x, n, d)
		b1, b2 := histograms(g, fine, y, n, d)
		for rel, ab := range [][2][]int64{{a1, b1}, {a2, b2}} {
			var l1, l2 int64
			for k := range ab[0] {
				diff := ab[0][k] - ab[1][k]
				l1 += max(diff, -diff)
				l2 += diff * diff
			}
			if l1 > int64(2*d) || l2 > int64(2*d) {
				t.Fatalf("trial %d, release %d: one record moved the %d histograms by L1 %d, L2² %d; want ≤ 2d = %d", trial, rel+1, d, l1, l2, 2*d)
			}
		}
		// Every record is counted exactly once per column and release.
		var s1, s2 int64
		for _, v := range a1 {
			s1 += v
		}
		for _, v := range a2 {
			s2 += v
		}
		if s1 != int64(n*d) || s2 != int64(n*d) {
			t.Fatalf("trial %d: histograms hold %d and %d counts, want n·d = %d", trial, s1, s2, n*d)
		}
	}
}

// TestBoundsNoiseCalibration checks the noise against the guarantee it must
// give. Gaussian (δ > 0): release k has variance parameter σ_k² ≥ c/ρ_k with
// ρ₁ = (1 − λ)ρ and ρ₂ = λρ, so the two releases of L2 sensitivity √(2c) are
// together (c/σ₁² + c/σ₂²)-zCDP ≤ ρ-zCDP, and ρ converts to at most the ε
// asked for at δ. Laplace (δ = 0): scale t_k ≥ 2c/ε_k, so release k is
// (2c/t_k)-DP and the two together at most ε.
func TestBoundsNoiseCalibration(t *testing.T) {
	for _, p := range []BoundsPrivacy{{1, 1e-7}, {0.3, 1e-6}, {10, 1e-9}, {1, 0}, {0.05, 0}} {
		for _, c := range []int{1, 11, 31} {
			nz, err := newBoundsNoise(c, p)
			if err != nil {
				t.Fatal(err)
			}
			shares := []float64{1 - boundsRefineShare, boundsRefineShare}
			if p.Delta > 0 {
				rho := 0.0
				for k := range 2 {
					s2, _ := nz.sigma2[k].Float64()
					if s2 < float64(c)/(shares[k]*nz.rho)*(1-1e-15) {
						t.Errorf("%v, %d columns: σ²_%d = %g below c/ρ_%d = %g", p, c, k+1, s2, k+1, float64(c)/(shares[k]*nz.rho))
					}
					// ρ_k = Δ²/(2σ_k²) with Δ² = 2c, exactly in rationals.
					r := new(big.Rat).Quo(big.NewRat(int64(c), 1), nz.sigma2[k])
					rf, _ := r.Float64()
					rho += rf
				}
				if eps := dp.ZCDPEpsilon(rho, p.Delta); eps > p.Epsilon {
					t.Errorf("%v, %d columns: the releases are %g-zCDP, which converts to ε = %g > %g", p, c, rho, eps, p.Epsilon)
				}
				if rho < 0.999*nz.rho {
					t.Errorf("%v, %d columns: the releases use ρ = %g of the %g available", p, c, rho, nz.rho)
				}
				continue
			}
			eps := 0.0
			for k := range 2 {
				e, _ := new(big.Rat).Quo(big.NewRat(int64(2*c), 1), nz.scale[k]).Float64()
				eps += e
			}
			if eps > p.Epsilon*(1+1e-15) || eps < 0.999*p.Epsilon {
				t.Errorf("%v, %d columns: the Laplace releases cost ε = %g, want just below %g", p, c, eps, p.Epsilon)
			}
		}
	}
}

// TestZCDPRhoReference pins the ρ of an (ε, δ) charge against values derived
// independently: the standard conversion ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke
// 2016, Proposition 1.3) gives the closed form ρ = (√(ln(1/δ) + ε) − √ln(1/δ))²,
// which the improved conversion (Canonne, Kamath & Steinke 2020, Proposition
// 12) can only raise; at ε = 1, δ = 1e-7 that is (4.137402 − 4.014735)² =
// 0.015047, and the improved
// conversion's ρ is 0.02019 (its optimum at α ≈ 26.1, checked here by the
// conversion itself at that order).
func TestZCDPRhoReference(t *testing.T) {
	for _, tc := range []struct{ eps, delta float64 }{{1, 1e-7}, {0.5, 1e-6}, {5, 1e-9}} {
		l := math.Log(1 / tc.delta)
		std := math.Pow(math.Sqrt(l+tc.eps)-math.Sqrt(l), 2)
		rho := dp.ZCDPRho(tc.eps, tc.delta)
		if rho < std*(1-1e-9) {
			t.Errorf("ZCDPRho(%g, %g) = %g, below the standard conversion's %g", tc.eps, tc.delta, rho, std)
		}
		if e := dp.ZCDPEpsilon(rho, tc.delta); e > tc.eps || e < tc.eps*(1-1e-6) {
			t.Errorf("ZCDPEpsilon(ZCDPRho(%g, %g)) = %g, want just below %g", tc.eps, tc.delta, e, tc.eps)
		}
	}
	if got := math.Pow(math.Sqrt(math.Log(1e7)+1)-math.Sqrt(math.Log(1e7)), 2); math.Abs(got-0.015047) > 1e-6 {
		t.Errorf("standard-conversion ρ at (1, 1e-7) = %.6f, want 0.015047", got)
	}
	// docs/MATHS.md §6.4: the ρ that gives (1, 1e−6) is 0.0243559704.
	if got := dp.ZCDPRho(1, 1e-6); math.Abs(got/0.0243559704-1) > 1e-6 {
		t.Errorf("ZCDPRho(1, 1e-6) = %.10f, want 0.0243559704", got)
	}
	rho := dp.ZCDPRho(1, 1e-7)
	if math.Abs(rho-0.02019) > 5e-5 {
		t.Errorf("ZCDPRho(1, 1e-7) = %.5f, want 0.02019", rho)
	}
	if e := dp.ConvertRDP(26.1, 26.1*0.02019, 1e-7, true); math.Abs(e-1) > 2e-3 {
		t.Errorf("improved conversion at α = 26.1 of ρ = 0.02019: ε = %.4f, want ≈ 1", e)
	}
}

// TestBoundsThresholds pins the detection thresholds against reference values.
// A single Gaussian draw of sd σ exceeds σ·Φ⁻¹(1 − q) with probability q:
// Φ⁻¹(1 − 10⁻⁷) = 5.199338 and Φ⁻¹(1 − 10⁻³) = 3.090232 (normal tables). A
// Laplace draw of scale t exceeds t·ln(1/(2q)) with probability q:
// ln(5·10⁶) = ln 5 + 6 ln 10 = 15.424948. The union bound over the K = 241 bins
// (f = 2) of 11 columns at β = 10⁻³ puts q at 10⁻³/2651, whose threshold is
// checked by the tail formula itself: ½·erfc(z/√2) = q.
func TestBoundsThresholds(t *testing.T) {
	g := &boundsNoise{gaussian: true}
	l := &boundsNoise{}
	for _, tc := range []struct {
		nz        *boundsNoise
		sd, q     float64
		want, tol float64
	}{
		{g, 1, 1e-7, 5.199338, 1e-5},
		{g, 10, 1e-3, 30.90232, 1e-4},
		{l, math.Sqrt2, 1e-7, 15.424948, 1e-5}, // sd √2 is scale t = 1
	} {
		if got := tc.nz.tail(tc.sd, tc.q); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("tail(sd %g, q %g) gaussian %v = %.6f, want %.6f", tc.sd, tc.q, tc.nz.gaussian, got, tc.want)
		}
	}
	if newLogGrid(2).bins() != 241 {
		t.Errorf("f = 2 grid has %d bins, want 241", newLogGrid(2).bins())
	}
	q := boundsFalsePositive / float64(241*11)
	if z := g.tail(1, q); math.Abs(0.5*math.Erfc(z/math.Sqrt2)/q-1) > 1e-6 || math.Abs(z-4.9468) > 1e-4 {
		t.Errorf("union-bound threshold at q = %g: z = %.6f with tail %g, want 4.9468 with tail q", q, z, 0.5*math.Erfc(z/math.Sqrt2))
	}
}

// TestForecastBounds checks the start-up forecast on the shipped data sets'
// public sizes at the curator's default split (ε_s = 0.1 × 10 = 1, δ_s =
// 0.1 × 1e-6 = 1e-7): each noisy count's sd is √(c/ρ) with ρ = 0.02019
// (TestZCDPRhoReference): 23.34 for diabetes' 11 columns, 39.18 for
// breast_cancer's 31, 22.25 for diamonds' 10; FoundShare is
// (Φ⁻¹(1 − β/(K·c)) + 1.645)·sd/n; and the verdicts follow the levels 10% and
// 50%.
func TestForecastBounds(t *testing.T) {
	p := BoundsPrivacy{Epsilon: 1, Delta: 1e-7}
	for _, tc := range []struct {
		n, c       int
		sd         float64
		f          int
		found      float64
		quality    BoundsQuality
		descriptor string
	}{
		{442, 11, 23.34, 2, (4.9468 + 1.645) * 23.34 / 442, BoundsCoarse, "diabetes"},
		{569, 31, 39.18, 1, -1, BoundsCoarse, "breast_cancer"},
		{53940, 10, 22.25, 64, -1, BoundsGood, "diamonds"},
		{200, 11, 23.34, 1, -1, BoundsPoor, "200 records"},
	} {
		f, err := ForecastBounds(tc.n, tc.c, p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(f.NoiseSD-tc.sd) > 0.01*tc.sd || f.BinsPerOctave != tc.f || f.Quality != tc.quality {
			t.Errorf("%s: ForecastBounds = sd %.3f, f %d, %s; want sd %.2f, f %d, %s", tc.descriptor, f.NoiseSD, f.BinsPerOctave, f.Quality, tc.sd, tc.f, tc.quality)
		}
		if tc.found > 0 && math.Abs(f.FoundShare-tc.found) > 0.005 {
			t.Errorf("%s: FoundShare = %.4f, want %.4f", tc.descriptor, f.FoundShare, tc.found)
		}
		if !strings.Contains(f.String(), fmt.Sprintf("%d records, %d columns at ε = 1, δ = 1e-07", tc.n, tc.c)) {
			t.Errorf("%s: String() = %q", tc.descriptor, f)
		}
		// EpsilonFor: the smallest ε reaching each quality, to 1%.
		for _, q := range []BoundsQuality{BoundsGood, BoundsCoarse} {
			e := f.EpsilonFor(q)
			at := func(eps float64) BoundsQuality {
				g, err := ForecastBounds(tc.n, tc.c, BoundsPrivacy{Epsilon: eps, Delta: p.Delta})
				if err != nil {
					t.Fatal(err)
				}
				return g.Quality
			}
			if at(e) > q || at(e/1.02) <= q {
				t.Errorf("%s: EpsilonFor(%s) = %g: quality there %s, at %g %s", tc.descriptor, q, e, at(e), e/1.02, at(e/1.02))
			}
		}
	}
	if _, err := ForecastBounds(0, 1, p); err == nil {
		t.Error("ForecastBounds(n = 0) = nil error")
	}
	if _, err := ForecastBounds(10, 1, BoundsPrivacy{Epsilon: 1, Delta: 2}); err == nil {
		t.Error("ForecastBounds(δ = 2) = nil error")
	}
}

// colStats are a column's sorted values and 1st and 99th percentiles (linear
// interpolation between order statistics, numpy's default).
type colStats struct {
	name    string
	sorted  []float64
	q1, q99 float64
}

func percentile(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	i := int(math.Floor(h))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

func columnStats(names []string, x []float64, n, d int) []colStats {
	out := make([]colStats, d)
	for j := range d {
		v := make([]float64, n)
		for i := range n {
			v[i] = x[i*d+j]
		}
		sort.Float64s(v)
		out[j] = colStats{names[j], v, percentile(v, 0.01), percentile(v, 0.99)}
	}
	return out
}

// acceptable reports whether b is within [0.5, 4]× the width of the column's
// 1st–99th percentile range and covers at least 90% of its rows (issue 20's
// criterion), with the width ratio and the coverage.
func (c colStats) acceptable(b Bounds) (ok bool, ratio, cover float64) {
	ratio = (b.Upper - b.Lower) / (c.q99 - c.q1)
	lo := sort.SearchFloat64s(c.sorted, b.Lower)
	hi := sort.Search(len(c.sorted), func(i int) bool { return c.sorted[i] > b.Upper })
	cover = float64(hi-lo) / float64(len(c.sorted))
	return ratio >= 0.5 && ratio <= 4 && cover >= 0.9, ratio, cover
}

// acceptance estimates the bounds of every feature and the target of raw with
// p, once per seed, and returns the number of seeds in which every interval
// was acceptable and the share of acceptable intervals over all seeds.
func acceptance(t testing.TB, raw *Raw, p BoundsPrivacy, seeds []uint64) (allOK int, intervals float64, worst string) {
	d := raw.D + 1
	names := append(slices.Clone(raw.Features), raw.Target)
	cols := columnStats(names, raw.XY(), raw.N, d)
	good, fails := 0, make([]int, d)
	for _, seed := range seeds {
		b, err := EstimateBoundsWith(raw.XY(), raw.N, d, p, dptest.Source(seed))
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for j, c := range cols {
			if ok, _, _ := c.acceptable(b[j]); ok {
				good++
			} else {
				all, fails[j] = false, fails[j]+1
			}
		}
		if all {
			allOK++
		}
	}
	w := slices.Index(fails, slices.Max(fails))
	return allOK, float64(good) / float64(len(seeds)*d), fmt.Sprintf("%s (%d of %d seeds)", names[w], fails[w], len(seeds))
}

// TestBoundsAcceptanceShipped is issue 20's acceptance check on the shipped
// files with no schema at --budget-epsilon 10: the curator's estimate spends
// ε_s = 0.1 × 10 = 1 and δ_s = 0.1 × 1e-6 on all columns at once (features
// and target: the answers' range is estimated too). On 100 fixed seeds
// (deterministic: dptest sources), every diabetes interval must be within
// [0.5, 4]× its column's 1st–99th percentile width and cover ≥ 90% of its rows
// in at least 90 seeds (measured: 94), and ≥ 99% of all its intervals. breast_cancer's 31 columns get ε ≈ 0.03
// each and no estimator found reaches that (docs/EXPERIMENTS.md, "Private
// bounds"); the test guards the closest reached, ≥ 85% of its intervals
// acceptable (measured 89.4%; no seed has all 31 acceptable).
func TestBoundsAcceptanceShipped(t *testing.T) {
	seeds := make([]uint64, 100)
	for i := range seeds {
		seeds[i] = uint64(1000 + i)
	}
	p := BoundsPrivacy{Epsilon: 1, Delta: 1e-7}
	for _, tc := range []struct {
		file, target  string
		minAllOK      int
		minIntervals  float64
		measuredNotes string
	}{
		{"diabetes.csv", "progression", 90, 0.99, "issue 20's criterion"},
		{"breast_cancer.csv", "benign", 0, 0.85, "the closest reached"},
	} {
		raw, err := LoadRaw(filepath.Join("..", "..", "examples", "data", tc.file), Options{Target: tc.target})
		if err != nil {
			t.Fatal(err)
		}
		all, share, worst := acceptance(t, raw, p, seeds)
		t.Logf("%s (%s): every interval acceptable in %d of %d seeds; %.1f%% of all intervals acceptable; most failures: %s",
			tc.file, tc.measuredNotes, all, len(seeds), 100*share, worst)
		if all < tc.minAllOK || share < tc.minIntervals {
			t.Errorf("%s: every interval acceptable in %d of %d seeds (want ≥ %d), %.3f of intervals (want ≥ %.2f); most failures: %s",
				tc.file, all, len(seeds), tc.minAllOK, share, tc.minIntervals, worst)
		}
	}
}

// TestEstimateBoundsShapes runs the estimator on columns whose right answer is
// clear, at a budget where the forecast is good: every interval must be
// acceptable in each of 20 fixed seeds. The columns cover what the grid must
// handle: a normal far from zero, zero-centred normal, a log-normal tail, a
// 0/1 column, a 1/2 code, an all-negative column, a column concentrated far
// from zero (refined by release 2) and one beyond the grid's largest edge.
func TestEstimateBoundsShapes(t *testing.T) {
	testrace.Statistical(t)
	const n = 5000
	rng := rand.New(rand.NewPCG(11, 12))
	gens := []struct {
		name string
		gen  func() float64
	}{
		{"normal(50, 10)", func() float64 { return 50 + 10*rng.NormFloat64() }},
		{"normal(0, 1)", func() float64 { return rng.NormFloat64() }},
		{"exp(normal(3, 0.5))", func() float64 { return math.Exp(3 + 0.5*rng.NormFloat64()) }},
		{"0/1, 30% ones", func() float64 { return float64(b2i(rng.Float64() < 0.3)) }},
		{"1/2 code", func() float64 { return 1 + float64(b2i(rng.Float64() < 0.5)) }},
		{"negative", func() float64 { return -200 - 50*rng.ExpFloat64() }},
		{"1000 ± 3", func() float64 { return 1000 + 3*rng.NormFloat64() }},
		{"uniform(-5, 5)", func() float64 { return -5 + 10*rng.Float64() }},
	}
	d := len(gens)
	x := make([]float64, n*d)
	for i := range n {
		for j, g := range gens {
			x[i*d+j] = g.gen()
		}
	}
	names := make([]string, d)
	for j, g := range gens {
		names[j] = g.name
	}
	cols := columnStats(names, x, n, d)
	p := BoundsPrivacy{Epsilon: 4, Delta: 1e-7}
	if f, _ := ForecastBounds(n, d, p); f.Quality != BoundsGood {
		t.Fatalf("forecast %s, want good for this test's budget", f.Quality)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		b, err := EstimateBoundsWith(x, n, d, p, dptest.Source(seed))
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range cols {
			if ok, ratio, cover := c.acceptable(b[j]); !ok {
				t.Errorf("seed %d, %s: bounds [%g, %g]: width %.2f× the 1st–99th percentile range [%g, %g], coverage %.3f; want 0.5–4× and ≥ 0.9",
					seed, c.name, b[j].Lower, b[j].Upper, ratio, c.q1, c.q99, cover)
			}
		}
	}
}

// TestEstimateBoundsAlwaysValid: whatever the data and budget, even a single
// record at a tiny ε under Laplace noise, every estimate is finite with
// Lower < Upper.
func TestEstimateBoundsAlwaysValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 60 {
		n, d := 1+rng.IntN(50), 1+rng.IntN(3)
		x := randomTable(rng, n, d)
		p := BoundsPrivacy{Epsilon: []float64{1e-3, 0.5, 50}[trial%3]}
		if trial%2 == 0 {
			p.Delta = 1e-6
		}
		b, err := EstimateBoundsWith(x, n, d, p, dptest.Source(uint64(trial)))
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range b {
			if !(v.Lower < v.Upper) || math.IsInf(v.Lower, 0) || math.IsInf(v.Upper, 0) {
				t.Fatalf("trial %d (n %d, %v), column %d: bounds %+v, want finite with Lower < Upper", trial, n, p, j, v)
			}
		}
	}
}

func TestEstimateBoundsErrors(t *testing.T) {
	src := dptest.Source(1)
	tests := []struct {
		name  string
		x     []float64
		n, d  int
		eps   float64
		delta float64
		src   *dp.Source
		want  string
	}{
		{"no rows", nil, 0, 1, 1, 0, src, "n ≥ 1"},
		{"shape", []float64{1, 2, 3}, 2, 1, 1, 0, src, "len(x) = n·d"},
		{"zero d", []float64{}, 1, 0, 1, 0, src, "d ≥ 1"},
		{"NaN", []float64{1, math.NaN()}, 2, 1, 1, 0, src, "NaN"},
		{"Inf", []float64{1, math.Inf(-1)}, 2, 1, 1, 0, src, "infinite"},
		{"zero epsilon", []float64{1, 2}, 2, 1, 0, 0, src, "epsilon"},
		{"NaN epsilon", []float64{1, 2}, 2, 1, math.NaN(), 0, src, "epsilon"},
		{"delta 1", []float64{1, 2}, 2, 1, 1, 1, src, "delta"},
		{"nil source", []float64{1, 2}, 2, 1, 1, 0, nil, "nil Source"},
		{"epsilon too small", []float64{1, 2}, 2, 1, 1e-300, 0, src, "too small"},
	}
	for _, tt := range tests {
		_, err := EstimateBoundsWith(tt.x, tt.n, tt.d, BoundsPrivacy{Epsilon: tt.eps, Delta: tt.delta}, tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "dataset: ") {
			t.Errorf("%s: EstimateBoundsWith error = %v, want a dataset error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestEstimateScaling runs the two-step private path: raw table, estimate,
// scale. Features and target are estimated in one release of
// (ε + targetε, δ); the result is a private scaling whose schema holds the
// estimated bounds and whose unit text states that privacy.
func TestEstimateScaling(t *testing.T) {
	const n = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for range n {
		v := 100 + 10*rng.NormFloat64()
		b.WriteString(formatFloat(v) + "," + formatFloat(-v) + "," + formatFloat(rng.Float64()) + "\n")
	}
	raw, err := ParseRaw(strings.NewReader(b.String()), "u.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Scale(Scaling{Mode: ScalePrivate, Epsilon: 1}); err == nil || !strings.Contains(err.Error(), "EstimateScaling") {
		t.Fatalf("Raw.Scale(private without bounds) error = %v, want one naming EstimateScaling", err)
	}
	if _, err := ParseCSV(strings.NewReader(b.String()), "u.csv", Options{Scaling: Scaling{Mode: ScalePrivate, Epsilon: 1}}); err == nil || !strings.Contains(err.Error(), "EstimateBounds") {
		t.Fatalf("ParseCSV(private) error = %v, want one naming EstimateBounds", err)
	}
	if _, err := raw.EstimateScaling(Scaling{Mode: ScalePrivate}, 0, dptest.Source(1)); err == nil || !strings.Contains(err.Error(), "needs the ε") {
		t.Fatalf("EstimateScaling without ε: error = %v, want one asking for ε", err)
	}
	if _, err := raw.EstimateScaling(Scaling{Mode: ScaleNone}, 0, dptest.Source(1)); err == nil {
		t.Fatal("EstimateScaling(none) = nil error, want one")
	}
	sc, err := raw.EstimateScaling(Scaling{Mode: ScalePrivate, Epsilon: 2, Delta: 1e-6}, 1, dptest.Source(7))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Epsilon != 2 || sc.TargetEpsilon != 1 || sc.Delta != 1e-6 {
		t.Errorf("EstimateScaling: Epsilon %g TargetEpsilon %g Delta %g, want 2, 1 and 1e-6", sc.Epsilon, sc.TargetEpsilon, sc.Delta)
	}
	ds, err := raw.Scale(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !ds.Private || ds.Scaling.Mode != ScalePrivate || !strings.Contains(ds.Unit, "ε = 3, δ = 1e-06") {
		t.Errorf("private dataset: Private %v, mode %s, Unit %q", ds.Private, ds.Scaling.Mode, ds.Unit)
	}
	// a ~ N(100, 10) and b = −a: bounds around [70, 130] and its mirror; y
	// uniform on [0, 1).
	ba, _ := sc.Schema.Column("a")
	bb, _ := sc.Schema.Column("b")
	if !(ba.Lower > 40 && ba.Lower < 80 && ba.Upper > 120 && ba.Upper < 160) || !(bb.Upper < -40 && bb.Lower < -120) {
		t.Errorf("bounds a [%g, %g], b [%g, %g]; want about [70, 130] and [−130, −70]", ba.Lower, ba.Upper, bb.Lower, bb.Upper)
	}
	if ds.TargetRange == nil || !(ds.TargetRange.Lower <= 0.05 && ds.TargetRange.Upper >= 0.95 && ds.TargetRange.Upper < 2) {
		t.Errorf("TargetRange = %v, want about [0, 1]", ds.TargetRange)
	}
	if got := ds.RawRow(0); len(got) != 2 || got[0] != -got[1] {
		t.Errorf("RawRow(0) = %v, want the raw values", got)
	}
}

// TestRawXY: the features with the target appended, row by row.
func TestRawXY(t *testing.T) {
	raw := &Raw{N: 2, D: 2, X: []float64{1, 2, 3, 4}, Y: []float64{5, 6}}
	if got, want := raw.XY(), []float64{1, 2, 5, 3, 4, 6}; !slices.Equal(got, want) {
		t.Errorf("XY() = %v, want %v", got, want)
	}
}

// BenchmarkBoundsDiamonds measures the estimator on ../shared/data/diamonds.csv
// (53,940 stones, not shipped) at the curator's default split: the share of
// seeds in which every interval is acceptable (issue 20's criterion) and the
// share of acceptable intervals, reported as metrics, and the time per
// estimate.
func BenchmarkBoundsDiamonds(b *testing.B) {
	raw, err := LoadRaw(filepath.Join("..", "..", "..", "shared", "data", "diamonds.csv"), Options{Target: "price"})
	if err != nil {
		b.Skipf("diamonds.csv is not shipped; this benchmark reads ../shared/data/diamonds.csv: %v", err)
	}
	p := BoundsPrivacy{Epsilon: 1, Delta: 1e-7}
	seeds := make([]uint64, 100)
	for i := range seeds {
		seeds[i] = uint64(1000 + i)
	}
	all, share, worst := acceptance(b, raw, p, seeds)
	b.ReportMetric(float64(all)/float64(len(seeds)), "all-acceptable")
	b.ReportMetric(share, "intervals-acceptable")
	b.Logf("diamonds: every interval acceptable in %d of %d seeds, %.1f%% of intervals; most failures: %s", all, len(seeds), 100*share, worst)
	x := raw.XY()
	src := dp.CryptoSource()
	b.ResetTimer()
	for b.Loop() {
		if _, err := EstimateBoundsWith(x, raw.N, raw.D+1, p, src); err != nil {
			b.Fatal(err)
		}
	}
}

// syntheticColumns returns n rows of twelve columns of common shapes (drawn
// from a fixed seed): normal(0, 1), normal(0, 100), normal(50, 10),
// log-normal(0, 1), log-normal(3, 0.5), exponential(1), uniform(0, 1),
// uniform(−5, 5), 0/1 with 30% ones, a 1/2 code, normal(0, 0.05) and
// 1000 ± 3.
func syntheticColumns(n int) (names []string, x []float64) {
	rng := rand.New(rand.NewPCG(99, 1))
	gens := []struct {
		name string
		gen  func() float64
	}{
		{"normal(0, 1)", rng.NormFloat64},
		{"normal(0, 100)", func() float64 { return 100 * rng.NormFloat64() }},
		{"normal(50, 10)", func() float64 { return 50 + 10*rng.NormFloat64() }},
		{"lognormal(0, 1)", func() float64 { return math.Exp(rng.NormFloat64()) }},
		{"lognormal(3, 0.5)", func() float64 { return math.Exp(3 + 0.5*rng.NormFloat64()) }},
		{"exponential(1)", rng.ExpFloat64},
		{"uniform(0, 1)", rng.Float64},
		{"uniform(-5, 5)", func() float64 { return -5 + 10*rng.Float64() }},
		{"0/1, 30% ones", func() float64 { return float64(b2i(rng.Float64() < 0.3)) }},
		{"1/2 code", func() float64 { return 1 + float64(b2i(rng.Float64() < 0.5)) }},
		{"normal(0, 0.05)", func() float64 { return 0.05 * rng.NormFloat64() }},
		{"1000 ± 3", func() float64 { return 1000 + 3*rng.NormFloat64() }},
	}
	d := len(gens)
	x = make([]float64, n*d)
	for i := range n {
		for j, g := range gens {
			x[i*d+j] = g.gen()
		}
	}
	for _, g := range gens {
		names = append(names, g.name)
	}
	return names, x
}

// BenchmarkBoundsForecastCalibration relates the forecast to what the estimate
// achieves (docs/EXPERIMENTS.md, "Private bounds"): on the twelve synthetic
// columns of syntheticColumns at ε = 1, δ = 1e−7 (the curator's default
// share at --budget-epsilon 10), for n from 250 to 20,000, 50 fixed seeds
// each, it logs the forecast (FoundShare, verdict) against the share of
// acceptable intervals (issue 20's criterion), the share of seeds with all
// twelve acceptable, and the column failing most.
//
//	go test -run '^$' -bench BoundsForecastCalibration -benchtime 1x -v ./pkg/dataset/
func BenchmarkBoundsForecastCalibration(b *testing.B) {
	p := BoundsPrivacy{Epsilon: 1, Delta: 1e-7}
	seeds := make([]uint64, 50)
	for i := range seeds {
		seeds[i] = uint64(2000 + i)
	}
	for b.Loop() {
		for _, n := range []int{250, 500, 1000, 2000, 5000, 20000} {
			names, x := syntheticColumns(n)
			d := len(names)
			cols := columnStats(names, x, n, d)
			f, err := ForecastBounds(n, d, p)
			if err != nil {
				b.Fatal(err)
			}
			good, all, fails := 0, 0, make([]int, d)
			for _, seed := range seeds {
				est, err := EstimateBoundsWith(x, n, d, p, dptest.Source(seed))
				if err != nil {
					b.Fatal(err)
				}
				ok := true
				for j, c := range cols {
					if a, _, _ := c.acceptable(est[j]); a {
						good++
					} else {
						ok, fails[j] = false, fails[j]+1
					}
				}
				if ok {
					all++
				}
			}
			var failing []string
			for j, k := range fails {
				if k > 0 {
					failing = append(failing, fmt.Sprintf("%s %d", names[j], k))
				}
			}
			b.Logf("n %6d: forecast %-6s FoundShare %5.1f%%, noise sd %4.1f%% of n, f = %2d | intervals acceptable %5.1f%%, seeds all acceptable %3d/%d; failures per column (of %d): %s",
				n, f.Quality, 100*f.FoundShare, 100*f.NoiseShare, f.BinsPerOctave, 100*float64(good)/float64(d*len(seeds)), all, len(seeds), len(seeds), strings.Join(failing, ", "))
		}
	}
}
