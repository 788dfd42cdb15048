package privacy

import (
	"math"
	"testing"
)

// TestGuaranteeText pins the three shapes of a guarantee's text, as the curator
// states them (its tests pin the whole statements).
func TestGuaranteeText(t *testing.T) {
	holds := Guarantee{Mechanism: "m", Epsilon: 1, Delta: 1e-5, Relation: RelationRecord, Neighbours: "one record replaced by any other",
		Method: "the value plus noise", Reference: "Someone 2020"}
	broken := Guarantee{Mechanism: "b", Epsilon: 2, Delta: 1e-6, Relation: RelationFeatureUnit, Reference: "Paper 2020, Algorithm 1",
		Claim: "as claimed by its Theorem 1", Broken: "it adds no noise"}
	none := Guarantee{Mechanism: "x", Epsilon: math.Inf(1), None: true, Method: "exact answers", Claim: "output privacy x, the operator's explicit choice"}
	for _, tt := range []struct {
		g             Guarantee
		text, summary string
		holds         bool
	}{
		{holds, "(ε=1, δ=1e-05)-DP under the record neighbour relation (one record replaced by any other): mechanism m, the value plus noise (Someone 2020)",
			"mechanism m, (ε, δ)-DP at the (ε, δ) of each request under the record neighbour relation,", true},
		{broken, "mechanism b (Paper 2020, Algorithm 1): (ε=2, δ=1e-06) under the feature-unit neighbour relation as claimed by its Theorem 1, which does not hold: it adds no noise",
			"mechanism b (Paper 2020, Algorithm 1), whose claimed (ε, δ) under the feature-unit neighbour relation does not hold;", false},
		{none, "no guarantee (ε = ∞): exact answers (output privacy x, the operator's explicit choice)",
			"no guarantee (ε = ∞): exact answers (output privacy x, the operator's explicit choice);", false},
	} {
		if got := tt.g.String(); got != tt.text {
			t.Errorf("String() = %q, want %q", got, tt.text)
		}
		if got := tt.g.Summary(); got != tt.summary {
			t.Errorf("Summary() = %q, want %q", got, tt.summary)
		}
		if tt.g.Holds() != tt.holds {
			t.Errorf("%s: Holds() = %v, want %v", tt.g.Mechanism, tt.g.Holds(), tt.holds)
		}
	}
}
