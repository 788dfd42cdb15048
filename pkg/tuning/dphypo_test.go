package tuning

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
)

func dphypoSpec() jobs.DPHyPOSpec {
	return jobs.DPHyPOSpec{
		Space: []hparam.Axis{{Name: "learning_rate", Kind: hparam.AxisLog, Low: 0.05, High: 2, Count: 6}, {Name: "clip_norm", Kind: hparam.AxisLinear, Low: 0.5, High: 2, Count: 4}},
		Theta: 1, Gamma: 0.2, CMax: 2, CMin: 0.75, Tau: 0.1, Beta: 1, Delta: 1e-5,
		DPSGD: jobs.DPSGD{LearningRate: 0.5, ClipNorm: 1, NoiseMultiplier: 1, Epochs: 3, BatchSize: 64, L2: 1e-3, ScoreNoiseMultiplier: 2},
	}
}

// TestDPHyPOPlan pins the job's charge to the accountant computed by hand from its parts:
// the subsampled Gaussian of DP-SGD composed with the Gaussian score release, through
// DP-HyPO's Theorem 1 and the improved conversion, on the integer orders of the default
// grid only (DP-SGD's lattice noise has a proved Rényi bound at integer orders only).
func TestDPHyPOPlan(t *testing.T) {
	r := breastCancer(t)
	s := dphypoSpec()
	plan, err := r.Plan(jobs.Spec{DPHyPO: &s})
	if err != nil {
		t.Fatal(err)
	}
	n, m := float64(r.train.N), float64(r.val.N)
	steps := 3 * int(math.Ceil(n/64))
	var orders []float64
	for _, a := range dp.DefaultOrders() {
		if a == math.Floor(a) {
			orders = append(orders, a)
		}
	}
	if len(orders) == len(dp.DefaultOrders()) {
		t.Fatal("the default order grid has no fractional orders; this test no longer tells them apart")
	}
	sgd, _ := dp.SubsampledGaussianRDP(orders, 64/n, 1, steps)
	score, _ := dp.GaussianRDP(orders, 1/m, 2/m)
	base, _ := sgd.Compose(score)
	total, _ := dp.DPHyPORDP(base, base, 1, 0.2, 2, 0.75)
	want, _, _ := total.ToDPImproved(1e-5)
	if math.Abs(plan.Cost.Epsilon-want) > 1e-12 || plan.Cost.Delta != 1e-5 {
		t.Errorf("plan cost = (%g, %g), want (%g, 1e-5)", plan.Cost.Epsilon, plan.Cost.Delta, want)
	}
	// The uniform baseline (C = c = 1) costs less than the GP rule's density bounds allow.
	u := dphypoSpec()
	u.Uniform = true
	uplan, err := r.Plan(jobs.Spec{DPHyPO: &u})
	if err != nil {
		t.Fatal(err)
	}
	if !(uplan.Cost.Epsilon < plan.Cost.Epsilon) {
		t.Errorf("uniform ε %g is not below GP ε %g (log(C/c) > 0 must cost)", uplan.Cost.Epsilon, plan.Cost.Epsilon)
	}
	if !strings.Contains(plan.Guarantee, "number of runs stays on the curator") {
		t.Errorf("guarantee %q does not say the run count is withheld", plan.Guarantee)
	}
	for name, mutate := range map[string]func(*jobs.DPHyPOSpec){
		"c > 1":            func(s *jobs.DPHyPOSpec) { s.CMin = 1.5 },
		"C < 1":            func(s *jobs.DPHyPOSpec) { s.CMax = 0.5 },
		"γ = 0":            func(s *jobs.DPHyPOSpec) { s.Gamma = 0 },
		"γ = 1":            func(s *jobs.DPHyPOSpec) { s.Gamma = 1 },
		"θ = −1":           func(s *jobs.DPHyPOSpec) { s.Theta = -1 },
		"empty grid":       func(s *jobs.DPHyPOSpec) { s.Space = nil },
		"δ = 0":            func(s *jobs.DPHyPOSpec) { s.Delta = 0 },
		"unknown axis":     func(s *jobs.DPHyPOSpec) { s.Space[0].Name = "depth" },
		"no noise":         func(s *jobs.DPHyPOSpec) { s.DPSGD.NoiseMultiplier = 0 },
		"no score noise":   func(s *jobs.DPHyPOSpec) { s.DPSGD.ScoreNoiseMultiplier = 0 },
		"too many runs":    func(s *jobs.DPHyPOSpec) { s.Gamma = 1e-5 },
		"batch > n":        func(s *jobs.DPHyPOSpec) { s.DPSGD.BatchSize = 100000 },
		"zero epochs":      func(s *jobs.DPHyPOSpec) { s.DPSGD.Epochs = 0 },
		"no evaluator eps": func(s *jobs.DPHyPOSpec) { s.Evaluator = "missing" },
	} {
		s := dphypoSpec()
		mutate(&s)
		if _, err := r.Plan(jobs.Spec{DPHyPO: &s}); !errors.Is(err, jobs.ErrInvalidSpec) {
			t.Errorf("%s: Plan error = %v, want ErrInvalidSpec", name, err)
		}
	}
}

func TestDPHyPORunReleasesOnlyTheBest(t *testing.T) {
	r := breastCancer(t)
	s := dphypoSpec()
	var events []jobs.Progress
	res, err := r.Run(context.Background(), jobs.Spec{DPHyPO: &s}, func(p jobs.Progress) { events = append(events, p) })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.mustSpace(t, s).Index(res.Hyperparameters); !ok || !res.HasHyperparameters {
		t.Errorf("released hyperparameters %v are not a grid point", res.Hyperparameters)
	}
	if res.Runs != 0 || len(events) != 1 {
		t.Errorf("released runs = %d and %d progress events; the run count must stay on the curator", res.Runs, len(events))
	}
	if res.Score < 0.5 || res.Score > 1.2 {
		t.Errorf("released noisy accuracy %g is implausible for breast cancer", res.Score)
	}
}

func (r *Runner) mustSpace(t *testing.T, s jobs.DPHyPOSpec) interface {
	Index(map[string]float64) (int, bool)
} {
	sp, err := r.space(s.Space)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestDPHyPOExternalEvaluatorGuarantees: an external base algorithm is charged from the
// guarantee its operator declared — a Rényi-DP curve through Theorem 1, or a pure ε
// through Theorem 2 when that is smaller — and refused when it declares none.
func TestDPHyPOExternalEvaluatorGuarantees(t *testing.T) {
	base := breastCancer(t)
	curve, _ := dp.GaussianRDP(dp.DefaultOrders(), 1, 3)
	r, err := New(Config{Dataset: base.cfg.Dataset, ValidationFraction: 0.3, SplitSeed: 1, Kusner: base.cfg.Kusner, Evaluators: []Evaluator{
		{Name: "rdp", Command: []string{"/bin/true"}, Timeout: 1e9, RDP: &curve},
		{Name: "pure", Command: []string{"/bin/true"}, Timeout: 1e9, Epsilon: 0.5},
		{Name: "silent", Command: []string{"/bin/true"}, Timeout: 1e9},
	}})
	if err != nil {
		t.Fatal(err)
	}
	spec := func(ev string) jobs.DPHyPOSpec {
		return jobs.DPHyPOSpec{Space: []hparam.Axis{{Name: "depth", Kind: hparam.AxisList, Values: []float64{1, 2, 3}}},
			Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Tau: 0.1, Beta: 1, Delta: 1e-5, Evaluator: ev}
	}
	s := spec("rdp")
	plan, err := r.Plan(jobs.Spec{DPHyPO: &s})
	if err != nil {
		t.Fatal(err)
	}
	total, _ := dp.DPHyPORDP(curve, curve, 1, 0.1, 2, 0.75)
	want, _, _ := total.ToDPImproved(1e-5)
	if math.Abs(plan.Cost.Epsilon-want) > 1e-12 || plan.Cost.Delta != 1e-5 {
		t.Errorf("declared RDP curve: cost (%g, %g), want (%g, 1e-5)", plan.Cost.Epsilon, plan.Cost.Delta, want)
	}
	s = spec("pure")
	plan, err = r.Plan(jobs.Spec{DPHyPO: &s})
	if err != nil {
		t.Fatal(err)
	}
	// Theorem 2: (2 + θ)(ε + log(C/c)) = 3 (0.5 + log(2/0.75)).
	if want := 3 * (0.5 + math.Log(2/0.75)); math.Abs(plan.Cost.Epsilon-want) > 1e-12 || plan.Cost.Delta != 0 {
		t.Errorf("declared pure ε: cost (%g, %g), want (%g, 0)", plan.Cost.Epsilon, plan.Cost.Delta, want)
	}
	s = spec("silent")
	if _, err := r.Plan(jobs.Spec{DPHyPO: &s}); !errors.Is(err, jobs.ErrInvalidSpec) || !strings.Contains(err.Error(), "declares no per-run privacy guarantee") {
		t.Errorf("undeclared evaluator: %v, want a refusal", err)
	}
}
