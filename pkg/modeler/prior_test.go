package modeler

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privbo/privbo/pkg/noise"
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
	laplace := stated(t, study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Lower: 0, Upper: 400})
	gaussian := stated(t, study.OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, DeltaPerIndex: 1e-5, Lower: -1, Upper: 1})
	// Laplace at ε = 2 on [0, 400]: b ≈ 200 (package dp rounds the scale up slightly),
	// σ_n² = 2b² ≈ 80000; s_f² = (400/4)² = 10⁴, so the ratio rule gives SignalVariance 1
	// and NoiseVariance σ_n²/s_f² ≈ 8 (standardised units).
	lapAN, err := laplace.AnswerNoise()
	lapNoise := lapAN.Variance
	if err != nil || math.Abs(lapNoise-80000) > 1 {
		t.Fatalf("Laplace noise variance %g, %v; want ≈ 80000", lapNoise, err)
	}
	gaussAN, err := gaussian.AnswerNoise()
	gaussNoise := gaussAN.Variance
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
		{"exact answers", study.OutputPrivacy{Mechanism: "none", Noise: noise.None}, 0, 0, 1, 1e-3, 0, ""},
		{"answers of a curator that names no mechanism", stated(t, study.OutputPrivacy{}), 0, 0, 1, 1e-3, 0, ""},
		{"laplace, noise variance given", laplace, 0, 0.5, 1, 0.5, lapNoise, "ratio"},
		{"laplace, signal variance given", laplace, 2, 0, 2, lapNoise / 1e4, lapNoise, "ratio"},
		{"laplace, both given", laplace, 2, 0.5, 2, 0.5, 0, ""},
		{"exact, both given", study.OutputPrivacy{Mechanism: "none", Noise: noise.None}, 3, 0.25, 3, 0.25, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{R: dim, Iterations: 10, SignalVariance: tc.signal, NoiseVariance: tc.noise}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			s, err := newSession(cfg, nil, z, n, dim, tc.op, 0)
			if err != nil {
				t.Fatal(err)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
			gcfg := s.post.Config()
			if !near(gcfg.SignalVariance, tc.wantSignal) || !near(gcfg.NoiseVariance, tc.wantNoise) || !gcfg.Standardise {
				t.Errorf("GP config: signal %g, noise %g, standardise %v; want %g, %g, true",
					gcfg.SignalVariance, gcfg.NoiseVariance, gcfg.Standardise, tc.wantSignal, tc.wantNoise)
			}
			if h := s.post.Hyper(); !near(h.SignalVariance, tc.wantSignal) || !near(h.NoiseVariance, tc.wantNoise) {
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
	if _, err := newSession(cfg, nil, z, n, dim, study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 1, Upper: 1, NoiseSD: 1, Noise: noise.Laplace}, 0); err == nil {
		t.Error("an empty output range: no error, want one")
	}
	// Noisy answers whose noise the curator did not state are refused: the modeler
	// calibrates no mechanism itself.
	if _, err := newSession(cfg, nil, z, n, dim, study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 0, Upper: 1}, 0); !errors.Is(err, study.ErrNoiseUnstated) {
		t.Errorf("unstated noise: %v; want study.ErrNoiseUnstated", err)
	}
}
