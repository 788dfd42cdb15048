package ledger

import "strings"

// Kinds of the records privbo writes (Charge.Kind). The ledger stores any
// kind; these name the ones the curator writes and its tools read, so that a
// writer and a reader can never disagree on a spelling.
const (
	KindProjection      = "projection"       // a projection release (feature-unit)
	KindQueryAnswers    = "query-answers"    // an identity's one charge for all its private answers (record)
	KindQuery           = "query"            // one answer released to an identity, at no cost (record)
	KindQueryFailure    = "query-failure"    // a failed evaluation reported to a caller (record)
	KindEvaluation      = "evaluation"       // the curator's recorded evaluation of a row, at no cost
	KindPending         = "pending"          // a row waiting for a manual evaluation, at no cost
	KindScalingEstimate = "scaling-estimate" // the private estimate of the scaling bounds (record)
	// KindJobPrefix starts the kind of a tuning job's charge: "job:" + the job kind
	// ("kusner", "dphypo").
	KindJobPrefix = "job:"
)

// ReservedIdentityPrefix starts the identities the curator records under for
// itself (such as "_curator"); no caller identity may start with it.
const ReservedIdentityPrefix = "_"

// IsReserved reports whether identity is one of the curator's own.
func IsReserved(identity string) bool { return strings.HasPrefix(identity, ReservedIdentityPrefix) }
