package modeler

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/study"
)

// TestNoiseAwarePrior checks that the GP of a study gets the noise-aware prior of
// NoiseRule when the curator releases answers with output privacy and the variances are
// not given, the exact-answer prior (1, 1e-3) when the answers are exact, and that a
// variance given explicitly is kept.
func TestNoiseAwarePrior(t *testing.T) {
	const n, dim = 50, 2
	rng := rand.New(rand.NewPCG(1, 2))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = rng.NormFloat64()
	}
	laplace := study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Lower: 0, Upper: 400}
	gaussian := study.OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, DeltaPerIndex: 1e-5, Lower: -1, Upper: 1}
	// Laplace at ε = 2 on [0, 400]: b ≈ 200 (package dp rounds the scale up slightly),
	// σ_n² = 2b² ≈ 80000; s_f² = (400/4)² = 10⁴, so the ratio rule gives SignalVariance 1
	// and NoiseVariance σ_n²/s_f² ≈ 8 (standardised units).
	lapNoise, err := gpucb.AnswerNoiseVariance("laplace", 2, 0, 0, 400)
	if err != nil || math.Abs(lapNoise-80000) > 1 {
		t.Fatalf("Laplace noise variance %g, %v; want ≈ 80000", lapNoise, err)
	}
	gaussNoise, err := gpucb.AnswerNoiseVariance("gaussian", 1, 1e-5, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                  string
		op                    study.OutputPrivacy
		signal, noise         float64 // as given in Config
		wantSignal, wantNoise float64
		wantAnswerNoise       float64
		wantRule              string
	}{
		{"laplace answers", laplace, 0, 0, 1, lapNoise / 1e4, lapNoise, "ratio"},
		{"gaussian answers", gaussian, 0, 0, 1, gaussNoise / 0.25, gaussNoise, "ratio"},
		{"exact answers", study.OutputPrivacy{Mechanism: "none"}, 0, 0, 1, 1e-3, 0, ""},
		{"answers of a curator that names no mechanism", study.OutputPrivacy{}, 0, 0, 1, 1e-3, 0, ""},
		{"laplace, noise variance given", laplace, 0, 0.5, 1, 0.5, lapNoise, "ratio"},
		{"laplace, signal variance given", laplace, 2, 0, 2, lapNoise / 1e4, lapNoise, "ratio"},
		{"laplace, both given", laplace, 2, 0.5, 2, 0.5, 0, ""},
		{"exact, both given", study.OutputPrivacy{Mechanism: "none"}, 3, 0.25, 3, 0.25, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{R: dim, Iterations: 10, SignalVariance: tc.signal, NoiseVariance: tc.noise}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			s, err := newSession(cfg, nil, z, n, dim, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
			if !near(s.gcfg.SignalVariance, tc.wantSignal) || !near(s.gcfg.NoiseVariance, tc.wantNoise) || !s.gcfg.Standardise {
				t.Errorf("GP config: signal %g, noise %g, standardise %v; want %g, %g, true",
					s.gcfg.SignalVariance, s.gcfg.NoiseVariance, s.gcfg.Standardise, tc.wantSignal, tc.wantNoise)
			}
			if h := s.gp.Hyper(); !near(h.SignalVariance, tc.wantSignal) || !near(h.NoiseVariance, tc.wantNoise) {
				t.Errorf("GP hyperparameters %+v, want signal %g, noise %g", h, tc.wantSignal, tc.wantNoise)
			}
			r := s.res
			if !near(r.SignalVariance, tc.wantSignal) || !near(r.NoiseVariance, tc.wantNoise) || r.NoisePrior != tc.wantRule ||
				(tc.wantRule != "" && !near(r.AnswerNoiseVariance, tc.wantAnswerNoise)) {
				t.Errorf("result: signal %g, noise %g, rule %q, answer noise %g; want %g, %g, %q, %g",
					r.SignalVariance, r.NoiseVariance, r.NoisePrior, r.AnswerNoiseVariance, tc.wantSignal, tc.wantNoise, tc.wantRule, tc.wantAnswerNoise)
			}
			// The settings keep what was given (0: taken from the answers' privacy), so
			// that a resumed study derives the same prior from its stored release.
			set, err := cfg.Settings()
			if err != nil {
				t.Fatal(err)
			}
			if set.SignalVariance != tc.signal || set.NoiseVariance != tc.noise {
				t.Errorf("settings store variances (%g, %g), want as given (%g, %g)", set.SignalVariance, set.NoiseVariance, tc.signal, tc.noise)
			}
		})
	}
	// A curator's output privacy that gpucb cannot model is refused, not ignored.
	cfg := Config{R: dim, Iterations: 10}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	if _, err := newSession(cfg, nil, z, n, dim, study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 1, Upper: 1}); err == nil {
		t.Error("an empty output range: no error, want one")
	}
}

// TestRunUsesNoiseAwarePrior runs a study against a curator that releases Laplace answers
// and one that releases exact answers: the first study's GP models the answer noise, the
// second's keeps the exact-answer prior.
func TestRunUsesNoiseAwarePrior(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		out       curator.OutputPrivacy
		wantNoise float64
		wantRule  string
	}{
		// b ≈ 400/1, σ_n² = 2b² ≈ 320000, s_f² = 10⁴: NoiseVariance ≈ 32.
		{"laplace", curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 400}, 32, "ratio"},
		{"exact", curator.OutputPrivacy{Mechanism: "none"}, 1e-3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := curatortest.Client(t, startCuratorOutput(t, tc.out), "prior-"+tc.name)
			res, err := Run(ctx, client, Config{R: 3, Epsilon: 1, Delta: 1e-5, Iterations: 5, InitialIndex: 0})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.NoiseVariance-tc.wantNoise) > 1e-4*tc.wantNoise || res.SignalVariance != 1 || res.NoisePrior != tc.wantRule {
				t.Errorf("study prior: signal %g, noise %g, rule %q; want 1, %g, %q", res.SignalVariance, res.NoiseVariance, res.NoisePrior, tc.wantNoise, tc.wantRule)
			}
			// The recommendation is a queried row. With exact answers the posterior
			// mean at a queried row is its answer (up to the small noise term), so the
			// recommendation is the best answer; with noisy answers the posterior mean
			// shrinks the answers towards each other and lies below the best one.
			if !slices.Contains(res.Queried, res.Recommended) {
				t.Fatalf("recommended row %d was not queried (%v)", res.Recommended, res.Queried)
			}
			if tc.wantRule == "" {
				if res.Recommended != res.BestIndex || math.Abs(res.RecommendedMean-res.BestValue) > 1e-2*math.Abs(res.BestValue)+1e-6 {
					t.Errorf("exact answers: recommended row %d (mean %g), want the best row %d (%g)", res.Recommended, res.RecommendedMean, res.BestIndex, res.BestValue)
				}
			} else if !(res.RecommendedMean < res.BestValue) {
				t.Errorf("noisy answers: recommended mean %g not below the best noisy answer %g", res.RecommendedMean, res.BestValue)
			}
		})
	}
}
