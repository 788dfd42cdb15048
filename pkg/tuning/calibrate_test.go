package tuning

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/learner"
	"github.com/privbo/privbo/pkg/ledger"
)

// targetSpec is the modeler's default DP-HyPO job (cmd/modeler: 5 epochs of batch 64,
// θ = 1, γ = 0.1, C = 1.1, c = 0.9, δ = 1e-6) with a target ε and no noise multipliers.
func targetSpec(target float64) jobs.DPHyPOSpec {
	return jobs.DPHyPOSpec{
		Space: []hparam.Axis{{Name: "learning_rate", Kind: hparam.AxisLog, Low: 0.05, High: 2, Count: 4}, {Name: "clip_norm", Kind: hparam.AxisList, Values: []float64{0.5, 1, 2}}},
		Theta: 1, Gamma: 0.1, CMax: 1.1, CMin: 0.9, Tau: 0.1, Beta: 1, Delta: 1e-6, TargetEpsilon: target,
		DPSGD: jobs.DPSGD{LearningRate: 0.5, ClipNorm: 1, Epochs: 5, BatchSize: 64, L2: 1e-3},
	}
}

// TestDPHyPOTargetEpsilon checks the calibration against the charge: for each target E
// the plan's charged ε is at most E and within 2% of it; the same job with the chosen
// noise multipliers given explicitly is charged the same ε (the calibrated figure is
// the charged figure); and 0.1% less noise would cost more than E (the noise chosen is
// the least, not merely enough). It also runs with a private bounds estimate, whose ε
// the target must cover.
func TestDPHyPOTargetEpsilon(t *testing.T) {
	r := breastCancer(t)
	check := func(t *testing.T, r *Runner, s jobs.DPHyPOSpec) {
		t.Helper()
		E := s.TargetEpsilon
		job, plan, err := r.dphypoPlan(s)
		if err != nil {
			t.Fatalf("E = %g: %v", E, err)
		}
		eps := plan.Cost.Epsilon
		if !(eps <= E && eps >= 0.98*E) || plan.Cost.Delta != s.Delta {
			t.Errorf("E = %g: charged (%g, %g), want ε in [0.98E, E] and δ = %g", E, eps, plan.Cost.Delta, s.Delta)
		}
		sigma := job.sgd.NoiseMultiplier
		if job.calibrated == nil || job.calibrated.noise != sigma || math.Abs(job.scoreSD*float64(r.val.N)-2*sigma) > 1e-9*sigma {
			t.Fatalf("E = %g: calibrated %+v, DP-SGD σ %g, score sd·m %g; want the calibration's σ and 2σ", E, job.calibrated, sigma, job.scoreSD*float64(r.val.N))
		}
		if !strings.Contains(plan.Guarantee, "calibrated to target ε=") || !strings.Contains(plan.Guarantee, "noise multiplier") {
			t.Errorf("E = %g: guarantee %q does not state the calibrated noise", E, plan.Guarantee)
		}
		explicit := s
		explicit.TargetEpsilon, explicit.DPSGD.NoiseMultiplier, explicit.DPSGD.ScoreNoiseMultiplier = 0, sigma, CalibratedScoreRatio*sigma
		_, eplan, err := r.dphypoPlan(explicit)
		if err != nil || eplan.Cost != plan.Cost {
			t.Errorf("E = %g: the same job with σ = %g given costs %+v, %v; want the calibrated charge %+v", E, sigma, eplan.Cost, err, plan.Cost)
		}
		explicit.DPSGD.NoiseMultiplier, explicit.DPSGD.ScoreNoiseMultiplier = 0.999*sigma, CalibratedScoreRatio*0.999*sigma
		if _, lplan, err := r.dphypoPlan(explicit); err != nil || !(lplan.Cost.Epsilon > E) {
			t.Errorf("E = %g: σ = %g (0.1%% less noise) costs ε = %g, %v; want more than E, or the calibrated σ is not the least", E, 0.999*sigma, lplan.Cost.Epsilon, err)
		}
		t.Logf("target ε = %g, δ = %g: DP-SGD noise multiplier %.4g, score noise multiplier %.4g, charged ε = %.10g", E, s.Delta, sigma, 2*sigma, eps)
	}
	for _, E := range []float64{1, 2, 4} {
		check(t, r, targetSpec(E))
	}
	est := breastCancerWith(t, func(c *Config) {
		c.FeatureBounds, c.BoundsEpsilon = nil, 0.5
		c.EstimateBounds = func([]float64, int, int, float64) ([]learner.Bounds, error) { return nil, nil } // planning never calls it
	})
	check(t, est, targetSpec(2))
}

// TestDPHyPOTargetEpsilonRefused checks that targets that cannot be met, and specs that
// set both a target and noise multipliers, are invalid specs whose errors name the
// fields, so the job manager refuses them before it charges anything.
func TestDPHyPOTargetEpsilonRefused(t *testing.T) {
	r := breastCancer(t)
	for name, tc := range map[string]struct {
		mutate func(*jobs.DPHyPOSpec)
		want   []string
	}{
		"paper's density bounds at ε = 2": {func(s *jobs.DPHyPOSpec) { s.CMax, s.CMin, s.TargetEpsilon = 2, 0.75, 2 },
			[]string{"target_epsilon 2 is out of reach", "(2+θ)·log(C/c) = 2.942", "c_max"}},
		"ε = 0.1":  {func(s *jobs.DPHyPOSpec) { s.TargetEpsilon = 0.1 }, []string{"target_epsilon 0.1 is out of reach at delta 1e-06"}},
		"negative": {func(s *jobs.DPHyPOSpec) { s.TargetEpsilon = -1 }, []string{"target_epsilon must be positive"}},
		"NaN":      {func(s *jobs.DPHyPOSpec) { s.TargetEpsilon = math.NaN() }, []string{"target_epsilon must be positive"}},
		"with a noise multiplier": {func(s *jobs.DPHyPOSpec) { s.DPSGD.NoiseMultiplier = 1 },
			[]string{"target_epsilon calibrates dpsgd.noise_multiplier and dpsgd.score_noise_multiplier"}},
		"with a score noise multiplier": {func(s *jobs.DPHyPOSpec) { s.DPSGD.ScoreNoiseMultiplier = 2 },
			[]string{"leave them unset (got 0 and 2)"}},
	} {
		s := targetSpec(2)
		tc.mutate(&s)
		_, err := r.Plan(jobs.Spec{DPHyPO: &s})
		if !errors.Is(err, jobs.ErrInvalidSpec) {
			t.Errorf("%s: Plan error = %v, want ErrInvalidSpec", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", name, err, w)
			}
		}
	}
	// An external evaluator's per-run guarantee is its operator's: nothing to calibrate.
	curve, _ := dp.GaussianRDP(dp.DefaultOrders(), 1, 3)
	ev, err := New(Config{Dataset: r.cfg.Dataset, ValidationFraction: 0.3, SplitSeed: 1, Kusner: r.cfg.Kusner,
		Evaluators: []Evaluator{{Name: "rdp", Command: []string{"/bin/true"}, Timeout: 1e9, RDP: &curve}}})
	if err != nil {
		t.Fatal(err)
	}
	es := jobs.DPHyPOSpec{Space: []hparam.Axis{{Name: "depth", Kind: hparam.AxisList, Values: []float64{1, 2}}},
		Theta: 1, Gamma: 0.1, CMax: 1.1, CMin: 0.9, Tau: 0.1, Beta: 1, Delta: 1e-6, Evaluator: "rdp", TargetEpsilon: 2}
	if _, err := ev.Plan(jobs.Spec{DPHyPO: &es}); !errors.Is(err, jobs.ErrInvalidSpec) || !strings.Contains(err.Error(), `target_epsilon calibrates the noise of the built-in DP-SGD learner; evaluator "rdp"`) {
		t.Errorf("a target with an external evaluator: error = %v, want one naming target_epsilon and the evaluator", err)
	}
	// The bounds estimate's ε counts towards the target.
	est := breastCancerWith(t, func(c *Config) {
		c.FeatureBounds, c.BoundsEpsilon = nil, 1.5
		c.EstimateBounds = func([]float64, int, int, float64) ([]learner.Bounds, error) { return nil, nil } // planning never calls it
	})
	s := targetSpec(1.5)
	if _, err := est.Plan(jobs.Spec{DPHyPO: &s}); !errors.Is(err, jobs.ErrInvalidSpec) || !strings.Contains(err.Error(), "ε=1.5 for the private feature bounds") {
		t.Errorf("a target no larger than the bounds estimate's ε: error = %v, want one naming the bounds' ε", err)
	}
}

// TestDPHyPOTargetEpsilonGuaranteeText pins the guarantee a calibrated job states: the
// charged (ε, δ), the calibrated DP-SGD and score noise multipliers — the very σ the
// runs use, not a rounded or placeholder one — and the neighbour relation it protects.
// The job manager stores this text with the charge before any run starts.
func TestDPHyPOTargetEpsilonGuaranteeText(t *testing.T) {
	r := breastCancer(t)
	s := targetSpec(2)
	job, plan, err := r.dphypoPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	sigma := job.sgd.NoiseMultiplier
	if sigma == 1 || job.calibrated == nil || job.calibrated.noise != sigma {
		t.Fatalf("DP-SGD σ %g, calibration %+v: want the calibrated σ, not the placeholder 1", sigma, job.calibrated)
	}
	for _, want := range []string{
		fmt.Sprintf("(ε=%.4g, δ=1e-06)-DP for the released best run (DP-HyPO Theorem 1, Rényi DP at order ", plan.Cost.Epsilon),
		fmt.Sprintf(". Noise calibrated to target ε=2: DP-SGD noise multiplier %.6g and score noise multiplier %.6g (2×), the least that keep ε ≤ 2. ",
			sigma, 2*sigma),
		"Only the best run is released; the number of runs stays on the curator, as the guarantee requires.",
		" Neighbour relation " + string(ledger.RelationTrainingAddRemove) + ": one record added to or removed from the training data (the DP-SGD runs)",
	} {
		if !strings.Contains(plan.Guarantee, want) {
			t.Errorf("guarantee %q\ndoes not contain %q", plan.Guarantee, want)
		}
	}
	if plan.Cost.Delta != s.Delta || !(plan.Cost.Epsilon <= s.TargetEpsilon) {
		t.Errorf("charged %+v, want δ = %g and ε ≤ %g", plan.Cost, s.Delta, s.TargetEpsilon)
	}
}
