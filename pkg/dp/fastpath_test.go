package dp_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// pow2 returns 2^e + add as a big.Int.
func pow2(e uint, add int64) *big.Int {
	x := new(big.Int).Lsh(big.NewInt(1), e)
	return x.Add(x, big.NewInt(add))
}

func frac(num, den *big.Int) *big.Rat { return new(big.Rat).SetFrac(num, den) }

// gaussianBoundaryCases are variances on both sides of the word-size limits
// of the discrete Gaussian sampler (see gauss_sampler.go): n < 2¹²⁸ and
// 2n < 2¹²⁸, d < 2⁶⁴, d·⌊σ⌋ < 2⁶⁴, and in-flight overflows (of
// (|Y| − ⌊σ⌋)²·d, of the folded exponent's numerator, of K·a + U′), which
// switch single steps to math/big. (The case comments below name the
// overflows of the sampler before its round was folded; the cases still sit
// on the word-size limits and check that both paths agree there.)
func gaussianBoundaryCases() []struct {
	name   string
	sigma2 *big.Rat
	fast   bool
} {
	return []struct {
		name   string
		sigma2 *big.Rat
		fast   bool
	}{
		{"1", big.NewRat(1, 1), true},
		{"1/2", big.NewRat(1, 2), true},
		{"1/5", big.NewRat(1, 5), true},
		{"73/10", big.NewRat(73, 10), true},
		{"2^40", new(big.Rat).SetInt(pow2(40, 0)), true},
		{"2^72", new(big.Rat).SetInt(pow2(72, 0)), true},
		{"(2^72+1)/3", frac(pow2(72, 1), big.NewInt(3)), true},
		// 2n just below 2¹²⁸: (2n)·K overflows from K = 2, |Y| − ⌊σ⌋ passes
		// 2⁶⁴ at |Y| ≈ 3σ and V·n + U passes 2¹²⁸ at V = 4.
		{"2^126-3", new(big.Rat).SetInt(pow2(126, -3)), true},
		{"2^126+5", new(big.Rat).SetInt(pow2(126, 5)), true},
		{"2^127-1", new(big.Rat).SetInt(pow2(127, -1)), true},
		{"2^127+1", new(big.Rat).SetInt(pow2(127, 1)), false},
		{"2^128+1", new(big.Rat).SetInt(pow2(128, 1)), false},
		// d at the edge of a word, σ ≈ 1.7.
		{"(3·2^64+1)/(2^64-1)", frac(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(3), 64), big.NewInt(1)), pow2(64, -1)), true},
		{"(3·2^64+7)/(2^64+1)", frac(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(3), 64), big.NewInt(7)), pow2(64, 1)), false},
		// d·⌊σ⌋ just below and just above 2⁶⁴ (d = 2³²+1).
		{"d·s < 2^64", frac(new(big.Int).Mul(pow2(32, 1), new(big.Int).Mul(pow2(32, -2), pow2(32, -2))), pow2(32, 1)), true},
		{"d·s > 2^64", frac(new(big.Int).Add(new(big.Int).Mul(pow2(32, 1), pow2(64, 0)), big.NewInt(1)), pow2(32, 1)), false},
		// σ < 1 with d near 2⁶²: (|Y|·d − n)² overflows at |Y| = 4.
		{"1/(2^62+1)", frac(big.NewInt(1), pow2(62, 1)), true},
		{"3/(2^62+1)", frac(big.NewInt(3), pow2(62, 1)), true},
		{"(2^100+1)/2^101", frac(pow2(100, 1), pow2(101, 0)), false},
		{"(2^101+1)/2^100", frac(pow2(101, 1), pow2(100, 0)), false},
	}
}

// TestFastPathMatchesBig checks that the word-size samplers and their
// math/big versions return identical samples from identical streams, for
// parameters on both sides of every word-size limit.
func TestFastPathMatchesBig(t *testing.T) {
	const draws = 400
	for i, tc := range gaussianBoundaryCases() {
		if got := dp.DiscreteGaussianFast(tc.sigma2); got != tc.fast {
			t.Errorf("σ² = %s: word-size path = %v, want %v", tc.name, got, tc.fast)
		}
		fast, slow := dptest.Source(uint64(100+i)), dptest.Source(uint64(100+i))
		for j := range draws {
			a, err := dp.DiscreteGaussian(fast, tc.sigma2)
			if err != nil {
				t.Fatal(err)
			}
			b, err := dp.DiscreteGaussianBigPath(slow, tc.sigma2)
			if err != nil {
				t.Fatal(err)
			}
			if a.Cmp(b) != 0 {
				t.Fatalf("σ² = %s, draw %d: word-size path gave %v, math/big path %v", tc.name, j, a, b)
			}
		}
		// Both streams must also be at the same position afterwards.
		x, _ := fast.Uint64n(1 << 62)
		y, _ := slow.Uint64n(1 << 62)
		if x != y {
			t.Errorf("σ² = %s: the two paths consumed different amounts of randomness", tc.name)
		}
	}

	gammas := []*big.Rat{
		big.NewRat(1, 2), big.NewRat(5, 2), big.NewRat(1, 1), big.NewRat(3, 1), big.NewRat(1, 3<<40),
		frac(pow2(127, -1), pow2(126, 0)), // γ ≈ 2, 128-bit words, den·K overflows
		frac(pow2(62, 1), pow2(63, -1)),   // den·K passes 2⁶⁴
		frac(big.NewInt(1), pow2(127, 1)), // tiny γ, den ≥ 2¹²⁷
		frac(pow2(129, 1), big.NewInt(3)), // γ ≫ 1 beyond 128 bits
		frac(pow2(80, 1), pow2(81, 0)),    // ≈ ½ with an 81-bit denominator
		frac(pow2(200, 1), pow2(201, 0)),  // ≈ ½ beyond 128 bits
		big.NewRat(100, 1),                // ⌊32γ⌋ beyond the table: e⁻⁴⁴ trials first
		big.NewRat(91, 2),                 // 45.5
		frac(pow2(124, 0), pow2(120, 1)),  // 32·num beyond 128 bits
		frac(big.NewInt(7), pow2(100, 3)), // tiny γ, 101-bit denominator
		frac(pow2(90, 1), pow2(64, 0)),    // ⌊32γ⌋ ≥ 2⁶⁴
	}
	for i, g := range gammas {
		fast, slow := dptest.Source(uint64(200+i)), dptest.Source(uint64(200+i))
		for j := range draws {
			a, err := dp.BernoulliExp(fast, g)
			if err != nil {
				t.Fatal(err)
			}
			b, err := dp.BernoulliExpBigPath(slow, g)
			if err != nil {
				t.Fatal(err)
			}
			if a != b {
				t.Fatalf("BernoulliExp(%s), draw %d: word-size path %v, math/big path %v", g.RatString(), j, a, b)
			}
		}
	}

	scales := []*big.Rat{
		big.NewRat(1, 1), big.NewRat(7, 3), big.NewRat(1, 5), big.NewRat(1<<40, 3),
		frac(pow2(126, 1), pow2(64, -1)),  // a near 2¹²⁶, b near 2⁶⁴
		frac(pow2(127, 1), big.NewInt(1)), // V·a + U overflows at V = 2
		frac(pow2(130, 1), big.NewInt(3)), // a beyond 128 bits
		frac(big.NewInt(5), pow2(64, 1)),  // b beyond 64 bits
	}
	for i, sc := range scales {
		fast, slow := dptest.Source(uint64(300+i)), dptest.Source(uint64(300+i))
		fastL, slowL := dptest.Source(uint64(400+i)), dptest.Source(uint64(400+i))
		for j := range draws {
			a, err := dp.Geometric(fast, sc)
			if err != nil {
				t.Fatal(err)
			}
			b, err := dp.GeometricBigPath(slow, sc)
			if err != nil {
				t.Fatal(err)
			}
			if a.Cmp(b) != 0 {
				t.Fatalf("Geometric(%s), draw %d: word-size path %v, math/big path %v", sc.RatString(), j, a, b)
			}
			a, err = dp.DiscreteLaplace(fastL, sc)
			if err != nil {
				t.Fatal(err)
			}
			b, err = dp.DiscreteLaplaceBigPath(slowL, sc)
			if err != nil {
				t.Fatal(err)
			}
			if a.Cmp(b) != 0 {
				t.Fatalf("DiscreteLaplace(%s), draw %d: word-size path %v, math/big path %v", sc.RatString(), j, a, b)
			}
		}
	}
}

// normalCells bins samples of a discrete Gaussian with large σ into cells
// between the normal quantiles z_i = Φ⁻¹(i/cells): cell i holds the integers
// x with z_i·σ ≤ x + ½ < z_{i+1}·σ. Its probability is Φ(⌈z_{i+1}σ − ½⌉ − ½)/σ)
// − Φ((⌈z_iσ − ½⌉ − ½)/σ) up to the error of the midpoint rule on the normal
// density, O(σ⁻²) (≤ 1e-11 for σ ≥ 2¹⁹, far below what 20000 samples can see).
func normalCells(samples []*big.Int, sigma2 *big.Rat, cells int) []cell {
	s2, _ := sigma2.Float64()
	sigma := math.Sqrt(s2)
	bounds := make([]float64, cells+1) // integer thresholds: x ≥ bounds[i] is in cell ≥ i
	bounds[0], bounds[cells] = math.Inf(-1), math.Inf(1)
	for i := 1; i < cells; i++ {
		z := math.Sqrt2 * math.Erfinv(2*float64(i)/float64(cells)-1)
		bounds[i] = math.Ceil(z*sigma - 0.5)
	}
	phi := func(b float64) float64 { return 0.5 * math.Erfc(-(b-0.5)/sigma/math.Sqrt2) }
	out := make([]cell, cells)
	for i := range out {
		out[i].prob = phi(bounds[i+1]) - phi(bounds[i])
	}
	for _, x := range samples {
		f, _ := new(big.Float).SetInt(x).Float64()
		i := 0
		for i+1 < cells && f >= bounds[i+1] {
			i++
		}
		out[i].observed++
	}
	return out
}

func TestDiscreteGaussianLargeSigmaChiSquare(t *testing.T) {
	for i, tc := range []struct {
		name   string
		sigma2 *big.Rat
	}{
		{"2^40", new(big.Rat).SetInt(pow2(40, 0))},
		{"(2^72+1)/3", frac(pow2(72, 1), big.NewInt(3))},
		{"2^126-3", new(big.Rat).SetInt(pow2(126, -3))},
	} {
		src := dptest.Source(uint64(500 + i))
		samples := make([]*big.Int, statSamples)
		for j := range samples {
			x, err := dp.DiscreteGaussian(src, tc.sigma2)
			if err != nil {
				t.Fatal(err)
			}
			samples[j] = x
		}
		chiSquareCheck(t, "DiscreteGaussian("+tc.name+")", normalCells(samples, tc.sigma2, 40))
	}
}

// TestDiscreteGaussianKS runs the Kolmogorov–Smirnov test at p = 1e-6 on
// 5000 draws of DiscreteGaussianSampler.Int64s with σ² = 2⁴⁰, against
// P[X ≤ x] = Φ((x + ½)/σ) (error O(σ⁻²), see normalCells).
func TestDiscreteGaussianKS(t *testing.T) {
	sigma2 := big.NewRat(1<<40, 1)
	g, err := dp.NewDiscreteGaussianSampler(sigma2)
	if err != nil {
		t.Fatal(err)
	}
	draws := make([]int64, 5000)
	if err := g.Int64s(dptest.Source(600), draws); err != nil {
		t.Fatal(err)
	}
	fs := make([]float64, len(draws))
	for i, x := range draws {
		fs[i] = float64(x)
	}
	sigma := math.Ldexp(1, 20)
	meanCheck(t, "DiscreteGaussianSampler(2^40)", fs, 0, sigma*sigma)
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-(x+0.5)/sigma/math.Sqrt2) }
	if d := ksStatistic(fs, cdf); d > ksCritical5000 {
		t.Errorf("DiscreteGaussianSampler(2^40): KS distance %g, want ≤ %g", d, ksCritical5000)
	}
}

func TestDiscreteGaussianSampler(t *testing.T) {
	for _, bad := range []*big.Rat{nil, big.NewRat(0, 1), big.NewRat(-1, 2)} {
		if _, err := dp.NewDiscreteGaussianSampler(bad); err == nil {
			t.Errorf("NewDiscreteGaussianSampler(%v): no error", bad)
		}
	}
	// The sampler, its Int64s and DiscreteGaussian draw the same values from
	// the same stream.
	sigma2 := big.NewRat(73, 10)
	g, err := dp.NewDiscreteGaussianSampler(sigma2)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := dptest.Source(700), dptest.Source(700), dptest.Source(700)
	batch := make([]int64, 100)
	if err := g.Int64s(c, batch); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		x, err := g.Sample(a)
		if err != nil {
			t.Fatal(err)
		}
		y, err := dp.DiscreteGaussian(b, sigma2)
		if err != nil {
			t.Fatal(err)
		}
		if x.Int64() != batch[i] || y.Int64() != batch[i] {
			t.Fatalf("draw %d: Sample %v, DiscreteGaussian %v, Int64s %d; want equal", i, x, y, batch[i])
		}
	}
	if _, err := g.Sample(nil); err == nil {
		t.Error("Sample(nil source): no error")
	}
	if err := g.Int64s(new(dp.Source), batch); err == nil {
		t.Error("Int64s(zero source): no error")
	}
}

// TestBernoulliUndecidedCell scripts streams whose first word w is
// ⌊2⁶⁴·q⌋, the one cell in 2⁶⁴ that does not decide U < q, so that the
// trial must read U's next words: q's own next 64 bits (still undecided), then
// a word of zeros (U < q) or of ones (U > q). Both paths must give that answer
// and read exactly three words.
func TestBernoulliUndecidedCell(t *testing.T) {
	for _, q := range []*big.Rat{
		big.NewRat(1, 3),
		big.NewRat(5, 7),
		frac(pow2(70, 0), new(big.Int).Add(new(big.Int).Mul(big.NewInt(3), pow2(70, 0)), big.NewInt(1))), // 72-bit denominator
		frac(pow2(120, -1), pow2(127, -1)), // 127-bit denominator
		// den = 2¹²⁷ − 1 (prime), num ≡ −2⁻⁶⁴: (w+1)·den exceeds num·2⁶⁴ by
		// exactly 1, in the lowest of the three words cellVersus compares.
		frac(new(big.Int).Sub(pow2(127, -1), pow2(63, 0)), pow2(127, -1)),
	} {
		// bits = ⌊2¹⁹²·q⌋: the first three words of q's binary expansion.
		bits := new(big.Int).Lsh(q.Num(), 192)
		bits.Quo(bits, q.Denom())
		w := make([]uint64, 3)
		for i := range w {
			w[2-i] = new(big.Int).Rsh(bits, uint(64*i)).Uint64()
		}
		if w[2] == 0 || w[2] == ^uint64(0) {
			t.Fatalf("q = %s: third word %#x does not separate the scripts", q.RatString(), w[2])
		}
		for _, tc := range []struct {
			third uint64
			want  bool
		}{{0, true}, {^uint64(0), false}} {
			for _, wordSize := range []bool{true, false} {
				stream := make([]byte, 64)
				binary.LittleEndian.PutUint64(stream[0:], w[0])
				binary.LittleEndian.PutUint64(stream[8:], w[1])
				binary.LittleEndian.PutUint64(stream[16:], tc.third)
				binary.LittleEndian.PutUint64(stream[24:], 0xfeedface)
				src := dptest.FromReader(bytes.NewReader(stream))
				got, err := dp.BernLazy(src, q.Num(), q.Denom(), wordSize)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("q = %s, third word %#x, word-size %v: U < q = %v, want %v", q.RatString(), tc.third, wordSize, got, tc.want)
				}
				// The next 32 bits must be the fourth word's low half.
				if next, err := src.Uint64n(1 << 32); err != nil || next != 0xfeedface {
					t.Errorf("q = %s, word-size %v: next draw %#x, %v, want 0xfeedface (three words read)", q.RatString(), wordSize, next, err)
				}
			}
		}
	}
}

// TestExpTableUndecidedCell scripts streams whose first word is
// ⌊2⁶⁴·exp(−j/32)⌋, the one cell in 2⁶⁴ that does not decide U < exp(−j/32),
// so that BernoulliExp(j/32) (table index j, no remainder) must read U's next
// words: exp(−j/32)'s own next 64 bits (still undecided), then a word of
// zeros (U < p) or of ones (U > p). Both paths must give that answer and
// read exactly three words; the geometric count V (P[V ≥ v] = e^{−v}) must
// resolve the same cell at j = 32v.
func TestExpTableUndecidedCell(t *testing.T) {
	for _, j := range []int{1, 32, 45, 64, 1000, dp.ExpTabLen - 1} {
		// The second word: bits 65..128 of exp(−j/32), from the reference.
		second, ok := dp.ExpNegFloorRef(uint64(j), 128)
		if !ok {
			t.Fatal("reference not precise enough")
		}
		if second.Rsh(second, 64).Uint64() != dp.ExpTab(j) {
			t.Fatalf("j = %d: table and reference disagree", j)
		}
		second, _ = dp.ExpNegFloorRef(uint64(j), 128)
		w2 := new(big.Int).And(second, new(big.Int).SetUint64(^uint64(0))).Uint64()
		for _, tc := range []struct {
			third uint64
			want  bool
		}{{0, true}, {^uint64(0), false}} {
			stream := func() *dp.Source {
				b := make([]byte, 64)
				binary.LittleEndian.PutUint64(b[0:], dp.ExpTab(j))
				binary.LittleEndian.PutUint64(b[8:], w2)
				binary.LittleEndian.PutUint64(b[16:], tc.third)
				binary.LittleEndian.PutUint64(b[24:], 0xfeedface)
				return dptest.FromReader(bytes.NewReader(b))
			}
			after := func(src *dp.Source, what string) {
				if next, err := src.Uint64n(1 << 32); err != nil || next != 0xfeedface {
					t.Errorf("j = %d, %s: next draw %#x, %v, want 0xfeedface (three words read)", j, what, next, err)
				}
			}
			g := big.NewRat(int64(j), 32)
			src := stream()
			got, err := dp.BernoulliExp(src, g)
			if err != nil || got != tc.want {
				t.Errorf("BernoulliExp(%d/32), third word %#x: %v, %v; want %v", j, tc.third, got, err, tc.want)
			}
			after(src, "word-size path")
			src = stream()
			got, err = dp.BernoulliExpBigPath(src, g)
			if err != nil || got != tc.want {
				t.Errorf("BernoulliExp(%d/32) on math/big, third word %#x: %v, %v; want %v", j, tc.third, got, err, tc.want)
			}
			after(src, "math/big path")
			if j < dp.FineTabMax {
				// U < e^{−j/32} (and > e^{−(j+1)/32}): K = j; else K = j − 1.
				want := uint64(j)
				if !tc.want {
					want = uint64(j - 1)
				}
				src = stream()
				if got, err := dp.FineCount(src); err != nil || got != want {
					t.Errorf("fine count on the cell of exp(−%d/32), third word %#x: %d, %v; want %d", j, tc.third, got, err, want)
				}
				after(src, "fine count")
			}
			if v := j / 32; j%32 == 0 && v < 44 {
				// U < e^{−v} (and > e^{−(v+1)}): V = v; U > e^{−v}: V = v − 1.
				want := uint64(v)
				if !tc.want {
					want = uint64(v - 1)
				}
				src = stream()
				if got, err := dp.GeometricCount(src); err != nil || got != want {
					t.Errorf("geometric count on the cell of e^-%d, third word %#x: %d, %v; want %d", v, tc.third, got, err, want)
				}
				after(src, "geometric count")
			}
		}
	}
}
