package jobspec

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/hparam"
)

// Spec is a job's specification: exactly one kind is set. Its JSON, one key named for
// the kind, is how jobs are stored.
type Spec struct {
	Kusner *KusnerSpec `json:"kusner,omitempty"`
	DPHyPO *DPHyPOSpec `json:"dphypo,omitempty"`
}

// Kind names the job's kind ("" if not exactly one kind is set).
func (s Spec) Kind() string {
	if k := KindOf(s); k != nil {
		return k.Name()
	}
	return ""
}

// Relation is the neighbour relation a job of s's kind is stated for unless its plan
// says otherwise (Kind.Relation). A spec of no kind is taken to be a record-level
// release of the served dataset, the conservative choice.
func (s Spec) Relation() privacy.Relation {
	if k := KindOf(s); k != nil {
		return k.Relation()
	}
	return privacy.RelationRecord
}

// Kind is one kind of job, declared once in its own file with its spec: everything the
// job manager, the reports and the clients know of a kind. The kind's Runner steps
// (plan, run) are curator-side and live with the data they need (package tuning, one
// file per kind); the manager and the reports dispatch through Kind and name no kind.
// Adding a kind is a file with its spec type and its Kind, and in this file a field of
// Spec and a line in the registry (and its runner's line in package tuning).
type Kind interface {
	// Name is the kind's name: its key in a stored spec, the suffix of its ledger
	// charges' kind ("job:" + Name), its word in reports, logs and listings.
	Name() string
	// Has reports whether s is a job of this kind (its settings are set).
	Has(s Spec) bool
	// Relation is the neighbour relation the kind's guarantee is stated for unless a
	// job's plan says otherwise (Plan.Relation).
	Relation() privacy.Relation
	// Forced reports whether s runs even when its plan's forecast says its releases
	// are no better than a uniform pick (false for a kind without forecasts).
	Forced(s Spec) bool
	// Timing is how a modeler's report shows the times of the job's events.
	Timing() Timing
	// Describe is what a report says of s: its grid, its settings and what the
	// modeler may know of its path.
	Describe(s Spec) Description
}

// Timing is how a modeler's report shows the times of a job's events after its first.
type Timing int

const (
	// TimingClock shows the clock time of each event.
	TimingClock Timing = iota
	// TimingElapsed shows the time since the first event (public progress steps).
	TimingElapsed
	// TimingHidden shows no time to the modeler: how long the job took correlates with
	// what its guarantee hides (DP-HyPO's number of runs). The operator sees clock times.
	TimingHidden
)

// Row is one line of a report's table: a label and its value.
type Row struct{ K, V string }

// Description is what a job's report says of its kind's spec.
type Description struct {
	// Grid is the job's hyperparameter grid.
	Grid []hparam.Axis
	// Spec are the job's settings; Path what the modeler may know of its search.
	Spec, Path []Row
	// Notes close the report.
	Notes []string
}

// The registered kinds.
var (
	// KusnerKind is Kusner et al.'s private Bayesian optimisation (KusnerSpec).
	KusnerKind Kind = kusnerKind{}
	// DPHyPOKind is DP-HyPO's adaptive private search (DPHyPOSpec).
	DPHyPOKind Kind = dphypoKind{}
)

// kinds are the registered kinds, in the order listings name them.
var kinds = []Kind{KusnerKind, DPHyPOKind}

// KindOf returns the kind of s, or nil unless exactly one kind is set.
func KindOf(s Spec) Kind {
	var found Kind
	for _, k := range kinds {
		if k.Has(s) {
			if found != nil {
				return nil
			}
			found = k
		}
	}
	return found
}

// Figure writes a number for a report: six significant digits, ∞ and — for NaN.
func Figure(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsNaN(v):
		return "—"
	}
	return fmt.Sprintf("%.6g", v)
}

// evaluatorWords names a job's evaluator for a report.
func evaluatorWords(e string) string {
	if e == "" {
		return "the curator's built-in learner"
	}
	return e
}
