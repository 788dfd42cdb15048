package ledgertest

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// preCharge is a charge made before a budgetCase's request.
type preCharge struct {
	identity string
	cost     ledger.Cost
	rel      ledger.Relation // RelationRecord if empty
}

// budgetCase is a refusal of testBudgetExceeded.
type budgetCase struct {
	name   string
	limits ledger.Limits
	pre    []preCharge
	req    ledger.Charge
	want   ledger.BudgetError
	text   string
}

func testBudgetExceeded(t *testing.T, loc Location) {
	tests := []budgetCase{
		{
			name:   "identity",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-3}},
			pre:    []preCharge{{"acme", ledger.Cost{Epsilon: 0.5, Delta: 1e-5}, ""}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-5}},
			want:   ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: acme, Relation: ledger.RelationRecord, Requested: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Remaining: ledger.Cost{Epsilon: 0.5, Delta: 0}},
			text:   `ledger: budget exceeded for identity "acme" on dataset "diabetes" under the record neighbour relation: requested ε=1, δ=1e-05; remaining ε=0.5, δ=0`,
		},
		{
			name:   "identity delta only",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-3}},
			pre:    []preCharge{{"acme", ledger.Cost{Epsilon: 0.25, Delta: 1e-5}, ""}, {"globex", ledger.Cost{Epsilon: 0.5, Delta: 0}, ""}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.125, Delta: 1e-9}},
			want:   ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: acme, Relation: ledger.RelationRecord, Requested: ledger.Cost{Epsilon: 0.125, Delta: 1e-9}, Remaining: ledger.Cost{Epsilon: 0.75, Delta: 0}},
		},
		{
			name:   "dataset",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1.5, Delta: 1e-4}},
			pre:    []preCharge{{"alice", ledger.Cost{Epsilon: 1, Delta: 0}, ""}, {"bob", ledger.Cost{Epsilon: 0.25, Delta: 0}, ""}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}},
			want:   ledger.BudgetError{Scope: ledger.ScopeDataset, Account: acme, Relation: ledger.RelationRecord, Requested: ledger.Cost{Epsilon: 0.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0.25, Delta: 1e-4}},
			text:   `ledger: budget exceeded for dataset "diabetes" (charge by identity "acme") under the record neighbour relation: requested ε=0.5, δ=0; remaining ε=0.25, δ=0.0001`,
		},
		{
			name:   "both, identity reported",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-4}},
			pre:    []preCharge{{"acme", ledger.Cost{Epsilon: 0.75, Delta: 0}, ""}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}},
			want:   ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: acme, Relation: ledger.RelationRecord, Requested: ledger.Cost{Epsilon: 0.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0.25, Delta: 1e-5}},
		},
		{
			// The record budget has room (nothing spent under it), but a
			// record-level charge also spends feature-unit budget.
			name:   "record charge, feature-unit identity budget",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-3}},
			pre:    []preCharge{{"acme", ledger.Cost{Epsilon: 0.75, Delta: 0}, ledger.RelationFeatureUnit}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}},
			want:   ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: acme, Relation: ledger.RelationFeatureUnit, Requested: ledger.Cost{Epsilon: 0.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0.25, Delta: 1e-5}},
			text:   `ledger: budget exceeded for identity "acme" on dataset "diabetes" under the feature-unit neighbour relation: requested ε=0.5, δ=0; remaining ε=0.25, δ=1e-05`,
		},
		{
			// The record total of the dataset is 1, its feature-unit total 1.25.
			name:   "record charge, feature-unit dataset budget",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1.5, Delta: 1e-4}},
			pre:    []preCharge{{"alice", ledger.Cost{Epsilon: 1, Delta: 0}, ledger.RelationRecord}, {"bob", ledger.Cost{Epsilon: 0.25, Delta: 0}, ledger.RelationFeatureUnit}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}},
			want:   ledger.BudgetError{Scope: ledger.ScopeDataset, Account: acme, Relation: ledger.RelationFeatureUnit, Requested: ledger.Cost{Epsilon: 0.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0.25, Delta: 1e-4}},
		},
		{
			name:   "job relation",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-3}},
			pre:    []preCharge{{"acme", ledger.Cost{Epsilon: 0.75, Delta: 0}, ledger.RelationTrainingAddRemove}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}},
			want:   ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: acme, Relation: ledger.RelationTrainingAddRemove, Requested: ledger.Cost{Epsilon: 0.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0.25, Delta: 1e-5}},
			text:   `ledger: budget exceeded for identity "acme" on dataset "diabetes" under the training-add-remove neighbour relation: requested ε=0.5, δ=0; remaining ε=0.25, δ=1e-05`,
		},
		{
			// A δ limit of zero refuses every charge needing δ, with nothing
			// spent: the message must say so, not read like a spent budget.
			name:   "zero delta limit",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 0}, Dataset: ledger.Cost{Epsilon: 10, Delta: 0}},
			req:    ledger.Charge{Account: acme, Key: "k", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}},
			want:   ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: acme, Relation: ledger.RelationFeatureUnit, Requested: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}, Remaining: ledger.Cost{Epsilon: 1, Delta: 0}},
			text: `ledger: refused for identity "acme" on dataset "diabetes" under the feature-unit neighbour relation: the release needs δ=1e-06 ` +
				`but the curator's per-identity δ budget is 0, so no release that needs δ > 0 (the Gaussian mechanism) can ever be made; ` +
				`this is not a spent budget: the curator's operator must configure a δ budget above 0`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkRefused(t, loc, tt) })
	}
}

// checkRefused charges tt.pre, then tt.req, which must be refused as tt says,
// writing nothing, while a charge of the reported remainder fits.
func checkRefused(t *testing.T, loc Location, tt budgetCase) {
	s := loc(t)(t, tt.limits)
	for i, p := range tt.pre {
		rel := p.rel
		if rel == "" {
			rel = ledger.RelationRecord
		}
		MustCharge(t, s, ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: p.identity}, Key: fmt.Sprint("pre-", i), Kind: "pre", Relation: rel, Cost: p.cost})
	}
	before := mustBalances(t, s, tt.req.Account)
	_, err := s.Charge(ctx, tt.req)
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("Charge error = %v, want a *BudgetError", err)
	}
	// The refusal names its scope's limit.
	tt.want.Limit = tt.limits.PerIdentity
	if tt.want.Scope == ledger.ScopeDataset {
		tt.want.Limit = tt.limits.Dataset
	}
	if *be != tt.want {
		t.Errorf("BudgetError = %+v, want %+v", *be, tt.want)
	}
	if tt.text != "" && err.Error() != tt.text {
		t.Errorf("Error() = %s, want %s", err, tt.text)
	}
	// Nothing written.
	if _, found, err := s.Get(ctx, tt.req.Account, tt.req.Key); err != nil || found {
		t.Errorf("Get(refused key) = %v, %v, want not found", found, err)
	}
	if n := len(mustEntries(t, s, "diabetes")); n != len(tt.pre) {
		t.Errorf("len(Entries) = %d, want %d", n, len(tt.pre))
	}
	if after := mustBalances(t, s, tt.req.Account); after != before {
		t.Errorf("Balances after refusal = %+v, want %+v", after, before)
	}
	// Exactly the reported remainder fits (where it is positive in both components or zero-cost components).
	rem := ledger.Cost{Epsilon: math.Min(tt.req.Cost.Epsilon, be.Remaining.Epsilon), Delta: math.Min(tt.req.Cost.Delta, be.Remaining.Delta)}
	fit := tt.req
	fit.Key, fit.Cost = "fit", rem
	if _, err := s.Charge(ctx, fit); err != nil {
		t.Errorf("Charge(%+v) within the reported remainder: %v", rem, err)
	}
}
