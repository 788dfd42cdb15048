package ledger

import (
	"strings"

	"github.com/privbo/privbo/pkg/dp/privacy"
)

// Relation names the neighbour relation a charge's (ε, δ) is stated for
// (privacy.Relation). The ledger keeps totals and enforces limits per relation
// and never adds costs stated under different relations into one sum.
type Relation = privacy.Relation

// The relations privbo's releases are stated for (package privacy).
const (
	RelationFeatureUnit       = privacy.RelationFeatureUnit
	RelationRecord            = privacy.RelationRecord
	RelationTrainingAddRemove = privacy.RelationTrainingAddRemove
	RelationValidationRecord  = privacy.RelationValidationRecord
)

// Relations lists the known relations in a fixed order (for listings).
var Relations = privacy.Relations

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
		return v1JobRelation(strings.TrimPrefix(kind, KindJobPrefix))
	}
	return RelationRecord
}

// v1JobRelation is the relation of a job record of schema version 1, from the job
// kind it names: the kinds such curators wrote were Kusner et al. (2015)'s private
// best hyperparameter and score, for one record of the job's validation data
// replaced, and DP-HyPO (Wang et al. 2023)'s DP-SGD runs, for one training record
// added or removed. Any other kind is taken to be a record-level release of the
// served dataset, the conservative choice. This is a fixed table of history: a
// new charge states its relation itself (a job kind declares its own, see package
// jobs).
func v1JobRelation(jobKind string) Relation {
	switch {
	case strings.HasPrefix(jobKind, "kusner"):
		return RelationValidationRecord
	case strings.HasPrefix(jobKind, "dphypo"):
		return RelationTrainingAddRemove
	}
	return RelationRecord
}
