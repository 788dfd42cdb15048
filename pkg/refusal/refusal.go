// Package refusal names why the curator refuses a request, in the terms both sides of
// the wire share: the reasons of the google.rpc.ErrorInfo (domain Domain) that
// pkg/rpc attaches to its refusals, the metadata keys that carry the figures, and
// Error, a refusal as a client holds it. A client branches on the reason (errors.Is with
// the Err* values) and reads the figures from the metadata; it never reads the message,
// which is prose for a person.
//
// The package knows nothing of gRPC: pkg/rpc puts Reason and the metadata into an
// ErrorInfo, pkg/curatorclient reads them back into an *Error.
package refusal

import (
	"errors"
	"strconv"
)

// Domain is the google.rpc.ErrorInfo domain of the curator's refusals.
const Domain = "privbo.curator.v1"

// Reason is the google.rpc.ErrorInfo reason of a refusal. The reasons are the names of
// curator.proto's enum RefusalReason, from which every client's list is generated (a test
// keeps the two the same set).
type Reason string

// The reasons, with the gRPC code the curator answers and the metadata it attaches.
const (
	// BudgetExceeded: RESOURCE_EXHAUSTED, the privacy budget cannot pay the request
	// (metadata: scope, relation, requested_epsilon, requested_delta, remaining_epsilon,
	// remaining_delta, reserved_epsilon and reserved_delta when part of the budget is held
	// by releases being computed (back if they fail), and budget "whole-patient" when
	// the refusing budget is the
	// whole-patient cap, whose figures are whole-patient ones; a release with no finite
	// whole-patient figure requests ε "+Inf"); nothing was charged.
	BudgetExceeded Reason = "BUDGET_EXCEEDED"
	// DeltaBudgetZero: FAILED_PRECONDITION, the request needs δ > 0 and the curator's δ
	// budget is 0: no such release can ever be made.
	DeltaBudgetZero Reason = "DELTA_BUDGET_ZERO"
	// DimensionAboveFeatures: INVALID_ARGUMENT, a projection dimension above the
	// dataset's number of features.
	DimensionAboveFeatures Reason = "DIMENSION_ABOVE_FEATURES"
	// ExactRowLimit: RESOURCE_EXHAUSTED, the cap on distinct rows answered exactly
	// (output privacy "none"; metadata: limit, answered, requested) is reached; rows
	// already answered are still replayed.
	ExactRowLimit Reason = "EXACT_ROW_LIMIT"
	// MemoryLimit: RESOURCE_EXHAUSTED, the release needs more memory while it is
	// computed than the curator admits for all its releases at once, so it can never be
	// made as asked (metadata: needed_bytes, available_bytes, dimension, and
	// max_dimension, the largest r that fits, 0 if none); nothing was computed or
	// charged. A smaller r fits. With held_bytes instead of the dimensions, and a
	// RetryInfo: the request waited for memory that releases in progress held (of
	// available_bytes, the curator's whole memory for releases) until shortly before
	// its deadline; retrying may meet it (a charged release is replayed at no cost).
	MemoryLimit Reason = "MEMORY_LIMIT"
	// Uninformative: FAILED_PRECONDITION, a Kusner job whose forecast says its releases
	// would be no better than a uniform pick (metadata: epsilon_needed, selection_lift,
	// value_lift, margin; the forecast message itself as a further status detail);
	// nothing was charged.
	Uninformative Reason = "KUSNER_RELEASE_UNINFORMATIVE"
	// LedgerUnavailable: UNAVAILABLE, the curator's privacy ledger did not answer within
	// its call timeout or dropped the connection; nothing is known to be wrong with the
	// request, and retrying it is safe (a charged release is replayed at no cost).
	LedgerUnavailable Reason = "LEDGER_UNAVAILABLE"
	// ReleaseInProgress: ABORTED, the same release (or job) is being computed for another
	// request, through this curator or a replica sharing its ledger; retrying once it is
	// charged replays it at no cost. Nothing was charged.
	ReleaseInProgress Reason = "RELEASE_IN_PROGRESS"
	// StoredBytes: RESOURCE_EXHAUSTED, the release would keep more bytes for replay than
	// the curator stores for this identity (scope "identity") or for the dataset (scope
	// "dataset"; metadata: scope, requested_bytes, stored_bytes, reserved_bytes held by
	// releases being computed, quota_bytes); nothing was computed or charged. Releases
	// already made are still replayed, and a smaller r stores less.
	StoredBytes Reason = "STORED_BYTES"
)

// Metadata keys the curator sets (see the reasons).
const (
	KeyScope            = "scope"
	KeyRelation         = "relation"
	KeyBudget           = "budget"
	KeyRequestedEpsilon = "requested_epsilon"
	KeyRequestedDelta   = "requested_delta"
	KeyRemainingEpsilon = "remaining_epsilon"
	KeyRemainingDelta   = "remaining_delta"
	KeyReservedEpsilon  = "reserved_epsilon"
	KeyReservedDelta    = "reserved_delta"
	KeyLimit            = "limit"
	KeyAnswered         = "answered"
	KeyRequested        = "requested"
	KeyNeededBytes      = "needed_bytes"
	KeyAvailableBytes   = "available_bytes"
	KeyHeldBytes        = "held_bytes"
	KeyDimension        = "dimension"
	KeyMaxDimension     = "max_dimension"
	KeyEpsilonNeeded    = "epsilon_needed"
	KeyRequestedBytes   = "requested_bytes"
	KeyStoredBytes      = "stored_bytes"
	KeyReservedBytes    = "reserved_bytes"
	KeyQuotaBytes       = "quota_bytes"
)

// WholePatient is the value of KeyBudget when the refusing budget is the whole-patient
// cap.
const WholePatient = "whole-patient"

// One error value per reason, for errors.Is.
var (
	ErrBudgetExceeded         = errors.New("the privacy budget cannot pay the request")
	ErrDeltaBudgetZero        = errors.New("the curator's δ budget is 0")
	ErrDimensionAboveFeatures = errors.New("projection dimension above the number of features")
	ErrExactRowLimit          = errors.New("the limit on rows answered exactly is reached")
	ErrMemoryLimit            = errors.New("the release needs more memory than the curator admits")
	ErrUninformative          = errors.New("the job's releases would be no better than a uniform pick")
	ErrLedgerUnavailable      = errors.New("the curator cannot reach its privacy ledger right now")
	ErrReleaseInProgress      = errors.New("the same release is being computed for another request")
	ErrStoredBytes            = errors.New("the release would store more than the curator keeps for replay")
)

var sentinels = map[Reason]error{
	BudgetExceeded:         ErrBudgetExceeded,
	DeltaBudgetZero:        ErrDeltaBudgetZero,
	DimensionAboveFeatures: ErrDimensionAboveFeatures,
	ExactRowLimit:          ErrExactRowLimit,
	MemoryLimit:            ErrMemoryLimit,
	Uninformative:          ErrUninformative,
	LedgerUnavailable:      ErrLedgerUnavailable,
	ReleaseInProgress:      ErrReleaseInProgress,
	StoredBytes:            ErrStoredBytes,
}

// Reasons returns every reason the curator sets.
func Reasons() []Reason {
	return []Reason{BudgetExceeded, DeltaBudgetZero, DimensionAboveFeatures, ExactRowLimit, MemoryLimit, Uninformative, LedgerUnavailable, ReleaseInProgress, StoredBytes}
}

// Error is a request the curator refused, as a client holds it: the reason and the
// figures of its ErrorInfo, wrapping the transport's error (whose text is the curator's
// message). errors.Is(e, ErrX) holds for the Err* value of its reason; a reason this
// client does not know matches none.
type Error struct {
	Reason   Reason
	Metadata map[string]string
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the transport's error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the Err* value of e's reason.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Reason]
	return ok && s == target
}

// Float returns the metadata value at key as a float64 (ok false when absent or not a
// number).
func (e *Error) Float(key string) (float64, bool) {
	v, ok := e.Metadata[key]
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// Int returns the metadata value at key as an int64 (ok false when absent or not an
// integer).
func (e *Error) Int(key string) (int64, bool) {
	v, ok := e.Metadata[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
