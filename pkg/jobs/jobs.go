// Package jobs runs the curator's private jobs — hyperparameter tuning on its own data
// (Kusner et al., DP-HyPO) — durably: a job's spec, state, progress events and result
// survive restarts, and its whole privacy cost is charged to the ledger when the job is
// accepted, before it touches the data.
//
// Life of a job:
//
//	Submit → Plan (validate, cost, guarantee; no data) → ledger reservation → job
//	recorded → ledger charge (the reservation committed, idempotent on the job id) →
//	QUEUED → RUNNING → SUCCEEDED | FAILED | CANCELLED
//
// The reservation (ledger.Store.Reserve) holds the cost against concurrent releases
// while the job is recorded; a submission that fails before the charge cancels it, so
// nothing is spent for a job that never runs, and no job runs uncharged.
//
// A job id is derived from the caller's identity and idempotency key, so submitting the
// same spec with the same key returns the existing job and charges nothing more. A curator
// that stops while jobs run marks them FAILED when it starts again ("interrupted"); their
// charge stays spent, since the data may have been touched.
//
// Quote plans a job without charging it. A Kusner job's plan carries a forecast of what
// its releases will be worth (kusner.Forecast); Submit refuses one that is no better than
// a uniform pick, before the charge, unless its spec sets Force (UninformativeError).
//
// A Runner may return, beside the result, an operator-only Trace of the job's path (for
// DP-HyPO: the runs, points, scores and sampling distributions the guarantee does not
// cover). It is kept in its own table, never encoded with the result or the ledger
// receipt; Manager.Trace and Reader.Trace read it for the curator's operator, and
// WriteReport renders a job for either audience.
//
// Progress events and error messages go to the modeler, so they carry only counts, states
// and messages that do not depend on the data. Errors from a Runner reach the modeler only
// when they are PublicErrors; anything else is logged for the operator and reported as an
// internal error.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/kusner"
	"github.com/privbo/privbo/pkg/ledger"
)

// State is a job's state.
type State string

const (
	Queued    State = "queued"
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// Terminal reports whether no further change can happen.
func (s State) Terminal() bool { return s == Succeeded || s == Failed || s == Cancelled }

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

// Spec is a job's specification: exactly one kind is set.
type Spec struct {
	Kusner *KusnerSpec `json:"kusner,omitempty"`
	DPHyPO *DPHyPOSpec `json:"dphypo,omitempty"`
}

// Kind names the job type.
func (s Spec) Kind() string {
	switch {
	case s.Kusner != nil && s.DPHyPO == nil:
		return "kusner"
	case s.DPHyPO != nil && s.Kusner == nil:
		return "dphypo"
	}
	return ""
}

// Plan is what a job will cost and guarantee, decided from its spec alone.
type Plan struct {
	Cost      ledger.Cost
	Guarantee string
	// Relation is the neighbour relation Guarantee and Cost are stated for; the
	// charge is made under it. Empty: the default for the job's kind
	// (ledger.JobRelation).
	Relation ledger.Relation
	// Patient is the job's whole-patient cost (ledger.PatientCost), charged with Cost;
	// nil takes the ledger's default for Relation (ledger.DefaultPatientCost).
	Patient *ledger.PatientCost
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

// Job is a job's record.
type Job struct {
	ID, Identity, Key string
	Spec              Spec
	State             State
	Cost              ledger.Cost
	Guarantee         string
	Result            *Result
	Error             string
	Created, Updated  time.Time
}

// Event is one entry of a job's durable event log.
type Event struct {
	JobID       string
	Seq         uint64
	Time        time.Time
	State       State
	Step, Total int
	Message     string
}

var (
	// ErrInvalidSpec marks a spec that can never run as sent.
	ErrInvalidSpec = errors.New("invalid job spec")
	// ErrNotFound is returned for an unknown job (or one of another identity).
	ErrNotFound = errors.New("job not found")
	// ErrKeyReused is returned when an idempotency key is reused with another spec.
	ErrKeyReused = errors.New("idempotency key already used with a different spec")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("job manager is shut down")
	// ErrUninformative is returned (wrapped in an *UninformativeError) by Submit for a
	// Kusner job whose forecast says its releases would be no better than a uniform pick
	// and whose spec does not have Force. Nothing is charged.
	ErrUninformative = errors.New("the job's releases would be no better than a uniform pick")
	// ErrAcceptedElsewhere is returned when the ledger already holds a job's charge but
	// this manager has no record of the job: another curator replica sharing the ledger
	// accepted it (or this curator lost its job store). The job is not run again, since
	// that would release a second result for one charge. Errors wrapping it also match
	// ErrKeyReused: the idempotency key is already used, by a job this manager cannot show.
	ErrAcceptedElsewhere = errors.New("job accepted by another curator replica")
)

// UninformativeError is Submit's refusal of a job whose forecast is not informative; it
// carries the forecast, so the refusal can state the numbers (and the ε at which the job
// would help) as fields.
type UninformativeError struct{ Forecast kusner.Forecast }

func (e *UninformativeError) Error() string {
	return "jobs: refused before any charge: " + e.Forecast.String() + "; resubmit with force to run and pay for it anyway"
}

func (e *UninformativeError) Unwrap() error { return ErrUninformative }

// acceptedElsewhereError matches both ErrAcceptedElsewhere and ErrKeyReused, with a
// message that tells the modeler what to do.
type acceptedElsewhereError struct{ id string }

func (e *acceptedElsewhereError) Error() string {
	return "jobs: job " + e.id + " was already accepted and charged, but this curator has no record of it " +
		"(another curator replica sharing the privacy ledger accepted it, or this curator lost its job store); " +
		"it is not run here and nothing more is charged: ask the replica that accepted it, or the curator's operator, for its result"
}

func (e *acceptedElsewhereError) Unwrap() []error { return []error{ErrAcceptedElsewhere, ErrKeyReused} }

// PublicError is an error whose message may be shown to the modeler: it depends only on
// the spec or the operator's configuration, never on the data.
type PublicError struct{ Msg string }

func (e *PublicError) Error() string { return e.Msg }

// Publicf returns a PublicError.
func Publicf(format string, args ...any) error {
	return &PublicError{Msg: fmt.Sprintf(format, args...)}
}
