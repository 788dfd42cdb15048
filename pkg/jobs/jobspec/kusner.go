package jobspec

import (
	"fmt"

	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/hparam"
)

// KusnerSpec is a Kusner et al. (ICML 2015) job, Algorithm 1, 2 or 3 of the paper
// (docs/MATHS.md §3).
type KusnerSpec struct {
	Algorithm int `json:"algorithm"` // 1, 2 or 3
	// Space is the grid Λ as the modeler gave its axes. Its JSON is that of the
	// records written before hparam.Axis (as jobs.Range), so they still load.
	Space         []hparam.Axis `json:"space"`
	Iterations    int           `json:"iterations"`
	Epsilon       float64       `json:"epsilon"`
	Delta         float64       `json:"delta"`
	K1            float64       `json:"k1"`
	NoiseVariance float64       `json:"noise_variance"`
	GammaT        float64       `json:"gamma_t"`
	A             float64       `json:"a"`
	Tau           float64       `json:"tau"`
	Lengthscale   float64       `json:"lengthscale"`
	Evaluator     string        `json:"evaluator,omitempty"`
	// ForecastGap is the gap g of the job's forecast (Plan.Forecast): how close to the
	// best a candidate must be to count as found; 0 takes kusner.DefaultGapFraction of
	// the objective's range.
	ForecastGap float64 `json:"forecast_gap,omitempty"`
	// Force runs the job even when its forecast says its releases are no better than a
	// uniform pick (otherwise it is refused before anything is charged).
	Force bool `json:"force,omitempty"`
}

// kusnerKind declares Kusner jobs: a private best hyperparameter and score, stated for
// one record of the job's validation data replaced; its progress steps are public, so
// a report shows how long each took; a spec may force a job its forecast finds
// uninformative.
type kusnerKind struct{}

func (kusnerKind) Name() string               { return "kusner" }
func (kusnerKind) Has(s Spec) bool            { return s.Kusner != nil }
func (kusnerKind) Relation() privacy.Relation { return privacy.RelationValidationRecord }
func (kusnerKind) Forced(s Spec) bool         { return s.Kusner.Force }
func (kusnerKind) Timing() Timing             { return TimingElapsed }

func (kusnerKind) Describe(spec Spec) Description {
	s := spec.Kusner
	return Description{Grid: s.Space,
		Spec: []Row{{"algorithm", fmt.Sprint(s.Algorithm)}, {"iterations T", fmt.Sprint(s.Iterations)},
			{"ε, δ of each release", Figure(s.Epsilon) + ", " + Figure(s.Delta)}, {"evaluator", evaluatorWords(s.Evaluator)}, {"forced", fmt.Sprint(s.Force)}},
		Path: []Row{{"search", fmt.Sprintf("GP-UCB for T = %d iterations (public: one progress event each); the points it visited and their values are not released", s.Iterations)}},
	}
}
