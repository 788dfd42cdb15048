package gpucb

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fantasyFixture is a standardised posterior over 300 random candidates after 12
// observations of smooth at random rows (fixed seed), and the candidates.
func fantasyFixture(t *testing.T, std bool, workers int) (*Posterior, []float64) {
	t.Helper()
	const n, dim = 300, 3
	rng := rand.New(rand.NewPCG(31, 7))
	cands := randomCands(rng, n, dim)
	p, err := NewPosterior(cands, n, dim, PosteriorConfig{Kernel: SquaredExponential, Lengthscale: 0.4,
		SignalVariance: 1, NoiseVariance: 1e-3, Standardise: std, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range rng.Perm(n)[:12] {
		if err := p.Observe(i, 50+20*smooth(cands[i*dim:(i+1)*dim])); err != nil {
			t.Fatal(err)
		}
	}
	return p, cands
}

// TestFantasize checks GP-BUCB's fantasies against their definition: after fantasies at
// rows F, the variance everywhere equals the dense posterior's variance with F observed
// (any values), scaled by the real observations' standardisation, to 1e-9; the mean is
// unchanged (exactly: it is not recomputed); the rows count as queried; and
// DropFantasies restores the variance, the queried rows and the next choices bit for bit.
func TestFantasize(t *testing.T) {
	for _, std := range []bool{true, false} {
		p, cands := fantasyFixture(t, std, 0)
		n, dim := p.N(), p.dim
		mean0 := make([]float64, n)
		var0 := make([]float64, n)
		for i := range n {
			mean0[i], var0[i] = p.Mean(i), p.Variance(i)
		}
		m, s := p.Standardisation()
		rule := UCB{Delta: 0.05, SkipQueried: true}
		next0, err := rule.Next(p)
		if err != nil {
			t.Fatal(err)
		}
		fant := []int{next0}
		if err := p.Fantasize(next0); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			i, err := rule.Next(p)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(fant, i) || slices.Contains(p.idx, i) {
				t.Fatalf("standardise %v: UCB chose row %d, already observed or fantasised", std, i)
			}
			fant = append(fant, i)
			if err := p.Fantasize(i); err != nil {
				t.Fatal(err)
			}
		}
		if p.Pending() != 5 || p.T() != 12 {
			t.Errorf("standardise %v: Pending() = %d, T() = %d after 5 fantasies; want 5, 12", std, p.Pending(), p.T())
		}
		if gm, gs := p.Standardisation(); gm != m || gs != s {
			t.Errorf("standardise %v: fantasies moved the standardisation from (%g, %g) to (%g, %g)", std, m, s, gm, gs)
		}
		// The dense posterior with the fantasies observed, in standardised units: the
		// variance does not depend on the values.
		cfg := Config{Kernel: SquaredExponential, Lengthscale: 0.4, SignalVariance: 1, NoiseVariance: 1e-3}
		idx := append(slices.Clone(p.idx), fant...)
		_, vr := densePosterior(t, cands, n, dim, cfg, idx, make([]float64, len(idx)))
		for i := range n {
			if got, want := p.Variance(i), s*s*vr[i]; !near(got, want, 1e-9) {
				t.Fatalf("standardise %v: variance at %d with fantasies %v = %.15g, want %.15g (dense)", std, i, fant, got, want)
			}
			if p.Mean(i) != mean0[i] {
				t.Fatalf("standardise %v: mean at %d moved from %.17g to %.17g with fantasies", std, i, mean0[i], p.Mean(i))
			}
			if p.Queried(i) != (slices.Contains(p.idx, i) || slices.Contains(fant, i)) {
				t.Fatalf("standardise %v: Queried(%d) = %v with fantasies %v", std, i, p.Queried(i), fant)
			}
		}
		for _, err := range []error{p.Observe(0, 1), p.SetHyper(Hyper{0.5, 1, 1e-3})} {
			if err == nil || !strings.Contains(err.Error(), "fantasies pending") {
				t.Errorf("standardise %v: Observe or SetHyper with fantasies pending: %v, want an error", std, err)
			}
		}
		if _, err := p.Refit(FitOptions{}); err == nil {
			t.Errorf("standardise %v: Refit with fantasies pending succeeded", std)
		}
		p.DropFantasies()
		if p.Pending() != 0 {
			t.Errorf("standardise %v: Pending() = %d after DropFantasies", std, p.Pending())
		}
		for i := range n {
			if p.Variance(i) != var0[i] || p.Mean(i) != mean0[i] || p.Queried(i) != slices.Contains(p.idx, i) {
				t.Fatalf("standardise %v: candidate %d not restored by DropFantasies", std, i)
			}
		}
		if next, err := rule.Next(p); err != nil || next != next0 {
			t.Errorf("standardise %v: Next after DropFantasies = %d, %v; want %d", std, next, err, next0)
		}
		// The posterior goes on as if the fantasies had never been (rows reused).
		if err := p.Observe(next0, 3); err != nil {
			t.Fatal(err)
		}
		idx = append(slices.Clone(p.idx[:12]), next0)
		ys := slices.Clone(p.ys)
		mu, vr2 := densePosterior(t, cands, n, dim, cfg, idx, ys)
		if std {
			cfg.Standardise = true
			mu, vr2 = densePosterior(t, cands, n, dim, cfg, idx, ys)
		}
		for i := range n {
			if !near(p.Mean(i), mu[i], 1e-9) || !near(p.Variance(i), vr2[i], 1e-9) {
				t.Fatalf("standardise %v: after DropFantasies and Observe, candidate %d: %g ± %g, want %g ± %g (dense)", std, i, p.Mean(i), p.Variance(i), mu[i], vr2[i])
			}
		}
	}
}

// TestFantasizeErrors checks that a fantasy out of range or at a duplicate row under no
// noise is refused and leaves the posterior unchanged.
func TestFantasizeErrors(t *testing.T) {
	cands := []float64{0, 1, 2}
	p, err := NewPosterior(cands, 3, 1, PosteriorConfig{Kernel: SquaredExponential, Lengthscale: 1, SignalVariance: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Observe(1, 2); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{-1, 3, 1} {
		if err := p.Fantasize(i); err == nil {
			t.Errorf("Fantasize(%d) succeeded, want an error", i)
		}
	}
	if p.Pending() != 0 || len(p.rows) != 1 {
		t.Errorf("after refused fantasies: Pending() = %d, %d rows of V; want 0, 1", p.Pending(), len(p.rows))
	}
}

// TestArgmaxMatchesUpper checks that the general scan, given UCB's score, chooses what
// the fast scan chooses, on one and on two workers, with and without skipping.
func TestArgmaxMatchesUpper(t *testing.T) {
	for _, workers := range []int{1, 2} {
		p, _ := fantasyFixture(t, true, workers)
		for _, skip := range []bool{false, true} {
			for _, w := range []float64{0, 1, 3.5} {
				want, err := p.ArgmaxUpper(w, skip)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.Argmax(func(_ int, mean, sd float64) float64 { return mean + w*sd }, skip)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("workers %d, skip %v, w %g: Argmax = %d, ArgmaxUpper = %d", workers, skip, w, got, want)
				}
			}
		}
	}
}

// TestUCBBetaCountsFantasies checks that the schedule's t counts pending fantasies
// (GP-BUCB) and that an invalid rule is refused by Next.
func TestUCBBetaCountsFantasies(t *testing.T) {
	p, _ := fantasyFixture(t, true, 0)
	u := UCB{Delta: 0.1}
	if got, want := u.Beta(p), Beta(p.N(), 13, 0.1); got != want {
		t.Errorf("Beta after 12 observations = %g, want β_13 = %g", got, want)
	}
	if err := p.Fantasize(0); err != nil {
		t.Fatal(err)
	}
	if got, want := u.Beta(p), Beta(p.N(), 14, 0.1); got != want {
		t.Errorf("Beta with one fantasy = %g, want β_14 = %g", got, want)
	}
	if got := (UCB{ConstantBeta: 2, Delta: 0.1}).Beta(p); got != 2 {
		t.Errorf("constant Beta = %g, want 2", got)
	}
	for _, bad := range []UCB{{}, {Delta: 1}, {ConstantBeta: math.Inf(1)}, {ConstantBeta: -1}} {
		if _, err := bad.Next(p); err == nil {
			t.Errorf("%+v.Next succeeded, want an error", bad)
		}
	}
	var _ Acquisition = UCB{}
}

// TestStandardisation checks the mean and sd the posterior standardises by: the sample
// mean and sd (divisor t − 1), sd 1 while t < 2 or when all outputs are equal, (0, 1)
// without Standardise.
func TestStandardisation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ys    []float64
		raw   bool
		m, sd float64
	}{
		{"none", nil, false, 0, 1},
		{"one", []float64{5}, false, 5, 1},
		{"equal", []float64{5, 5, 5}, false, 5, 1},
		// mean 2, Σ(y−m)² = 2, divisor 2: sd 1.
		{"three", []float64{1, 2, 3}, false, 2, 1},
		// mean 4, Σ(y−m)² = 4 + 0 + 4 + 0 = 8, divisor 3: sd √(8/3).
		{"four", []float64{2, 4, 6, 4}, false, 4, math.Sqrt(8.0 / 3)},
		{"raw", []float64{1, 2, 3}, true, 0, 1},
	} {
		p, err := NewPosterior([]float64{0, 1, 2, 3}, 4, 1, PosteriorConfig{Kernel: SquaredExponential, Lengthscale: 1,
			SignalVariance: 1, NoiseVariance: 0.1, Standardise: !tc.raw})
		if err != nil {
			t.Fatal(err)
		}
		for k, y := range tc.ys {
			if err := p.Observe(k, y); err != nil {
				t.Fatal(err)
			}
		}
		if m, sd := p.Standardisation(); !near(m, tc.m, 1e-15) || !near(sd, tc.sd, 1e-15) {
			t.Errorf("Standardisation(%s) = (%g, %g), want (%g, %g)", tc.name, m, sd, tc.m, tc.sd)
		}
	}
}
