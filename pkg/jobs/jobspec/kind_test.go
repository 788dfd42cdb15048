package jobspec

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKinds: each registered kind is the kind of a spec of its settings alone, named by
// the key its settings are stored under (so stored jobs keep their kind), and a spec of
// no kind or of two has none.
func TestKinds(t *testing.T) {
	specs := []Spec{{Kusner: &KusnerSpec{}}, {DPHyPO: &DPHyPOSpec{}}}
	if len(specs) != len(kinds) {
		t.Fatalf("%d specs for %d registered kinds: add the new kind's", len(specs), len(kinds))
	}
	for i, s := range specs {
		k := KindOf(s)
		b, _ := json.Marshal(s)
		if k != kinds[i] || !strings.HasPrefix(string(b), `{"`+k.Name()+`":`) || s.Kind() != k.Name() {
			t.Errorf("KindOf(%s) = %v; want kind %d, named by its JSON key", b, k, i)
		}
	}
	for _, s := range []Spec{{}, {Kusner: &KusnerSpec{}, DPHyPO: &DPHyPOSpec{}}} {
		if k := KindOf(s); k != nil || s.Kind() != "" || s.Relation() != "record" {
			t.Errorf("KindOf(%+v) = %v, relation %s; want none, record", s, k, s.Relation())
		}
	}
}
