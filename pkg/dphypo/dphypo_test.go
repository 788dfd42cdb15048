package dphypo

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// TestNegBinPMF checks that the pmf sums to 1 and has the mean of
// dp.NegBinMean (both closed forms from the paper's Appendix B).
func TestNegBinPMF(t *testing.T) {
	for _, tc := range []struct{ theta, gamma float64 }{
		{0, 0.05}, {0, 0.3}, {0.5, 0.0625}, {1, 0.1}, {2, 0.2}, {-0.5, 0.1}, {5, 0.4},
	} {
		var s, m float64
		for k := 1; k < 100000; k++ {
			p := NegBinPMF(tc.theta, tc.gamma, k)
			s += p
			m += float64(k) * p
		}
		if math.Abs(s-1) > 1e-10 {
			t.Errorf("Σ NegBinPMF(%g, %g, k) = %.12g, want 1", tc.theta, tc.gamma, s)
		}
		if want := dp.NegBinMean(tc.theta, tc.gamma); math.Abs(m-want) > 1e-8*want {
			t.Errorf("mean of NegBinPMF(%g, %g) = %.10g, want %.10g", tc.theta, tc.gamma, m, want)
		}
	}
	if p := NegBinPMF(1, 0.25, 3); math.Abs(p-0.25*0.75*0.75) > 1e-15 {
		t.Errorf("NegBinPMF(1, 0.25, 3) = %g, want %g (geometric)", p, 0.25*0.75*0.75)
	}
	if p := NegBinPMF(1, 0.25, 0); p != 0 {
		t.Errorf("NegBinPMF(1, 0.25, 0) = %g, want 0", p)
	}
}

// TestSampleNegBinChiSquare compares SampleNegBin with NegBinPMF by a
// chi-square test (bins with expected count ≥ 5, the tail lumped) at the
// critical value of upper-tail probability 1e-6 (gonum's chi-square
// quantile): each case fails spuriously with probability ≤ 1e-6 for a
// random seed, the whole test ≤ 1e-5; seeds are fixed (dptest.Source).
func TestSampleNegBinChiSquare(t *testing.T) {
	testrace.Statistical(t)
	const n = 20000
	for idx, tc := range []struct{ theta, gamma float64 }{
		{0, 0.2}, {0.5, 0.25}, {1, 0.3}, {2, 0.4}, {-0.5, 0.2}, {2.5, 0.5},
	} {
		src := dptest.Source(uint64(100 + idx))
		counts := map[int]int{}
		for range n {
			k, err := SampleNegBin(src, tc.theta, tc.gamma)
			if err != nil {
				t.Fatal(err)
			}
			if k < 1 {
				t.Fatalf("SampleNegBin(%g, %g) = %d < 1", tc.theta, tc.gamma, k)
			}
			counts[k]++
		}
		var chi float64
		df := -1
		cum, seen := 0.0, 0
		for k := 1; ; k++ {
			e := n * NegBinPMF(tc.theta, tc.gamma, k)
			tail := n * (1 - cum - NegBinPMF(tc.theta, tc.gamma, k))
			if tail < 5 { // lump k and everything above into the last bin
				e = n * (1 - cum)
				o := n - seen
				chi += (float64(o) - e) * (float64(o) - e) / e
				df++
				break
			}
			o := counts[k]
			chi += (float64(o) - e) * (float64(o) - e) / e
			df++
			cum += NegBinPMF(tc.theta, tc.gamma, k)
			seen += o
		}
		crit := dptest.ChiSquareCritical(df)
		if chi > crit {
			t.Errorf("SampleNegBin(θ=%g, γ=%g): chi-square %.2f > critical %.2f (df %d)", tc.theta, tc.gamma, chi, crit, df)
		}
	}
}

func TestSampleNegBinValidation(t *testing.T) {
	src := dptest.Source(1)
	for _, p := range [][2]float64{{-1, 0.5}, {1, 0}, {1, 1}, {math.NaN(), 0.5}, {1, 1e-6}} {
		if _, err := SampleNegBin(src, p[0], p[1]); err == nil || !strings.HasPrefix(err.Error(), "dphypo: ") {
			t.Errorf("SampleNegBin(%g, %g): err = %v, want a dphypo error", p[0], p[1], err)
		}
	}
}

// projectBySorting is an independent exact solver: Σ_i clip(π_i − ν) is
// piecewise linear in ν with breakpoints π_i − c/N and π_i − C/N; find the
// segment where it crosses 1 and interpolate.
func projectBySorting(pi []float64, bigC, smallC float64) []float64 {
	n := float64(len(pi))
	l, u := smallC/n, bigC/n
	var bps []float64
	for _, p := range pi {
		bps = append(bps, p-l, p-u)
	}
	sort.Float64s(bps)
	g := func(nu float64) float64 {
		var s float64
		for _, p := range pi {
			s += math.Min(math.Max(p-nu, l), u)
		}
		return s
	}
	nu := bps[0]
	for i := 0; i+1 < len(bps); i++ {
		a, b := bps[i], bps[i+1]
		ga, gb := g(a), g(b)
		if ga >= 1 && gb <= 1 {
			if ga == gb {
				nu = a
			} else {
				nu = a + (ga-1)*(b-a)/(ga-gb)
			}
			break
		}
	}
	f := make([]float64, len(pi))
	for i, p := range pi {
		f[i] = math.Min(math.Max(p-nu, l), u)
	}
	return f
}

// TestProjectDensity checks the KKT conditions (Σ f = 1, bounds, f_i = π_i −
// ν with one ν on the interior coordinates, f_i at a bound only when π_i − ν
// is beyond it) and the sorting-based solver on random small cases.
func TestProjectDensity(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 300 {
		n := 1 + r.IntN(12)
		pi := make([]float64, n)
		for i := range pi {
			pi[i] = r.ExpFloat64() * math.Pow(10, float64(r.IntN(3)-1))
		}
		bigC := 1 + 3*r.Float64()
		smallC := r.Float64()
		if trial%10 == 0 {
			bigC, smallC = 1, 1
		}
		f, err := ProjectDensity(pi, bigC, smallC)
		if err != nil {
			t.Fatal(err)
		}
		fn := float64(n)
		l, u := smallC/fn, bigC/fn
		var s float64
		nu := math.NaN()
		for i, v := range f {
			s += v
			if v < l || v > u {
				t.Errorf("trial %d: f[%d] = %g outside [%g, %g]", trial, i, v, l, u)
			}
			if v > l && v < u {
				if math.IsNaN(nu) {
					nu = pi[i] - v
				} else if math.Abs(pi[i]-v-nu) > 1e-12 {
					t.Errorf("trial %d: interior shifts differ: π−f = %g and %g", trial, pi[i]-v, nu)
				}
			}
		}
		if math.Abs(s-1) > 1e-13 {
			t.Errorf("trial %d: Σ ProjectDensity = %.17g, want 1", trial, s)
		}
		if !math.IsNaN(nu) {
			for i, v := range f {
				if (v == l && pi[i]-nu > l+1e-12) || (v == u && pi[i]-nu < u-1e-12) {
					t.Errorf("trial %d: f[%d] = %g at a bound but π−ν = %g", trial, i, v, pi[i]-nu)
				}
			}
		}
		want := projectBySorting(pi, bigC, smallC)
		for i := range f {
			if math.Abs(f[i]-want[i]) > 1e-12 {
				t.Errorf("trial %d: ProjectDensity[%d] = %.15g, sorting solver %.15g", trial, i, f[i], want[i])
			}
		}
	}
	if _, err := ProjectDensity([]float64{0.5, 0.5}, 0.9, 0.5); err == nil {
		t.Error("ProjectDensity with C < 1: no error")
	}
	if _, err := ProjectDensity(nil, 2, 0.5); err == nil {
		t.Error("ProjectDensity of an empty density: no error")
	}
}

// TestSampleIndex checks exact sampling from a projected density by a
// chi-square test (false failure ≤ 1e-6, fixed seed), and that a density
// outside the bounds is pulled back inside before sampling.
func TestSampleIndex(t *testing.T) {
	f := []float64{0.1, 0.2, 0.3, 0.4}
	src := dptest.Source(3)
	const n = 40000
	counts := make([]int, len(f))
	for range n {
		i, err := sampleIndex(src, f, 2, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		counts[i]++
	}
	dptest.ChiSquareCheck(t, "sampleIndex", counts, f)
	// 0.9·4 = 3.6 > C = 2: never sampled as is; the check mixes toward uniform.
	w, tot := exactWeights([]float64{0.9, 0.05, 0.03, 0.02})
	if withinBounds(w, tot, 4, 2, 0.2) {
		t.Error("withinBounds accepted a density 3.6× the uniform one with C = 2")
	}
	w, tot = exactWeights([]float64{0.25, 0.25, 0.25, 0.25})
	if !withinBounds(w, tot, 4, 1, 1) {
		t.Error("withinBounds rejected the uniform density with C = c = 1")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Theta: 1, Gamma: 0.1, C: 2, Cmin: 0.75, Tau: 0.1, Beta: 1, N: 2, Dim: 1, Candidates: []float64{0, 1}}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"c > 1", func(c *Config) { c.Cmin = 1.5 }, "lower density bound"},
		{"C < 1", func(c *Config) { c.C = 0.5 }, "upper density bound"},
		{"gamma 0", func(c *Config) { c.Gamma = 0 }, "gamma"},
		{"gamma 1", func(c *Config) { c.Gamma = 1 }, "gamma"},
		{"theta −1", func(c *Config) { c.Theta = -1 }, "theta"},
		{"empty grid", func(c *Config) { c.N = 0; c.Candidates = nil }, "empty"},
		{"coords", func(c *Config) { c.Candidates = []float64{0} }, "coordinates"},
		{"beta", func(c *Config) { c.Beta = math.NaN() }, "beta"},
		{"mean", func(c *Config) { c.Gamma = 1e-5 }, "mean"},
	} {
		c := good
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "dphypo: ") {
			t.Errorf("%s: Validate() = %v, want a dphypo error mentioning %q", tc.name, err, tc.want)
		}
	}
}

// landscape is a synthetic base algorithm on a 20×20 grid of [0,1]²:
// score = exp(−‖λ − (0.75, 0.3)‖²/0.05) plus N(0, 0.05²) noise. It records
// the true value of every λ it is asked to run.
type landscape struct {
	r      *rand.Rand
	coords []float64
	chosen []float64
}

func (l *landscape) value(i int) float64 {
	x, y := l.coords[2*i], l.coords[2*i+1]
	return math.Exp(-((x-0.75)*(x-0.75) + (y-0.3)*(y-0.3)) / 0.05)
}

func (l *landscape) Run(_ context.Context, i int) (float64, error) {
	v := l.value(i)
	l.chosen = append(l.chosen, v)
	return v + 0.05*l.r.NormFloat64(), nil
}

func grid20() []float64 {
	var c []float64
	for i := range 20 {
		for j := range 20 {
			c = append(c, float64(i)/19, float64(j)/19)
		}
	}
	return c
}

// TestRunGPConcentrates runs 40 searches of each kind (E[T] = 20) and
// compares the mean true value of the hyperparameters tried: the GP rule
// (C = 4, c = 0.25, β = 10) must beat uniform search by a clear margin.
// Uniform's mean is the grid average (≈ 0.15, sd of the mean over ~800
// draws ≈ 0.01); the GP's is far higher in every run seen, so the margin
// 0.05 (5 standard errors) fails spuriously with negligible probability.
func TestRunGPConcentrates(t *testing.T) {
	testrace.Statistical(t)
	coords := grid20()
	mean := func(uniform bool, seed uint64) float64 {
		src := dptest.Source(seed)
		l := &landscape{r: rand.New(rand.NewPCG(seed, 1)), coords: coords}
		var s float64
		for range 40 {
			cfg := Config{Theta: 1, Gamma: 0.05, C: 4, Cmin: 0.25, Tau: 0.1, Beta: 10,
				Uniform: uniform, Candidates: coords, N: 400, Dim: 2}
			res, err := Run(context.Background(), src, cfg, l, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.BestIndex < 0 || res.BestIndex >= 400 || res.Runs < 1 {
				t.Fatalf("Run = %+v", res)
			}
		}
		for _, v := range l.chosen {
			s += v
		}
		return s / float64(len(l.chosen))
	}
	gp, uni := mean(false, 11), mean(true, 12)
	if !(gp > uni+0.05) {
		t.Errorf("mean true value tried: GP %.3f, uniform %.3f; want GP > uniform + 0.05", gp, uni)
	}
	t.Logf("mean true value of tried λ: GP %.3f, uniform %.3f", gp, uni)
}

// TestUniformNeverChanges checks that with C = c = 1 the sampled
// distribution stays uniform whatever the scores: chi-square of the chosen
// indices (false failure ≤ 1e-6, fixed seed).
func TestUniformNeverChanges(t *testing.T) {
	const n = 5
	counts := make([]int, n)
	b := baseFunc(func(i int) (float64, error) { counts[i]++; return float64(i * i), nil })
	src := dptest.Source(5)
	total := 0
	for range 200 {
		// With C = c = 1 even the GP rule must sample uniformly.
		cfg := Config{Theta: 1, Gamma: 0.1, C: 1, Cmin: 1, Tau: 0.1, Beta: 50, Candidates: []float64{0, 1, 2, 3, 4}, N: n, Dim: 1}
		res, err := Run(context.Background(), src, cfg, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		total += res.Runs
	}
	uniform := []float64{0.2, 0.2, 0.2, 0.2, 0.2}
	if sum := counts[0] + counts[1] + counts[2] + counts[3] + counts[4]; sum != total {
		t.Fatalf("base ran %d times for %d runs", sum, total)
	}
	dptest.ChiSquareCheck(t, "C = c = 1", counts, uniform)
}

type baseFunc func(int) (float64, error)

func (f baseFunc) Run(_ context.Context, i int) (float64, error) { return f(i) }

// TestRunProgressAndErrors checks the progress events, the best-run result,
// cancellation and base errors.
func TestRunProgressAndErrors(t *testing.T) {
	cfg := Config{Theta: 1, Gamma: 0.2, C: 1, Cmin: 1, Uniform: true, N: 3}
	var events []Progress
	var best float64 = math.Inf(-1)
	b := baseFunc(func(i int) (float64, error) { q := float64(i); best = math.Max(best, q); return q, nil })
	res, err := Run(context.Background(), dptest.Source(9), cfg, b, func(p Progress) { events = append(events, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != res.Runs || events[len(events)-1].Run != res.Runs || res.BestScore != best || float64(res.BestIndex) != best {
		t.Errorf("Run = %+v with %d events, want one event per run and best score %g", res, len(events), best)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, dptest.Source(9), cfg, b, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled) = %v, want context.Canceled", err)
	}
	bad := cfg
	bad.Cmin = 2
	if _, err := Run(context.Background(), dptest.Source(9), bad, b, nil); err == nil {
		t.Error("Run(c > 1): no error")
	}
}

// TestRunFailedRunsKept: a failed base run (an error, or a non-finite score) is kept as
// a run with score −∞ — never selected, not observed by the GP — and the search goes on;
// aborting would reveal that a run other than the best failed, which Theorem 1 does not
// cover. Only when every run fails does Run fail, with an error naming no run.
// Cancellation still stops the search with the context's error.
func TestRunFailedRunsKept(t *testing.T) {
	boom := errors.New("boom")
	// Grid point 0 scores 0; point 1 returns NaN; point 2 fails. Only 0 can be best.
	mixed := baseFunc(func(i int) (float64, error) {
		switch i {
		case 1:
			return math.NaN(), nil
		case 2:
			return 0, boom
		}
		return 0, nil
	})
	for _, uniform := range []bool{true, false} {
		cfg := Config{Theta: 1, Gamma: 0.02, C: 2, Cmin: 0.75, Tau: 0.1, Beta: 1, Uniform: uniform,
			Candidates: []float64{0, 1, 2}, N: 3, Dim: 1}
		src := dptest.Source(3)
		sawSuccess := false
		for range 50 {
			var failedEvents, events int
			res, err := Run(context.Background(), src, cfg, mixed, func(p Progress) {
				events++
				if p.Err != nil {
					failedEvents++
				}
			})
			if errors.Is(err, ErrAllRunsFailed) { // possible: every run drew 1 or 2
				continue
			}
			if err != nil {
				t.Fatalf("uniform=%v: Run with some failing runs = %v, want the search to go on", uniform, err)
			}
			if res.BestIndex != 0 || res.BestScore != 0 {
				t.Fatalf("uniform=%v: Run = %+v, want best index 0 (failed runs are never selected)", uniform, res)
			}
			if events != res.Runs || failedEvents != res.Failed {
				t.Fatalf("uniform=%v: %d events (%d failed) for %+v; want one per run, failures flagged", uniform, events, failedEvents, res)
			}
			if res.Failed > 0 && res.Failed < res.Runs {
				sawSuccess = true
			}
		}
		if !sawSuccess {
			t.Errorf("uniform=%v: no search had both failed and successful runs; the test proves nothing", uniform)
		}
	}

	// Every run fails: an error that names no run (and no run count).
	cfg := Config{Theta: 1, Gamma: 0.2, C: 1, Cmin: 1, Uniform: true, N: 3}
	for _, fail := range []baseFunc{
		func(int) (float64, error) { return 0, boom },
		func(int) (float64, error) { return math.Inf(1), nil },
	} {
		_, err := Run(context.Background(), dptest.Source(9), cfg, fail, nil)
		if !errors.Is(err, ErrAllRunsFailed) || strings.ContainsAny(err.Error(), "0123456789") {
			t.Errorf("Run(every run fails) = %v, want ErrAllRunsFailed naming no run", err)
		}
	}

	// A base run interrupted by cancellation stops the search with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := baseFunc(func(int) (float64, error) { cancel(); return 0, context.Canceled })
	if _, err := Run(ctx, dptest.Source(9), cfg, stop, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled during a run) = %v, want context.Canceled", err)
	}
}
