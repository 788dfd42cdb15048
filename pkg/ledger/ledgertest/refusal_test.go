package ledgertest

import (
	"errors"
	"fmt"
	"math"
	"strings"
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

// testRelations charges releases under every relation: no relation's totals
// see another's charges, except that record-level charges count towards the
// feature-unit totals (and not the other way).
func testRelations(t *testing.T, loc Location) {
	open := loc(t)
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1.5, Delta: 1e-4}}
	s := open(t, limits)
	acme, globex := ledger.Account{Dataset: "rel", Identity: "acme"}, ledger.Account{Dataset: "rel", Identity: "globex"}
	type step struct {
		a     ledger.Account
		key   string
		rel   ledger.Relation
		eps   float64
		scope string          // "" if the charge must be accepted
		on    ledger.Relation // the relation whose budget refuses it
	}
	for _, st := range []step{
		{acme, "p1", ledger.RelationFeatureUnit, 0.75, "", ""},
		// Fits the record budget (empty) and the feature-unit budget (0.75 + 0.25 = 1).
		{acme, "q1", ledger.RelationRecord, 0.25, "", ""},
		// The record budget has 0.75 left, but the feature-unit budget is spent.
		{acme, "q2", ledger.RelationRecord, 0.125, ledger.ScopeIdentity, ledger.RelationFeatureUnit},
		{acme, "p2", ledger.RelationFeatureUnit, 0.125, ledger.ScopeIdentity, ledger.RelationFeatureUnit},
		// The job relations see neither the feature-unit nor the record spend.
		{acme, "j1", ledger.RelationTrainingAddRemove, 1, "", ""},
		{acme, "k1", ledger.RelationValidationRecord, 1, "", ""},
		{acme, "k2", ledger.RelationValidationRecord, 0.125, ledger.ScopeIdentity, ledger.RelationValidationRecord},
		// Dataset: feature-unit 1 + 0.5 = 1.5 fits.
		{globex, "p", ledger.RelationFeatureUnit, 0.5, "", ""},
		// Dataset record total 0.25 leaves room, the feature-unit total none.
		{globex, "q", ledger.RelationRecord, 0.125, ledger.ScopeDataset, ledger.RelationFeatureUnit},
		{globex, "j", ledger.RelationTrainingAddRemove, 0.5, "", ""},
		{globex, "j2", ledger.RelationTrainingAddRemove, 0.125, ledger.ScopeDataset, ledger.RelationTrainingAddRemove},
		{globex, "k", ledger.RelationValidationRecord, 0.5, "", ""},
	} {
		c := ledger.Charge{Account: st.a, Key: st.key, Kind: "k-" + string(st.rel), Relation: st.rel, Cost: ledger.Cost{Epsilon: st.eps, Delta: 0}}
		r, err := s.Charge(ctx, c)
		var be *ledger.BudgetError
		switch {
		case st.scope == "" && (err != nil || r.Replayed || r.Relation != st.rel):
			t.Errorf("Charge(%s/%s, %s, ε=%g) = relation %s, replayed %v, %v; want a new %s record", st.a.Identity, st.key, st.rel, st.eps, r.Relation, r.Replayed, err, st.rel)
		case st.scope != "" && (!errors.As(err, &be) || be.Scope != st.scope || be.Relation != st.on):
			t.Errorf("Charge(%s/%s, %s, ε=%g) error = %v, want a %s BudgetError under %s", st.a.Identity, st.key, st.rel, st.eps, err, st.scope, st.on)
		case st.scope != "" && !strings.Contains(err.Error(), "the "+string(st.on)+" neighbour relation"):
			t.Errorf("Charge(%s/%s) error %q does not name the %s relation", st.a.Identity, st.key, err, st.on)
		}
	}

	type want struct {
		a              ledger.Account
		rel            ledger.Relation
		spent, dsSpent float64
		charges        int
	}
	wants := []want{
		{acme, ledger.RelationFeatureUnit, 1, 1.5, 2},
		{acme, ledger.RelationRecord, 0.25, 0.25, 1},
		{acme, ledger.RelationTrainingAddRemove, 1, 1.5, 1},
		{acme, ledger.RelationValidationRecord, 1, 1.5, 1},
		{globex, ledger.RelationFeatureUnit, 0.5, 1.5, 1},
		{globex, ledger.RelationTrainingAddRemove, 0.5, 1.5, 1},
		{globex, ledger.RelationValidationRecord, 0.5, 1.5, 1},
	}
	toBalance := func(w want) ledger.Balance {
		return ledger.Balance{Account: w.a, Relation: w.rel, Spent: ledger.Cost{Epsilon: w.spent, Delta: 0}, Remaining: ledger.Cost{Epsilon: 1 - w.spent, Delta: 1e-5},
			DatasetSpent: ledger.Cost{Epsilon: w.dsSpent, Delta: 0}, DatasetRemaining: ledger.Cost{Epsilon: 1.5 - w.dsSpent, Delta: 1e-4}, Charges: w.charges, Limits: limits}
	}
	for _, w := range wants {
		if got := MustBalance(t, s, w.a, w.rel); got != toBalance(w) {
			t.Errorf("Balance(%s, %s) = %+v, want %+v", w.a.Identity, w.rel, got, toBalance(w))
		}
	}
	// globex has no record-level charge; its record balance is empty but
	// shows the dataset's record total, which excludes the feature-unit spend.
	if got, w := MustBalance(t, s, globex, ledger.RelationRecord), toBalance(want{globex, ledger.RelationRecord, 0, 0.25, 0}); got != w {
		t.Errorf("Balance(globex, record) = %+v, want %+v", got, w)
	}
	accs, err := s.Accounts(ctx, "rel")
	if err != nil {
		t.Fatalf("Accounts error: %v", err)
	}
	if len(accs) != len(wants) {
		t.Errorf("Accounts = %d balances, want %d: %+v", len(accs), len(wants), accs)
	}
	for i := range min(len(accs), len(wants)) {
		if accs[i] != toBalance(wants[i]) {
			t.Errorf("Accounts[%d] = %+v, want %+v", i, accs[i], toBalance(wants[i]))
		}
	}
	checkRelationViews(t, s, limits, acme)
}

// checkRelationViews checks the dataset totals, the entries and the replays
// after the charges of testRelations.
func checkRelationViews(t *testing.T, s *ledger.Ledger, limits ledger.Limits, acme ledger.Account) {
	tots, err := s.DatasetTotals(ctx, "rel")
	if err != nil {
		t.Fatalf("DatasetTotals error: %v", err)
	}
	wantTots := []ledger.DatasetBalance{
		{Dataset: "rel", Relation: ledger.RelationFeatureUnit, Spent: ledger.Cost{Epsilon: 1.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0, Delta: 1e-4}, Charges: 3, Limits: limits},
		{Dataset: "rel", Relation: ledger.RelationRecord, Spent: ledger.Cost{Epsilon: 0.25, Delta: 0}, Remaining: ledger.Cost{Epsilon: 1.25, Delta: 1e-4}, Charges: 1, Limits: limits},
		{Dataset: "rel", Relation: ledger.RelationTrainingAddRemove, Spent: ledger.Cost{Epsilon: 1.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0, Delta: 1e-4}, Charges: 2, Limits: limits},
		{Dataset: "rel", Relation: ledger.RelationValidationRecord, Spent: ledger.Cost{Epsilon: 1.5, Delta: 0}, Remaining: ledger.Cost{Epsilon: 0, Delta: 1e-4}, Charges: 2, Limits: limits},
	}
	if fmt.Sprint(tots) != fmt.Sprint(wantTots) {
		t.Errorf("DatasetTotals = %+v, want %+v", tots, wantTots)
	}
	if tots, err := s.DatasetTotals(ctx, "empty"); err != nil || len(tots) != 0 {
		t.Errorf("DatasetTotals(empty) = %+v, %v, want none", tots, err)
	}

	// Entries carry their relation; refused charges wrote nothing.
	es := mustEntries(t, s, "rel")
	var got []string
	for _, e := range es {
		got = append(got, e.Identity+"/"+e.Key+"/"+string(e.Relation))
	}
	wantEs := "acme/p1/feature-unit acme/q1/record acme/j1/training-add-remove acme/k1/validation-record " +
		"globex/p/feature-unit globex/j/training-add-remove globex/k/validation-record"
	if strings.Join(got, " ") != wantEs {
		t.Errorf("Entries = %s, want %s", strings.Join(got, " "), wantEs)
	}

	// A replay spends nothing, even with every budget it counts towards
	// spent; a replay under another relation (even an implied one) conflicts.
	q1 := ledger.Charge{Account: acme, Key: "q1", Kind: "k-record", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25, Delta: 0}}
	if r, err := s.Charge(ctx, q1); err != nil || !r.Replayed || r.Relation != ledger.RelationRecord {
		t.Errorf("replay of q1 = relation %s, replayed %v, %v; want the stored record receipt", r.Relation, r.Replayed, err)
	}
	q1.Relation = ledger.RelationFeatureUnit
	if _, err := s.Charge(ctx, q1); !errors.Is(err, ledger.ErrKeyConflict) {
		t.Errorf("replay of q1 under feature-unit error = %v, want ErrKeyConflict", err)
	}
	if r, found, err := s.Get(ctx, acme, "j1"); err != nil || !found || r.Relation != ledger.RelationTrainingAddRemove {
		t.Errorf("Get(j1) = relation %s, %v, %v; want training-add-remove", r.Relation, found, err)
	}
	if n := len(mustEntries(t, s, "rel")); n != len(es) {
		t.Errorf("after replays len(Entries) = %d, want %d", n, len(es))
	}
}
