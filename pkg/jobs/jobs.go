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
// The reservation (ledger.Ledger.Reserve) holds the cost against concurrent releases
// while the job is recorded; a submission that fails before the charge cancels it, so
// nothing is spent for a job that never runs, and no job runs uncharged.
//
// A job id is derived from the caller's identity and idempotency key, so submitting the
// same spec with the same key returns the existing job and charges nothing more.
//
// Where jobs live (Store): in a curator's own jobs.db (OpenSQLite), beside its SQLite
// ledger — a curator that stops while jobs run marks them FAILED when it starts again
// ("interrupted"); their charge stays spent, since the data may have been touched — or in
// the ledger's PostgreSQL schema (OpenPostgres), shared by every curator replica of the
// dataset: any replica answers for any job, and a job runs under a lease that its
// replica renews; when the replica dies the lease expires and another replica takes the
// job over and runs it again, for the same single charge, releasing one result (see
// Manager). Adopt copies a jobs.db into the shared store.
//
// Quote plans a job without charging it. A Kusner job's plan carries a forecast of what
// its releases will be worth (kusner.Forecast); Submit refuses one that is no better than
// a uniform pick, before the charge, unless its spec sets Force (UninformativeError).
//
// A Runner may return, beside the result, an operator-only Trace of the job's path (for
// DP-HyPO: the runs, points, scores and sampling distributions the guarantee does not
// cover). It is kept in its own table, never encoded with the result or the ledger
// receipt; Manager.Trace and Reader.Trace read it for the curator's operator, and
// package jobreport renders a job for either audience.
//
// Progress events and error messages go to the modeler, so they carry only counts, states
// and messages that do not depend on the data. Errors from a Runner reach the modeler only
// when they are PublicErrors; anything else is logged for the operator and reported as an
// internal error.
package jobs

import (
	"errors"
	"time"

	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/kusner"
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

// The kinds' contract, defined in package jobspec so that the job kinds (package
// tuning) need not import the manager and its storage.
type (
	KusnerSpec  = jobspec.KusnerSpec
	DPSGD       = jobspec.DPSGD
	DPHyPOSpec  = jobspec.DPHyPOSpec
	Spec        = jobspec.Spec
	Plan        = jobspec.Plan
	Progress    = jobspec.Progress
	Result      = jobspec.Result
	Trace       = jobspec.Trace
	TraceStep   = jobspec.TraceStep
	Runner      = jobspec.Runner
	PublicError = jobspec.PublicError
)

// The default density bounds of a DP-HyPO job (jobspec.DefaultCMax, jobspec.DefaultCMin).
const (
	DefaultCMax = jobspec.DefaultCMax
	DefaultCMin = jobspec.DefaultCMin
)

// Job is a job's record.
type Job struct {
	ID, Identity, Key string
	Spec              Spec
	State             State
	Cost              privacy.Cost
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
	// ErrInvalidSpec marks a spec that can never run as sent (jobspec.ErrInvalidSpec).
	ErrInvalidSpec = jobspec.ErrInvalidSpec
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
