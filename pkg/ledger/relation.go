package ledger

import (
	"fmt"
	"strings"
)

// Relation names the neighbour relation a charge's (ε, δ) is stated for. A
// guarantee holds for pairs of datasets that are neighbours under its own
// relation only, so the ledger keeps totals and enforces limits per relation
// and never adds costs stated under different relations into one sum.
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
	return fmt.Errorf("ledger: unknown neighbour relation %q (want one of %v)", string(r), Relations)
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
// charge by charge, into one relation (PatientCost), and summed there.
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

// relationOfV1Kind is the relation a record of schema version 1, which named
// no relation, is taken to be stated for, from its kind: the projection is
// stated for one feature unit, the curator's and the query answers' releases
// for one record, and the jobs for their own data. A kind this code does not
// know is taken to be a record-level release, the conservative choice: it
// then counts towards both the record and the feature-unit budgets.
func relationOfV1Kind(kind string) Relation {
	switch {
	case kind == KindProjection:
		return RelationFeatureUnit
	case kind == KindQuery, kind == KindQueryFailure, kind == KindEvaluation, kind == KindPending:
		return RelationRecord
	case strings.HasPrefix(kind, KindJobPrefix):
		return JobRelation(strings.TrimPrefix(kind, KindJobPrefix))
	}
	return RelationRecord
}

// JobRelation is the neighbour relation a tuning job's cost is stated for, from
// the job's kind: Kusner et al. (2015)'s private best hyperparameter and score,
// for one record of the job's validation data replaced; DP-HyPO (Wang et al.
// 2023)'s DP-SGD runs, for one training record added or removed. Any other kind
// is taken to be a record-level release of the served dataset, the conservative
// choice. New charges and migrated version-1 records use this one mapping.
func JobRelation(jobKind string) Relation {
	switch {
	case strings.HasPrefix(jobKind, "kusner"):
		return RelationValidationRecord
	case strings.HasPrefix(jobKind, "dphypo"):
		return RelationTrainingAddRemove
	}
	return RelationRecord
}
