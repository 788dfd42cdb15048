package jobspec

import (
	"fmt"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/hparam"
)

// DPSGD are the fixed settings of the built-in DP-SGD base algorithm.
type DPSGD struct {
	LearningRate         float64 `json:"learning_rate"`
	ClipNorm             float64 `json:"clip_norm"`
	NoiseMultiplier      float64 `json:"noise_multiplier"`
	Epochs               int     `json:"epochs"`
	BatchSize            int     `json:"batch_size"`
	L2                   float64 `json:"l2"`
	ScoreNoiseMultiplier float64 `json:"score_noise_multiplier"`
}

// DefaultCMax and DefaultCMin are the density bounds C and c of a DP-HyPO job that
// does not choose its own (the modeler's --c-max and --c-min). They cost at least
// (2+θ)·log(C/c) of the job's ε whatever its noise (DP-HyPO's Theorem 1). Measured under
// the paper's own protocol (docs/EXPERIMENTS.md, the C/c sweep), the GP rule was never
// ahead of uniform search on the digits at ε = 10–15 for C/c = 1.25–2.67, and the smallest
// ratio risked least; this 1.1/0.9 (C/c = 1.22) is the smallest.
const (
	DefaultCMax = 1.1
	DefaultCMin = 0.9
)

// DPHyPOSpec is a DP-HyPO job (Wang et al., NeurIPS 2023; docs/MATHS.md §4).
type DPHyPOSpec struct {
	// Space is the grid Λ, as in KusnerSpec.
	Space     []hparam.Axis `json:"space"`
	Theta     float64       `json:"theta"`
	Gamma     float64       `json:"gamma"`
	CMax      float64       `json:"c_max"`
	CMin      float64       `json:"c_min"`
	Tau       float64       `json:"tau"`
	Beta      float64       `json:"beta"`
	Uniform   bool          `json:"uniform"`
	Evaluator string        `json:"evaluator,omitempty"`
	DPSGD     DPSGD         `json:"dpsgd"`
	Delta     float64       `json:"delta"`
	// TargetEpsilon > 0 has the curator choose the built-in learner's noise: the least
	// DP-SGD noise multiplier (and a score noise multiplier in a fixed ratio to it)
	// whose whole search costs at most this ε at Delta. DPSGD.NoiseMultiplier and
	// DPSGD.ScoreNoiseMultiplier must then be unset. 0: they are the spec's.
	TargetEpsilon float64 `json:"target_epsilon,omitempty"`
}

// dphypoKind declares DP-HyPO jobs: the best run of DP-SGD runs, stated for one
// training record added or removed. The number of runs is private (releasing it would
// void Theorem 1), so a modeler's report shows no event times, and only the public
// envelope of the sampling distributions, not the path inside it.
type dphypoKind struct{}

func (dphypoKind) Name() string               { return "dphypo" }
func (dphypoKind) Has(s Spec) bool            { return s.DPHyPO != nil }
func (dphypoKind) Relation() privacy.Relation { return privacy.RelationTrainingAddRemove }
func (dphypoKind) Forced(Spec) bool           { return false }
func (dphypoKind) Timing() Timing             { return TimingHidden }

func (dphypoKind) Describe(spec Spec) Description {
	s := spec.DPHyPO
	rule := fmt.Sprintf("GP rule, C = %g, c = %g, τ = %g, β = %g", s.CMax, s.CMin, s.Tau, s.Beta)
	lo, hi := s.CMin, s.CMax
	if s.Uniform {
		rule, lo, hi = "uniform (C = c = 1)", 1, 1
	}
	mean := dp.NegBinMean(s.Theta, s.Gamma)
	d := Description{Grid: s.Space,
		Spec: []Row{{"sampling rule", rule}, {"runs", fmt.Sprintf("T ~ NegBin(θ = %g, γ = %g), E[T] = %.4g", s.Theta, s.Gamma, mean)},
			{"δ", Figure(s.Delta)}, {"target ε", Figure(s.TargetEpsilon)}, {"evaluator", evaluatorWords(s.Evaluator)}},
		Path: []Row{
			{"prior π(0)", "uniform over the grid"},
			{"sampling distributions π̃", fmt.Sprintf("every one lies between %g× and %g× the uniform density at every grid point (the density bounds c and C, public); which ones the search used is not released", lo, hi)},
			{"runs", fmt.Sprintf("not released: T is drawn from NegBin(θ, γ) with mean %.4g, and releasing it would void the guarantee (only the best run's candidate and score are released)", mean)},
		},
		Notes: []string{"The job's duration correlates with its number of runs; this report does not show it."},
	}
	if s.Evaluator == "" {
		d.Spec = append(d.Spec, Row{"DP-SGD", fmt.Sprintf("%d epochs, expected batch %d, L2 %g, learning rate %g, clipping norm %g (unless on the grid)",
			s.DPSGD.Epochs, s.DPSGD.BatchSize, s.DPSGD.L2, s.DPSGD.LearningRate, s.DPSGD.ClipNorm)})
	}
	return d
}
