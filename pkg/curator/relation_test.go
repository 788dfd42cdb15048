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
	vendor := ledger.Account{Dataset: "d", Identity: "vendor"}
	// A projection's worth of feature-unit spend (limit 1).
	if _, err := led.Charge(ctx, ledger.Charge{Account: vendor, Key: "projection/x", Kind: "projection",
		Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.5}}); err != nil {
		t.Fatal(err)
	}
	_, bal, err := c.Query(ctx, "vendor", []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if bal.Relation != ledger.RelationFeatureUnit || bal.Spent.Epsilon != 1 {
		t.Errorf("Query balance = %s spent %g, want feature-unit spent 0.5 + 0.5", bal.Relation, bal.Spent.Epsilon)
	}
	if rec, _ := c.Balance(ctx, "vendor", ledger.RelationRecord); rec.Spent.Epsilon != 0.5 {
		t.Errorf("record spent = %g, want 0.5", rec.Spent.Epsilon)
	}
	// The record budget has 0.5 left, the feature-unit budget none: refused early.
	_, _, err = c.Query(ctx, "vendor", []int{3})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || be.Relation != ledger.RelationFeatureUnit {
		t.Fatalf("query with the feature-unit budget spent: %v, want a feature-unit BudgetError", err)
	}
	if _, ok, err := led.Get(ctx, ledger.Account{Dataset: "d", Identity: CuratorIdentity}, evaluationKey(3)); err != nil || ok {
		t.Errorf("row 3 evaluated (%v, %v) for a query refused early", ok, err)
	}
}
