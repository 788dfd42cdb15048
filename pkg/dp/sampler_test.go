package dp_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// statSamples is the number of draws per chi-square test: ≈ 0.3 s per test
// under -race for the slowest sampler.
const statSamples = 20000

func TestDiscreteGaussianPMFGolden(t *testing.T) {
	// Golden values: docs/MATHS.md §5.2 (CKS20 reference code / OpenDP,
	// recomputed in high precision).
	tests := []struct {
		sigma2       float64
		x            int64
		want         float64
		wantVariance float64
	}{
		{1, 0, 0.3989422782669, 0.99999978877},
		{1, 1, 0.2419707232245, 0.99999978877},
		{1, -1, 0.2419707232245, 0.99999978877},
		{0.5, 0, 0.5641312262188, 0.4989791308},
	}
	for _, tc := range tests {
		if got := dp.DiscreteGaussianPMF(tc.sigma2, tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("DiscreteGaussianPMF(%g, %d) = %.13f, want %.13f", tc.sigma2, tc.x, got, tc.want)
		}
		if got := seriesVariance(func(x int64) float64 { return dp.DiscreteGaussianPMF(tc.sigma2, x) }); math.Abs(got-tc.wantVariance) > 1e-10 {
			t.Errorf("variance of DiscreteGaussianPMF(%g, ·) = %.12f, want %.11f", tc.sigma2, got, tc.wantVariance)
		}
	}
	// Both normaliser branches (direct sum below σ² = 1, theta series above)
	// must sum to 1 and agree at the switch.
	for _, s2 := range []float64{0.01, 0.3, 0.999999, 1, 2.5, 100} {
		var sum float64
		for x := int64(-2000); x <= 2000; x++ {
			sum += dp.DiscreteGaussianPMF(s2, x)
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("Σ DiscreteGaussianPMF(%g, x) = %.15f, want 1", s2, sum)
		}
	}
	if got := dp.DiscreteGaussianPMF(0, 0); !math.IsNaN(got) {
		t.Errorf("DiscreteGaussianPMF(0, 0) = %g, want NaN", got)
	}
}

func TestDiscreteLaplacePMFGolden(t *testing.T) {
	// Golden values: docs/MATHS.md §5.2; P[0] = tanh(1/(2t)) (CKS20).
	tests := []struct {
		scale float64
		x     int64
		want  float64
	}{
		{1, 0, 0.4621171572600},
		{1, 1, 0.1700034015685},
		{1, -1, 0.1700034015685},
		{2, 0, 0.2449186624037},
	}
	for _, tc := range tests {
		if got := dp.DiscreteLaplacePMF(tc.scale, tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("DiscreteLaplacePMF(%g, %d) = %.13f, want %.13f", tc.scale, tc.x, got, tc.want)
		}
	}
	if got, want := seriesVariance(func(x int64) float64 { return dp.DiscreteLaplacePMF(1, x) }), 1.841347188416; math.Abs(got-want) > 1e-10 {
		t.Errorf("variance of DiscreteLaplacePMF(1, ·) = %.12f, want %.12f", got, want)
	}
	if got := dp.DiscreteLaplacePMF(-1, 0); !math.IsNaN(got) {
		t.Errorf("DiscreteLaplacePMF(-1, 0) = %g, want NaN", got)
	}
}

// seriesVariance returns Σ x² pmf(x) over |x| ≤ 200 (enough for the scales above).
func seriesVariance(pmf func(int64) float64) float64 {
	var v float64
	for x := int64(-200); x <= 200; x++ {
		v += float64(x*x) * pmf(x)
	}
	return v
}

func TestBernoulliExpChiSquare(t *testing.T) {
	// Each γ gives a 2-cell table; a binomial z-test at 4.89 standard errors
	// (two-sided 1e-6) per γ would be equivalent; here the cells of all γ are
	// pooled into one chi-square statistic with one degree of freedom per γ.
	gammas := []*big.Rat{
		big.NewRat(0, 1), big.NewRat(1, 10), big.NewRat(1, 2), big.NewRat(1, 1),
		big.NewRat(3, 2), big.NewRat(7, 3), big.NewRat(4, 1),
		// exp(−γ) = exp(−J/32)·exp(−ρ): J = 0 (ρ only), ρ = 0 (table only),
		// both, and a small probability (e⁻⁶ ≈ 0.0025).
		big.NewRat(1, 64), big.NewRat(33, 32), big.NewRat(41, 20), big.NewRat(6, 1),
		// (2⁸⁰+1)/2⁸¹ ≈ ½ in lowest terms: the big-integer path.
		new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 80), big.NewInt(1)), new(big.Int).Lsh(big.NewInt(1), 81)),
		// (2⁶²+1)/(2⁶³−1): den·K overflows 64 bits at K = 2, switching paths mid-loop.
		new(big.Rat).SetFrac(new(big.Int).SetUint64(1<<62+1), new(big.Int).SetUint64(1<<63-1)),
		// 1 + (2⁶²+1)/(2⁶³−1): integer part and a word-sized remainder.
		new(big.Rat).SetFrac(new(big.Int).SetUint64(1<<63+1<<62), new(big.Int).SetUint64(1<<63-1)),
	}
	src := dptest.Source(1)
	const n = 5000
	var stat float64
	df := 0
	for _, g := range gammas {
		p, _ := g.Float64()
		p = math.Exp(-p)
		ones := 0
		for i := 0; i < n; i++ {
			ok, err := dp.BernoulliExp(src, g)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				ones++
			}
		}
		if p == 1 {
			if ones != n {
				t.Errorf("BernoulliExp(0) was false %d times out of %d, want never", n-ones, n)
			}
			continue
		}
		e1, e0 := n*p, n*(1-p)
		stat += sq(float64(ones)-e1)/e1 + sq(float64(n-ones)-e0)/e0
		df++
	}
	if crit := dptest.ChiSquareCritical(df); stat > crit {
		t.Errorf("BernoulliExp: chi-square = %g with %d degrees of freedom, want ≤ %g", stat, df, crit)
	}
}

func TestBernoulliChiSquare(t *testing.T) {
	src := dptest.Source(2)
	ps := []*big.Rat{big.NewRat(1, 3), big.NewRat(999, 1000), big.NewRat(1, 2),
		new(big.Rat).SetFrac(big.NewInt(7), new(big.Int).Lsh(big.NewInt(1), 70))} // p ≈ 6e-21: never in 5000 draws
	const n = 5000
	var stat float64
	df := 0
	for _, pr := range ps {
		p, _ := pr.Float64()
		ones := 0
		for i := 0; i < n; i++ {
			ok, err := dp.Bernoulli(src, pr)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				ones++
			}
		}
		if n*p < 5 {
			// P[any success] ≤ n·p ≈ 3e-17.
			if ones != 0 {
				t.Errorf("Bernoulli(%v) succeeded %d times in %d draws, want 0", pr, ones, n)
			}
			continue
		}
		e1, e0 := n*p, n*(1-p)
		stat += sq(float64(ones)-e1)/e1 + sq(float64(n-ones)-e0)/e0
		df++
	}
	if crit := dptest.ChiSquareCritical(df); stat > crit {
		t.Errorf("Bernoulli: chi-square = %g with %d degrees of freedom, want ≤ %g", stat, df, crit)
	}
	for _, p := range []*big.Rat{big.NewRat(0, 1), big.NewRat(1, 1)} {
		want := p.Sign() > 0
		for i := 0; i < 100; i++ {
			if got, err := dp.Bernoulli(src, p); got != want || err != nil {
				t.Fatalf("Bernoulli(%v) = %v, %v, want %v, nil", p, got, err, want)
			}
		}
	}
}

func sq(x float64) float64 { return x * x }

func TestGeometricChiSquare(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale *big.Rat
		seed  uint64
	}{
		{"scale 1", big.NewRat(1, 1), 3},
		{"scale 7/3", big.NewRat(7, 3), 4},
		{"scale 1/5", big.NewRat(1, 5), 5},
		{"scale 100/7", big.NewRat(100, 7), 6},
	} {
		src := dptest.Source(tc.seed)
		s, _ := tc.scale.Float64()
		pmf := func(x int64) float64 { // (1 − e^{−1/s}) e^{−x/s}
			if x < 0 {
				return 0
			}
			return -math.Expm1(-1/s) * math.Exp(-float64(x)/s)
		}
		samples := make([]int64, statSamples)
		for i := range samples {
			x, err := dp.Geometric(src, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = x.Int64()
		}
		chiSquareCheck(t, "Geometric "+tc.name, integerCells(samples, pmf, false))
	}
}

// TestGeometricCountsChiSquare checks the two one-word geometric counts:
// P[V = v] = (1 − e⁻¹)e^{−v} and P[K = k] = (1 − e^{−1/32})e^{−k/32}.
func TestGeometricCountsChiSquare(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ratio float64 // −log of the ratio
		draw  func(*dp.Source) (uint64, error)
		seed  uint64
	}{
		{"GeometricCount", 1, dp.GeometricCount, 18},
		{"FineCount", 1.0 / 32, dp.FineCount, 19},
	} {
		src := dptest.Source(tc.seed)
		pmf := func(x int64) float64 {
			if x < 0 {
				return 0
			}
			return -math.Expm1(-tc.ratio) * math.Exp(-float64(x)*tc.ratio)
		}
		samples := make([]int64, statSamples)
		for i := range samples {
			x, err := tc.draw(src)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = int64(x)
		}
		chiSquareCheck(t, tc.name, integerCells(samples, pmf, false))
	}
}

func TestDiscreteLaplaceChiSquare(t *testing.T) {
	for _, tc := range []struct {
		scale *big.Rat
		seed  uint64
	}{
		{big.NewRat(1, 1), 6},
		{big.NewRat(2, 1), 7},
		{big.NewRat(5, 2), 8},
		{big.NewRat(1, 3), 9},
	} {
		src := dptest.Source(tc.seed)
		s, _ := tc.scale.Float64()
		pmf := func(x int64) float64 { return dp.DiscreteLaplacePMF(s, x) }
		samples := make([]int64, statSamples)
		fs := make([]float64, statSamples)
		for i := range samples {
			x, err := dp.DiscreteLaplace(src, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = x.Int64()
			fs[i] = float64(samples[i])
		}
		name := "DiscreteLaplace(" + tc.scale.RatString() + ")"
		chiSquareCheck(t, name, integerCells(samples, pmf, true))
		// Variance 2e^{−1/t}/(1 − e^{−1/t})².
		v := 2 * math.Exp(-1/s) / sq(-math.Expm1(-1/s))
		meanCheck(t, name, fs, 0, v)
	}
}

func TestDiscreteGaussianChiSquare(t *testing.T) {
	for _, tc := range []struct {
		sigma2 *big.Rat
		seed   uint64
	}{
		{big.NewRat(1, 1), 10},
		{big.NewRat(1, 2), 11},
		{big.NewRat(73, 10), 12},
		{big.NewRat(1, 5), 13},
		// A float64 variance as VectorGaussian makes them (σ ≈ 111): a Laplace
		// scale a/b with b ≠ 1, and a round's U′ rejected when ≥ a.
		{new(big.Rat).SetFloat64(12345.678), 17},
		// σ² = (2¹⁰¹+1)/2¹⁰⁰ ≈ 2 in lowest terms: the big-integer paths.
		{new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 101), big.NewInt(1)), new(big.Int).Lsh(big.NewInt(1), 100)), 14},
	} {
		src := dptest.Source(tc.seed)
		s2, _ := tc.sigma2.Float64()
		pmf := func(x int64) float64 { return dp.DiscreteGaussianPMF(s2, x) }
		samples := make([]int64, statSamples)
		fs := make([]float64, statSamples)
		for i := range samples {
			x, err := dp.DiscreteGaussian(src, tc.sigma2)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = x.Int64()
			fs[i] = float64(samples[i])
		}
		name := "DiscreteGaussian(" + tc.sigma2.RatString() + ")"
		chiSquareCheck(t, name, integerCells(samples, pmf, true))
		meanCheck(t, name, fs, 0, seriesVariance(pmf))
	}
}

func TestUniformIntegers(t *testing.T) {
	src := dptest.Source(15)
	for _, m := range []uint64{1, 2, 3, 7, 10, 1000} {
		counts := make([]int, m)
		n := int(m) * 20
		if n < 1000 {
			n = 1000
		}
		for i := 0; i < n; i++ {
			v, err := src.Uint64n(m)
			if err != nil {
				t.Fatal(err)
			}
			if v >= m {
				t.Fatalf("Uint64n(%d) = %d, want < %d", m, v, m)
			}
			counts[v]++
		}
		if m == 1 {
			continue
		}
		cells := make([]cell, m)
		for i := range cells {
			cells[i] = cell{counts[i], 1 / float64(m)}
		}
		chiSquareCheck(t, "Uint64n", cells)
	}
	// A modulus above 2⁶⁴: test the low residues mod 3 of 3·2⁷⁰ (uniform over 3 classes)
	// and the top bit range.
	m := new(big.Int).Lsh(big.NewInt(3), 70)
	counts := make([]int, 3)
	for i := 0; i < 6000; i++ {
		v, err := src.BigIntn(m)
		if err != nil {
			t.Fatal(err)
		}
		if v.Sign() < 0 || v.Cmp(m) >= 0 {
			t.Fatalf("BigIntn(%v) = %v, out of range", m, v)
		}
		// v / 2⁷⁰ ∈ {0, 1, 2} uniformly.
		counts[new(big.Int).Rsh(v, 70).Int64()]++
	}
	chiSquareCheck(t, "BigIntn high part", []cell{{counts[0], 1. / 3}, {counts[1], 1. / 3}, {counts[2], 1. / 3}})
}

// TestScriptedBits checks the bit order and the rejection step on a scripted
// stream: the first byte 0b00001011 gives the 2-bit draws 3 (rejected for
// n = 3), then 2.
func TestScriptedBits(t *testing.T) {
	stream := make([]byte, 64)
	stream[0] = 0b00001011
	src := dptest.FromReader(bytes.NewReader(stream))
	if got, err := src.Uint64n(3); got != 2 || err != nil {
		t.Errorf("Uint64n(3) on scripted bits = %d, %v, want 2, nil", got, err)
	}
	// Next bits are 0 (bits 4.. of byte 0 are zero).
	if got, err := src.Bit(); got || err != nil {
		t.Errorf("Bit() = %v, %v, want false, nil", got, err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source down") }

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"empty", bytes.NewReader(nil)},
		{"short", bytes.NewReader(make([]byte, 10))},
		{"failing", failingReader{}},
	}
	for _, tc := range tests {
		calls := map[string]func(*dp.Source) error{
			"BernoulliExp": func(s *dp.Source) error { _, err := dp.BernoulliExp(s, big.NewRat(1, 2)); return err },
			"Bernoulli":    func(s *dp.Source) error { _, err := dp.Bernoulli(s, big.NewRat(1, 2)); return err },
			"Geometric":    func(s *dp.Source) error { _, err := dp.Geometric(s, big.NewRat(1, 1)); return err },
			"DiscreteLaplace": func(s *dp.Source) error {
				_, err := dp.DiscreteLaplace(s, big.NewRat(1, 1))
				return err
			},
			"DiscreteGaussian": func(s *dp.Source) error {
				_, err := dp.DiscreteGaussian(s, big.NewRat(1, 1))
				return err
			},
			"BigIntn": func(s *dp.Source) error {
				_, err := s.BigIntn(new(big.Int).Lsh(big.NewInt(1), 100))
				return err
			},
		}
		for name, call := range calls {
			err := call(dptest.FromReader(tc.r))
			if err == nil || !strings.Contains(err.Error(), "dp: reading randomness") {
				t.Errorf("%s with %s reader: error = %v, want a dp: reading randomness error", name, tc.name, err)
			}
			if b, ok := tc.r.(*bytes.Reader); ok {
				b.Seek(0, io.SeekStart)
			}
		}
	}
}

func TestSamplerArguments(t *testing.T) {
	src := dptest.Source(16)
	tests := []struct {
		name string
		call func() error
	}{
		{"BernoulliExp(-1)", func() error { _, err := dp.BernoulliExp(src, big.NewRat(-1, 1)); return err }},
		{"BernoulliExp(nil)", func() error { _, err := dp.BernoulliExp(src, nil); return err }},
		{"Bernoulli(3/2)", func() error { _, err := dp.Bernoulli(src, big.NewRat(3, 2)); return err }},
		{"Bernoulli(-1/2)", func() error { _, err := dp.Bernoulli(src, big.NewRat(-1, 2)); return err }},
		{"Geometric(0)", func() error { _, err := dp.Geometric(src, big.NewRat(0, 1)); return err }},
		{"DiscreteLaplace(-1)", func() error { _, err := dp.DiscreteLaplace(src, big.NewRat(-1, 1)); return err }},
		{"DiscreteLaplace(nil)", func() error { _, err := dp.DiscreteLaplace(src, nil); return err }},
		{"DiscreteGaussian(0)", func() error { _, err := dp.DiscreteGaussian(src, big.NewRat(0, 1)); return err }},
		{"Uint64n(0)", func() error { _, err := src.Uint64n(0); return err }},
		{"BigIntn(0)", func() error { _, err := src.BigIntn(big.NewInt(0)); return err }},
		{"nil source", func() error { _, err := dp.DiscreteLaplace(nil, big.NewRat(1, 1)); return err }},
		{"zero source", func() error { _, err := dp.BernoulliExp(new(dp.Source), big.NewRat(1, 1)); return err }},
	}
	for _, tc := range tests {
		if err := tc.call(); err == nil || !strings.HasPrefix(err.Error(), "dp: ") {
			t.Errorf("%s: error = %v, want a dp: error", tc.name, err)
		}
	}
}

func TestCryptoSourceSmoke(t *testing.T) {
	// One quick run of every sampler on the real entropy source, with a loose
	// mean check on the discrete Laplace (4.41717 standard errors).
	src := dp.CryptoSource()
	fs := make([]float64, 2000)
	for i := range fs {
		x, err := dp.DiscreteLaplace(src, big.NewRat(3, 1))
		if err != nil {
			t.Fatal(err)
		}
		fs[i] = float64(x.Int64())
	}
	meanCheck(t, "DiscreteLaplace(3) on CryptoSource", fs, 0, 2*math.Exp(-1./3)/sq(-math.Expm1(-1./3)))
	if _, err := dp.DiscreteGaussian(src, big.NewRat(5, 2)); err != nil {
		t.Error(err)
	}
	if _, err := dp.BernoulliExp(src, big.NewRat(5, 2)); err != nil {
		t.Error(err)
	}
	l, err := dp.NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Release(src, 1); err != nil {
		t.Error(err)
	}
}

func TestDeterministicSource(t *testing.T) {
	draw := func(seed uint64) []int64 {
		src := dptest.Source(seed)
		out := make([]int64, 50)
		for i := range out {
			x, err := dp.DiscreteLaplace(src, big.NewRat(10, 1))
			if err != nil {
				t.Fatal(err)
			}
			out[i] = x.Int64()
		}
		return out
	}
	a, b, c := draw(42), draw(42), draw(43)
	same := func(x, y []int64) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Errorf("dptest.Source(42) gave different streams: %v and %v", a, b)
	}
	if same(a, c) {
		t.Errorf("dptest.Source(42) and dptest.Source(43) gave the same stream %v", a)
	}
}

func TestConcurrentUse(t *testing.T) {
	// One Source and one mechanism shared by goroutines (run with -race).
	src := dptest.Source(60)
	l, err := dp.NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := dp.NewExponential(1, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				if _, err := l.Release(src, 0.5); err != nil {
					done <- err
					return
				}
				if _, err := e.Select(src, []float64{0.1, 0.9}); err != nil {
					done <- err
					return
				}
				if _, err := dp.DiscreteGaussian(src, big.NewRat(3, 1)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
