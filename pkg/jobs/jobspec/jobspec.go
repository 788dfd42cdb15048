// Package jobspec is the contract between the curator's job manager (package jobs)
// and the job kinds that run over its data (package tuning): a job's Spec, the Plan
// (cost, relation, guarantee) a Runner makes of it from the spec alone, the
// Progress it reports and the Result it releases. Each kind is declared here once, in
// a file of its own (kusner.go, dphypo.go), as a Kind registered in kind.go. It knows
// nothing of storage, so a job kind states its guarantee (package privacy) without
// importing the ledger, and a client can read a job without linking the data code.
package jobspec

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/kusner"
)

// Plan is what a job will cost and guarantee, decided from its spec alone.
type Plan struct {
	Cost      privacy.Cost
	Guarantee string
	// Relation is the neighbour relation Guarantee and Cost are stated for; the
	// charge is made under it. Empty: the default for the job's kind
	// (Spec.Relation).
	Relation privacy.Relation
	// Patient is the job's whole-patient cost (privacy.PatientCost), charged with Cost;
	// nil takes the ledger's default for Relation (privacy.DefaultPatientCost).
	Patient *privacy.PatientCost
	// Steps is the expected number of progress steps (0 if unknown).
	Steps int
	// Forecast is what a Kusner job's releases will be worth, from public quantities
	// only (nil for other kinds). Submit refuses a job whose forecast is not informative
	// unless its spec has Force.
	Forecast *kusner.Forecast
}

// Progress is one progress report of a running job: counts and a data-independent
// message only.
type Progress struct {
	Step, Total int
	Message     string
}

// Result is a job's private release.
type Result struct {
	Hyperparameters    map[string]float64 `json:"hyperparameters,omitempty"`
	HasHyperparameters bool               `json:"has_hyperparameters"`
	Score              float64            `json:"score"`
	Runs               int                `json:"runs,omitempty"`
	Epsilon            float64            `json:"epsilon"`
	Delta              float64            `json:"delta"`
	Guarantee          string             `json:"guarantee"`
	Constants          map[string]float64 `json:"constants,omitempty"`
	// Trace is the search's path for the curator's operator (DP-HyPO: every run's point,
	// score and sampling distribution). It is not part of the release: it is never
	// encoded with the result (json "-"), sent to the modeler or attached to the ledger
	// receipt; the Manager keeps it in an operator-only table (Manager.Trace).
	Trace *Trace `json:"-"`
}

// Trace is a job's path as only the curator's operator may see it: for DP-HyPO the
// number of runs, each run's grid point and noisy score, and the sampling distribution
// each point was drawn from — none of which the guarantee covers (releasing the number
// of runs alone would void it).
type Trace struct {
	Steps []TraceStep `json:"steps"`
	// Grid are the grid's axes, for reports; Names the hyperparameters in axis order.
	Grid []hparam.Axis `json:"grid"`
	// Final is the last sampling distribution π̃ as multiples of uniform (π̃·N), one per
	// grid point; Visits counts the runs at each grid point.
	Final  []float64 `json:"final"`
	Visits []int     `json:"visits"`
}

// TraceStep is one run of a traced search.
type TraceStep struct {
	Run             int                `json:"run"`
	Index           int                `json:"index"`
	Hyperparameters map[string]float64 `json:"hyperparameters"`
	Score           float64            `json:"score"`
	Failed          bool               `json:"failed,omitempty"`
	// The sampling distribution the point was drawn from, as multiples of uniform:
	// largest and smallest π̃·N and the normalised entropy H(π̃)/log N (1: uniform).
	MaxDensity float64 `json:"max_density"`
	MinDensity float64 `json:"min_density"`
	Entropy    float64 `json:"entropy"`
}

// NewTraceStep summarises one run whose grid point was drawn from sampling (N values
// summing to 1).
func NewTraceStep(run, index int, point map[string]float64, score float64, failed bool, sampling []float64) TraceStep {
	st := TraceStep{Run: run, Index: index, Hyperparameters: point, Score: score, Failed: failed}
	n := float64(len(sampling))
	if n == 0 {
		return st
	}
	st.MinDensity = math.Inf(1)
	h := 0.0
	for _, p := range sampling {
		st.MaxDensity, st.MinDensity = max(st.MaxDensity, p*n), min(st.MinDensity, p*n)
		if p > 0 {
			h -= p * math.Log(p)
		}
	}
	st.Entropy = 1
	if n > 1 {
		st.Entropy = h / math.Log(n)
	}
	return st
}

// Runner plans and runs jobs over the curator's data.
type Runner interface {
	// Plan validates spec and returns its cost without touching the data. Invalid specs
	// return an error wrapping ErrInvalidSpec.
	Plan(spec Spec) (Plan, error)
	// Run executes the job. It honours ctx and reports progress.
	Run(ctx context.Context, spec Spec, progress func(Progress)) (Result, error)
}

// ErrInvalidSpec marks a spec that can never run as sent.
var ErrInvalidSpec = errors.New("invalid job spec")

// PublicError is an error whose message may be shown to the modeler: it depends only on
// the spec or the operator's configuration, never on the data.
type PublicError struct{ Msg string }

func (e *PublicError) Error() string { return e.Msg }

// Publicf returns a PublicError.
func Publicf(format string, args ...any) error {
	return &PublicError{Msg: fmt.Sprintf(format, args...)}
}
