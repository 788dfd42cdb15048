package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/refusal"
)

// exitRefused is the exit status of a run the curator refused for a stated reason (its
// google.rpc.ErrorInfo), or whose quote shows the budget cannot pay it: nothing was
// charged for the refused request, and asking again unchanged would be refused again.
const exitRefused = 3

// refusedError is a refusal shown to a person: the error as it came, then what to do.
// It unwraps to the error.
type refusedError struct {
	hint string
	err  error
}

func (e *refusedError) Error() string { return e.err.Error() + "\n  " + e.hint }
func (e *refusedError) Unwrap() error { return e.err }
func (e *refusedError) ExitCode() int { return exitRefused }

// transientError is a refusal that asking again may not meet (LEDGER_UNAVAILABLE: the
// curator could not reach its privacy ledger; RELEASE_IN_PROGRESS: the same release is
// being computed for another request; MEMORY_LIMIT with held_bytes: the request waited
// for memory other releases held): the error, then that the same command can be run
// again. Its exit status is the ordinary 1, not exitRefused.
type transientError struct {
	err    error
	reason refusal.Reason
}

func (e *transientError) Error() string {
	why := "the curator cannot reach its privacy ledger right now"
	switch e.reason {
	case refusal.ReleaseInProgress:
		why = "the curator is computing this same release for another request (another run of this study?)"
	case refusal.MemoryLimit:
		why = "the curator's memory for releases was taken by other releases until shortly before the request's deadline"
	}
	return e.err.Error() + "\n  " + why + "; nothing is known to be wrong with the request: " +
		"run the same command again shortly (a release already charged is replayed at no cost)"
}
func (e *transientError) Unwrap() error { return e.err }

// explainRefusal returns err with what a person can do about it when it is a refusal:
// the curator's, by its reason and figures (never its message), or the study quote's
// (modeler.ErrStudyUnaffordable). Other errors are returned as they are.
func explainRefusal(err error) error {
	var done *refusedError
	var again *transientError
	if errors.As(err, &done) || errors.As(err, &again) {
		return err
	}
	var re *refusal.Error
	if errors.As(err, &re) {
		if _, waited := re.Metadata[refusal.KeyHeldBytes]; re.Reason == refusal.LedgerUnavailable || re.Reason == refusal.ReleaseInProgress || waited {
			return &transientError{err: err, reason: re.Reason}
		}
		if hint := refusalHint(re); hint != "" {
			return &refusedError{hint: hint, err: err}
		}
		return err
	}
	var ue *modeler.UnaffordableError
	if errors.As(err, &ue) {
		c := ue.Charge
		return &refusedError{hint: "the study does not fit the budget (see the quote above); nothing was charged.\n  " +
			budgetAdvice(c.Scope, false, c.Epsilon > c.EpsilonAvailable, c.EpsilonAvailable, c.DeltaAvailable), err: err}
	}
	return err
}

// budgetAdvice is the one step that can get a refused charge paid, by the budget that
// refuses it (scope "identity" or "dataset", of the whole-patient cap or not) and what
// it leaves; epsShort says ε, not δ, is what falls short. Asking for less helps only
// while the budget leaves something; a cap shared by every identity is raised only by
// the curator's operator, with the curator's flag named.
func budgetAdvice(scope string, wholePatient, epsShort bool, leftEps, leftDelta float64) string {
	flag := "budget"
	if scope == "dataset" {
		flag = "dataset-budget"
	}
	if wholePatient {
		flag = "patient-" + flag
	}
	if epsShort {
		flag += "-epsilon"
	} else {
		flag += "-delta"
	}
	raise := "ask the curator's operator to raise it (the curator's --" + flag + ")."
	if scope != "dataset" {
		return fmt.Sprintf("This identity's budget leaves ε=%.4g, δ=%.4g: ask for less (a smaller --epsilon or --delta, fewer --iterations), or %s",
			leftEps, leftDelta, raise)
	}
	shared := "The dataset's budget, shared by every identity, is what refuses, not your own budget"
	if epsShort && leftEps > 0 || !epsShort && leftDelta > 0 {
		return fmt.Sprintf("%s; it leaves ε=%.4g, δ=%.4g.\n  Ask for at most that, or %s", shared, leftEps, leftDelta, raise)
	}
	return shared + ", and it is spent: asking for less will not help.\n  Only the curator's operator can raise it, with the curator's --" + flag + "."
}

// refusalHint says what to do about a refusal of reason e.Reason, with its figures; ""
// for a reason this modeler does not know.
func refusalHint(e *refusal.Error) string {
	num := func(key string) string {
		v, ok := e.Float(key)
		if !ok {
			return "?"
		}
		return fmt.Sprintf("%.4g", v)
	}
	switch e.Reason {
	case refusal.BudgetExceeded:
		who := "this identity's privacy budget"
		whole, scope := e.Metadata[refusal.KeyBudget] == refusal.WholePatient, e.Metadata[refusal.KeyScope]
		switch {
		case whole && scope == "dataset":
			who = "the curator's cap on what one whole patient can lose to all identities together"
		case whole:
			who = "the curator's cap on what one whole patient can lose to this identity"
		case scope == "dataset":
			who = "the dataset's privacy budget, shared by every identity"
		}
		asked := fmt.Sprintf("ε=%s, δ=%s asked, ε=%s, δ=%s left", num(refusal.KeyRequestedEpsilon), num(refusal.KeyRequestedDelta),
			num(refusal.KeyRemainingEpsilon), num(refusal.KeyRemainingDelta))
		reqEps, _ := e.Float(refusal.KeyRequestedEpsilon)
		if math.IsInf(reqEps, 1) {
			asked = "the release has no finite whole-patient guarantee"
		}
		if r := e.Metadata[refusal.KeyRelation]; r != "" {
			asked += " under the " + r + " relation"
		}
		leftEps, _ := e.Float(refusal.KeyRemainingEpsilon)
		leftDelta, _ := e.Float(refusal.KeyRemainingDelta)
		return fmt.Sprintf("refused by %s (%s); nothing was charged for this request.\n  %s", who, asked,
			budgetAdvice(scope, whole, reqEps > leftEps, leftEps, leftDelta))
	case refusal.DeltaBudgetZero:
		return "the curator's δ budget is 0, so nothing that needs δ > 0 (as this request does) can ever be released to you; " +
			"this is not a spent budget: ask the curator's operator for a δ budget"
	case refusal.DimensionAboveFeatures:
		return "the curator releases no projection to more dimensions than the dataset has features: ask for a smaller --r (or --r auto)"
	case refusal.ExactRowLimit:
		limit, _ := e.Int(refusal.KeyLimit)
		answered, _ := e.Int(refusal.KeyAnswered)
		requested, _ := e.Int(refusal.KeyRequested)
		return fmt.Sprintf("the curator answers at most %d distinct rows exactly, to all identities together; %d have been answered and this request asks for %d more. "+
			"Rows already answered to you are replayed at no cost; ask for fewer --iterations, or ask the curator's operator to raise the limit", limit, answered, requested)
	case refusal.MemoryLimit:
		need, _ := e.Int(refusal.KeyNeededBytes)
		avail, _ := e.Int(refusal.KeyAvailableBytes)
		r, _ := e.Int(refusal.KeyDimension)
		maxR, _ := e.Int(refusal.KeyMaxDimension)
		what := fmt.Sprintf("a projection of dimension %d needs %s of memory while the curator computes it, and it admits %s for its releases", r, memory.MiB(need), memory.MiB(avail))
		if maxR <= 0 {
			return what + "; no dimension fits: ask the curator's operator to raise its memory for releases"
		}
		return fmt.Sprintf("%s: ask for --r %d or less", what, maxR)
	case refusal.StoredBytes:
		who := "this identity's releases"
		if e.Metadata[refusal.KeyScope] == "dataset" {
			who = "the releases of every identity together"
		}
		need, _ := e.Int(refusal.KeyRequestedBytes)
		stored, _ := e.Int(refusal.KeyStoredBytes)
		quota, _ := e.Int(refusal.KeyQuotaBytes)
		return fmt.Sprintf("the curator keeps at most %s for %s, %s is used, and this release needs %s; nothing was charged. "+
			"Releases already made are replayed at no cost; ask for a smaller --r, or ask the curator's operator to raise the quota", memory.MiB(quota), who, memory.MiB(stored), memory.MiB(need))
	case refusal.Uninformative:
		eps, ok := e.Float(refusal.KeyEpsilonNeeded)
		if ok && !math.IsInf(eps, 1) {
			return fmt.Sprintf("the job's forecast finds its releases no better than a uniform pick, so it was refused before any charge: ask for --epsilon %.4g or more, or add --force to run and pay for it anyway", eps)
		}
		return "the job's forecast finds its releases no better than a uniform pick at any ε, so it was refused before any charge: add --force to run and pay for it anyway"
	}
	return ""
}
