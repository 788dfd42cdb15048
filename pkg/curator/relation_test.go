package curator

import (
	"context"
	"errors"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// TestQuerySpendsFeatureUnitBudget checks that the early budget check of a query,
// a record-level release, also checks the feature-unit budget it counts towards,
// and that a query reports the feature-unit balance, which binds it.
func TestQuerySpendsFeatureUnitBudget(t *testing.T) {
	ctx := context.Background()
	c, led, _ := testCuratorOutput(t, Evaluation{}, OutputPrivacy{Mechanism: "laplace", Epsilon: 0.25, Lower: 0, Upper: 100})
	project := func(identity string, eps float64) {
		t.Helper()
		if _, err := led.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "d", Identity: identity}, Key: "projection/x", Kind: "projection",
			Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: eps}}); err != nil {
			t.Fatal(err)
		}
	}
	// A projection's worth of feature-unit spend (limit 1), then the answers' one charge.
	project("vendor", 0.5)
	_, bal, err := c.Query(ctx, "vendor", []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if bal.Relation != ledger.RelationFeatureUnit || bal.Spent.Epsilon != 0.75 {
		t.Errorf("Query balance = %s spent %g, want feature-unit spent 0.5 + 0.25", bal.Relation, bal.Spent.Epsilon)
	}
	if rec, _ := c.Balance(ctx, "vendor", ledger.RelationRecord); rec.Spent.Epsilon != 0.25 {
		t.Errorf("record spent = %g, want 0.25", rec.Spent.Epsilon)
	}
	// Another identity, after a projection of 0.1: the dataset's feature-unit total
	// (0.85) cannot take the answers' 0.25, its record total (0.25) could. Refused
	// early under feature-unit, nothing evaluated.
	project("other", 0.1)
	_, _, err = c.Query(ctx, "other", []int{3})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || be.Relation != ledger.RelationFeatureUnit {
		t.Fatalf("query with the feature-unit budget spent: %v, want a feature-unit BudgetError", err)
	}
	if _, ok, err := led.Get(ctx, ledger.Account{Dataset: "d", Identity: CuratorIdentity}, evaluationKey(3)); err != nil || ok {
		t.Errorf("row 3 evaluated (%v, %v) for a query refused early", ok, err)
	}
}
