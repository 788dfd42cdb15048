package kusner

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// forecastConfig is the breast-cancer job of docs/EXPERIMENTS.md (16 candidates on a
// line, T = 10, δ = 1e-3, k1 = 0.5, σ² = 0.01) with γ_T given, so that every constant is
// closed-form.
func forecastConfig(eps float64) Config {
	cands := make([]float64, 16)
	for i := range cands {
		cands[i] = float64(i) / 15
	}
	return Config{Algorithm: NoisyGP, Candidates: cands, N: 16, Dim: 1, Iterations: 10, Epsilon: eps, Delta: 1e-3,
		K1: 0.5, NoiseVariance: 0.01, GammaT: 5}
}

// TestForecastReference pins the forecast at ε = 1 to values computed independently in
// Python from the formulas of forecast.go and the paper's constants:
// Δu = 2√β_11 + c = 15.8384, Δv = √(C1 β_10 γ_T/T) + c + q = 10.6229.
func TestForecastReference(t *testing.T) {
	c := forecastConfig(1)
	k, err := c.Constants()
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Forecast(k, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		got, want float64
	}{
		{"ExpSensitivity", k.ExpSensitivity, 15.838399681728042},
		{"LaplaceSensitivity", k.LaplaceSensitivity, 10.62286904831051},
		{"Gap", f.Gap, 0.05},
		{"UniformProbability", f.UniformProbability, 1.0 / 16},
		{"WithinGapMin", f.WithinGapMin, 0.06259255074684969},
		{"WithinGapMax", f.WithinGapMax, 0.06437548432165482},
		{"SelectionLift", f.SelectionLift, 1.0300077491464772},
		{"SelectionEpsilon", f.SelectionEpsilon, 3.231007178553844},
		{"LaplaceScale", f.LaplaceScale, 10.62286904831051},
		{"ValueWithinGap", f.ValueWithinGap, 0.0046957666065251535},
		{"UniformValueWithinGap", f.UniformValueWithinGap, 0.1},
		{"ValueLift", f.ValueLift, 0.046957666065251535},
		{"ValueEpsilon", f.ValueEpsilon, 24.75846939573703},
		{"EpsilonNeeded", f.EpsilonNeeded, 3.231007178553844},
	} {
		if math.Abs(tt.got-tt.want) > 1e-12*math.Abs(tt.want) {
			t.Errorf("Forecast(ε=1).%s = %.17g, want %.17g", tt.name, tt.got, tt.want)
		}
	}
	if f.Informative {
		t.Errorf("Forecast(ε=1).Informative = true, want false (lift %.4g < 1.1)", f.SelectionLift)
	}
	if s := f.String(); !strings.Contains(s, "no better than uniform") || !strings.Contains(s, "ε ≥ 3.231") {
		t.Errorf("Forecast(ε=1).String() = %q, want it to say no better than uniform and the ε needed", s)
	}
}

// TestForecastEpsilonNeeded: at the ε it names, the release reaches the margin exactly,
// and the forecast turns informative there and not below.
func TestForecastEpsilonNeeded(t *testing.T) {
	c := forecastConfig(1)
	k, _ := c.Constants()
	f, _ := c.Forecast(k, 1, 0)
	for _, tt := range []struct {
		eps         float64
		informative bool
	}{{f.EpsilonNeeded * (1 - 1e-9), false}, {f.EpsilonNeeded * (1 + 1e-9), true}, {10, true}} {
		c.Epsilon = tt.eps
		k, err := c.Constants()
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.Forecast(k, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if g.Informative != tt.informative {
			t.Errorf("Forecast(ε=%.10g).Informative = %v, want %v (selection lift %.12g)", tt.eps, g.Informative, tt.informative, g.SelectionLift)
		}
	}
	c.Epsilon = f.SelectionEpsilon
	k, _ = c.Constants()
	g, _ := c.Forecast(k, 1, 0)
	if math.Abs(g.SelectionLift-1.1) > 1e-12 {
		t.Errorf("Forecast(ε=SelectionEpsilon).SelectionLift = %.15g, want 1.1", g.SelectionLift)
	}
	c.Epsilon = f.ValueEpsilon
	k, _ = c.Constants()
	if g, _ = c.Forecast(k, 1, 0); math.Abs(g.ValueLift-1.1) > 1e-12 {
		t.Errorf("Forecast(ε=ValueEpsilon).ValueLift = %.15g, want 1.1", g.ValueLift)
	}
}

// TestForecastBoundsTheMechanism checks the selection bounds against the exponential
// mechanism's exact probabilities Pr[i] ∝ exp(ε µ_i/(2Δu)) on posterior means with one
// candidate within the gap of the maximum: equal at the two extreme posteriors, between
// them for 1,000 random ones.
func TestForecastBoundsTheMechanism(t *testing.T) {
	c := forecastConfig(4)
	k, _ := c.Constants()
	f, err := c.Forecast(k, 1, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	prob := func(mu []float64) float64 { // probability of candidate 0
		z := 0.0
		for _, m := range mu {
			z += math.Exp(c.Epsilon * (m - mu[0]) / (2 * k.ExpSensitivity))
		}
		return 1 / z
	}
	worst, best := make([]float64, 16), make([]float64, 16)
	for i := 1; i < 16; i++ {
		worst[i], best[i] = -0.05, -1
	}
	if p := prob(worst); math.Abs(p-f.WithinGapMin) > 1e-15 {
		t.Errorf("mechanism at the worst posterior: %.17g, forecast minimum %.17g", p, f.WithinGapMin)
	}
	if p := prob(best); math.Abs(p-f.WithinGapMax) > 1e-15 {
		t.Errorf("mechanism at the best posterior: %.17g, forecast maximum %.17g", p, f.WithinGapMax)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mu := make([]float64, 16)
	for range 1000 {
		mu[0] = rng.Float64()
		for i := 1; i < 16; i++ { // every other candidate more than the gap below, within the range
			mu[i] = mu[0] - 0.05 - 1e-9 - rng.Float64()*(0.95-1e-9)
		}
		if p := prob(mu); p < f.WithinGapMin || p > f.WithinGapMax {
			t.Fatalf("mechanism on %v: %.6g, outside the forecast [%.6g, %.6g]", mu, p, f.WithinGapMin, f.WithinGapMax)
		}
	}
}

func TestForecastErrors(t *testing.T) {
	c := forecastConfig(1)
	k, _ := c.Constants()
	for _, tt := range []struct {
		r, gap float64
		k      Constants
		want   string
	}{
		{0, 0, k, "objective range"},
		{math.Inf(1), 0, k, "objective range"},
		{1, 2, k, "gap must be in (0, 1]"},
		{1, -1, k, "gap"},
		{1, 0, Constants{}, "constants of a validated configuration"},
	} {
		if _, err := c.Forecast(tt.k, tt.r, tt.gap); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Forecast(R=%g, gap=%g) error = %v, want one containing %q", tt.r, tt.gap, err, tt.want)
		}
	}
	// Algorithm 3 releases no hyperparameter: only the value counts.
	l := Config{Algorithm: Lipschitz, Candidates: []float64{0, 1}, N: 2, Dim: 1, Iterations: 2, Epsilon: 1,
		LambdaMin: 1e-3, LambdaMax: 1, L: 0.25, GStar: 1, M: 170}
	lk, err := l.Constants()
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.Forecast(lk, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.HasSelection || f.SelectionLift != 0 || !math.IsInf(f.SelectionEpsilon, 1) || f.EpsilonNeeded != f.ValueEpsilon {
		t.Errorf("Forecast(Algorithm 3) = %+v, want no selection and the value's ε needed", f)
	}
}
