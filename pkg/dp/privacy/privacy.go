// Package privacy holds the vocabulary every private release of privbo is stated
// in: a cost (ε, δ), the neighbour relation it is stated for, and the whole-patient
// (record-level) cost it converts to. Algorithms (projection, the tuning jobs,
// Kusner et al., DP-HyPO) state their guarantees in these types; the ledger
// (package ledger) records and sums them. Neither needs the other: this package
// imports nothing of privbo but the group-privacy arithmetic of package dp.
//
// Composition. Under basic composition the costs of releases stated under one
// relation add up, component by component (Dwork & Roth 2014, Theorem 3.16). Costs
// stated under different relations never add into one sum: a guarantee holds only
// for pairs of datasets that are neighbours under its own relation. What a release
// costs one whole patient is converted, release by release, into the record
// relation (PatientCost), where the figures do compose.
package privacy

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
)

// Cost is a privacy cost (ε, δ), stated under a neighbour relation (see
// Relation). Under basic composition the costs of releases under one relation
// add up, component by component.
type Cost struct {
	Epsilon, Delta float64
}

// Validate reports whether c is a cost a ledger may record: both components
// finite and non-negative, and δ < 1. A zero cost is valid; it makes a durable,
// idempotent record that spends nothing.
func (c Cost) Validate() error {
	switch {
	case math.IsNaN(c.Epsilon) || math.IsInf(c.Epsilon, 0):
		return fmt.Errorf("privacy: cost epsilon must be finite, got %g", c.Epsilon)
	case c.Epsilon < 0:
		return fmt.Errorf("privacy: cost epsilon must be non-negative, got %g", c.Epsilon)
	case math.IsNaN(c.Delta) || math.IsInf(c.Delta, 0):
		return fmt.Errorf("privacy: cost delta must be finite, got %g", c.Delta)
	case c.Delta < 0:
		return fmt.Errorf("privacy: cost delta must be non-negative, got %g", c.Delta)
	case c.Delta >= 1:
		return fmt.Errorf("privacy: cost delta must be below 1, got %g", c.Delta)
	}
	return nil
}

// IsZero reports whether c spends nothing.
func (c Cost) IsZero() bool { return c.Epsilon == 0 && c.Delta == 0 }

// Relation names the neighbour relation a cost (ε, δ) is stated for. A guarantee
// holds for pairs of datasets that are neighbours under its own relation only, so
// totals and limits are kept per relation and costs stated under different
// relations are never added into one sum.
type Relation string

// The relations privbo's releases are stated for.
const (
	// RelationFeatureUnit: the datasets differ in one record's feature vector by
	// at most one protected unit of Euclidean norm after the dataset's public (or
	// privately estimated) scaling and clipping. The projection release.
	RelationFeatureUnit Relation = "feature-unit"
	// RelationRecord: one record of the served dataset is replaced by any other
	// (features and target alike). Query answers, and the private estimates of
	// the scaling and of the target's range.
	RelationRecord Relation = "record"
	// RelationTrainingAddRemove: one record is added to or removed from a job's
	// training data. DP-HyPO's DP-SGD runs.
	RelationTrainingAddRemove Relation = "training-add-remove"
	// RelationValidationRecord: one record of a job's validation data is
	// replaced by any other. Kusner et al.'s private best hyperparameter and
	// score.
	RelationValidationRecord Relation = "validation-record"
)

// Relations lists the known relations in a fixed order (for listings).
var Relations = []Relation{RelationFeatureUnit, RelationRecord, RelationTrainingAddRemove, RelationValidationRecord}

// Validate reports whether r is a known relation.
func (r Relation) Validate() error {
	for _, k := range Relations {
		if r == k {
			return nil
		}
	}
	return fmt.Errorf("privacy: unknown neighbour relation %q (want one of %v)", string(r), Relations)
}

// Implies reports whether a guarantee stated under r also holds, with the same
// (ε, δ), under s: every pair of neighbours under s is a pair of neighbours
// under r. A record-level guarantee covers a change of one feature vector by
// one unit (that change replaces one record), so a charge under
// RelationRecord also counts towards RelationFeatureUnit's totals. No other
// relation implies another with the same (ε, δ): add/remove and replace-one
// differ, and a job's training and validation parts are parts of the same
// patients' records, which a guarantee for one part does not cover for the
// other. What every release costs a whole patient is converted explicitly,
// release by release, into one relation (PatientCost), and summed there.
func (r Relation) Implies(s Relation) bool {
	return r == s || (r == RelationRecord && s == RelationFeatureUnit)
}

// CountsTowards returns the relations whose totals a charge under r counts
// towards, and so whose limits it must fit: r itself first, then every other
// relation r implies, in the order of Relations.
func (r Relation) CountsTowards() []Relation {
	out := []Relation{r}
	for _, s := range Relations {
		if s != r && r.Implies(s) {
			out = append(out, s)
		}
	}
	return out
}

// PatientCost is the whole-patient (record-level) cost of a release: the (ε, δ)
// for which the release is differentially private when one patient's record is
// replaced by any other (RelationRecord), converted from the relation its own
// Cost is stated for. It is what a privacy officer adds up: every release's
// figure is a guarantee under the same relation, so they compose, which the
// per-relation costs never do.
type PatientCost struct {
	Epsilon, Delta float64
	// Rho > 0 states that the release is also Rho-zCDP for the replacement of one
	// record (Bun & Steinke 2016), as the Gaussian projection is (ρ at the clip
	// diameter); Epsilon and Delta are then its conversion at Delta. A ledger
	// keeps Σρ of such charges beside the (ε, δ) totals.
	Rho float64
	// Unbounded says that no finite figure exists: the release protects one unit,
	// one training record or one validation record, but replacing a whole patient
	// can reveal anything (a projection under a data-dependent scaling or the lifted
	// mechanism, an exact answer, a tuning job that trains on records without any
	// mechanism). Epsilon, Delta and Rho are then 0.
	Unbounded bool
}

// Validate reports whether p is a whole-patient cost a ledger may record:
// finite, non-negative components with δ < 1, or Unbounded with no others.
func (p PatientCost) Validate() error {
	if p.Unbounded {
		if p.Epsilon != 0 || p.Delta != 0 || p.Rho != 0 {
			return fmt.Errorf("privacy: an unbounded whole-patient cost has no ε, δ or ρ, got %+v", p)
		}
		return nil
	}
	if err := (Cost{Epsilon: p.Epsilon, Delta: p.Delta}).Validate(); err != nil {
		return fmt.Errorf("privacy: whole-patient cost: %w", err)
	}
	if math.IsNaN(p.Rho) || math.IsInf(p.Rho, 0) || p.Rho < 0 {
		return fmt.Errorf("privacy: whole-patient ρ must be finite and ≥ 0, got %g", p.Rho)
	}
	return nil
}

// Cost returns p's (ε, δ); +Inf for ε when p is Unbounded.
func (p PatientCost) Cost() Cost {
	if p.Unbounded {
		return Cost{Epsilon: math.Inf(1)}
	}
	return Cost{Epsilon: p.Epsilon, Delta: p.Delta}
}

// String prints p for people: "ε=134, δ=1e-05" or "not bounded".
func (p PatientCost) String() string {
	if p.Unbounded {
		return "not bounded"
	}
	return fmt.Sprintf("ε=%g, δ=%g", p.Epsilon, p.Delta)
}

// Unbounded is the PatientCost of a release with no finite whole-patient figure.
var Unbounded = PatientCost{Unbounded: true}

// DefaultPatientCost is the whole-patient cost of a release of cost c under rel
// when the release states none:
//
//   - RelationRecord: c itself (the relation is the replacement of a whole record).
//   - RelationTrainingAddRemove: replacing a record is removing it and adding
//     another, two steps, so group privacy for two steps, (2ε, (1 + e^ε)δ)
//     (dp.GroupPrivacy); unbounded when that δ reaches 1. A release with a Rényi
//     curve states a tighter figure itself (dp.RDPCurve.GroupOfTwo).
//   - RelationValidationRecord: unbounded. The relation covers the records of a
//     job's validation part; what the job does with its training part is not
//     stated by the relation (Kusner et al.'s jobs train on it with no mechanism),
//     so a release covering it too states so itself.
//   - RelationFeatureUnit: unbounded. What a patient's replacement moves in
//     protected units (the clip diameter) is the releaser's to state.
func DefaultPatientCost(rel Relation, c Cost) PatientCost {
	switch rel {
	case RelationRecord:
		return PatientCost{Epsilon: c.Epsilon, Delta: c.Delta}
	case RelationTrainingAddRemove:
		e, d, err := dp.GroupPrivacy(c.Epsilon, c.Delta, 2)
		if err != nil || d >= 1 || math.IsInf(e, 0) {
			return Unbounded
		}
		return PatientCost{Epsilon: e, Delta: d}
	}
	return Unbounded
}
