package ledger

import "testing"

func TestRelationOfV1Kind(t *testing.T) {
	for kind, want := range map[string]Relation{
		"projection": RelationFeatureUnit, "query": RelationRecord, "query-failure": RelationRecord,
		"evaluation": RelationRecord, "pending": RelationRecord,
		"job:kusner": RelationValidationRecord, "job:kusner-v2": RelationValidationRecord,
		"job:dphypo": RelationTrainingAddRemove,
		"kusner":     RelationRecord, "Projection": RelationRecord, "job:other": RelationRecord, "": RelationRecord,
	} {
		if got := relationOfV1Kind(kind); got != want {
			t.Errorf("relationOfV1Kind(%q) = %s, want %s", kind, got, want)
		}
	}
}
