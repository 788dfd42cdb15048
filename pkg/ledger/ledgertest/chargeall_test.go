package ledgertest

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// A study's two charges, as the curator makes them together (ChargeAll): its
// projection under the feature-unit relation and its answers under the record
// relation, which counts towards the feature-unit totals too.
func studyCharges(a ledger.Account, proj, answers ledger.Cost) []ledger.Charge {
	return []ledger.Charge{
		{Account: a, Key: "projection/p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: proj, Result: []byte("Z")},
		{Account: a, Key: "query-answers/laplace", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: answers},
	}
}

// chargeAllCase is a batch of testChargeAll.
type chargeAllCase struct {
	name   string
	limits ledger.Limits
	pre    []ledger.Charge // charged one by one before
	batch  []ledger.Charge
	// wantErr: "" for success, "budget" for a *BudgetError of wantScope under
	// wantRel requesting wantReq, or a substring of another error.
	wantErr   string
	wantScope string
	wantRel   ledger.Relation
	wantReq   ledger.Cost
	// wantReplayed marks the receipts that must be replays.
	wantReplayed []bool
}

// testChargeAll checks ChargeAll's all-or-nothing rule: charges that fit one by one
// but not together are refused with nothing written, the limit check runs over their
// exact sum in every relation they count towards (both scopes), charges already
// recorded are replayed on their own while the others are charged, a key conflict or
// a malformed batch writes nothing, and Charge is ChargeAll of one.
func testChargeAll(t *testing.T, loc Location) {
	proj, answers := ledger.Cost{Epsilon: 0.5, Delta: 1e-6}, ledger.Cost{Epsilon: 0.5}
	tests := []chargeAllCase{
		{name: "both fit", limits: StdLimits, batch: studyCharges(acme, proj, answers), wantReplayed: []bool{false, false}},
		{name: "each fits, the sum does not (identity, feature-unit)",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 0.75, Delta: 1e-5}, Dataset: StdLimits.Dataset},
			batch:  studyCharges(acme, proj, answers), wantErr: "budget", wantScope: ledger.ScopeIdentity,
			wantRel: ledger.RelationFeatureUnit, wantReq: ledger.Cost{Epsilon: 1, Delta: 1e-6}},
		{name: "the sum does not fit the dataset cap",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1.25, Delta: 1e-4}},
			pre:    []ledger.Charge{{Account: ledger.Account{Dataset: "diabetes", Identity: "globex"}, Key: "q", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}}},
			batch:  studyCharges(acme, proj, answers), wantErr: "budget", wantScope: ledger.ScopeDataset,
			wantRel: ledger.RelationFeatureUnit, wantReq: ledger.Cost{Epsilon: 1, Delta: 1e-6}},
		{name: "each relation sums only what counts towards it",
			// A job's charge under another relation is not added to the projection's.
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: StdLimits.Dataset},
			batch: append(studyCharges(acme, proj, answers)[:1],
				ledger.Charge{Account: acme, Key: "job/1", Kind: "dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 0.75}}),
			wantReplayed: []bool{false, false}},
		{name: "δ of the sum",
			limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1.5e-6}, Dataset: StdLimits.Dataset},
			batch: append(studyCharges(acme, proj, answers),
				ledger.Charge{Account: acme, Key: "projection/q", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Delta: 1e-6}}),
			wantErr: "budget", wantScope: ledger.ScopeIdentity, wantRel: ledger.RelationFeatureUnit, wantReq: ledger.Cost{Epsilon: 1, Delta: 2e-6}},
		{name: "a recorded charge is replayed, the other charged",
			limits:       ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: StdLimits.Dataset},
			pre:          studyCharges(acme, proj, answers)[1:],
			batch:        studyCharges(acme, proj, answers),
			wantReplayed: []bool{false, true}},
		{name: "a replay costs nothing in the sum",
			// 0.5 + 0.5 already spent would not fit again; only the projection is new.
			limits:       ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-4}},
			pre:          studyCharges(acme, proj, answers)[1:],
			batch:        studyCharges(acme, proj, answers),
			wantReplayed: []bool{false, true}},
		{name: "key conflict writes nothing", limits: StdLimits,
			pre:     []ledger.Charge{{Account: acme, Key: "query-answers/laplace", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25}}},
			batch:   studyCharges(acme, proj, answers),
			wantErr: "already charged"},
		{name: "a key twice", limits: StdLimits,
			batch:   append(studyCharges(acme, proj, answers), studyCharges(acme, proj, answers)[0]),
			wantErr: "charged twice"},
		{name: "two datasets", limits: StdLimits,
			batch:   append(studyCharges(acme, proj, answers)[:1], studyCharges(ledger.Account{Dataset: "other", Identity: "acme"}, proj, answers)[1]),
			wantErr: "one dataset"},
		{name: "an invalid charge", limits: StdLimits,
			batch:   append(studyCharges(acme, proj, answers)[:1], ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: -1}}),
			wantErr: "non-negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkChargeAll(t, loc, tt) })
	}
}

// checkChargeAll charges tt.pre one by one, then tt.batch with ChargeAll, and
// checks the outcome: a refusal as tt says that writes nothing, or the receipts,
// the records, totals equal to their sum, and a second ChargeAll that replays.
func checkChargeAll(t *testing.T, loc Location, tt chargeAllCase) {
	s := loc(t)(t, tt.limits)
	for _, c := range tt.pre {
		MustCharge(t, s, c)
	}
	before := mustEntries(t, s, "diabetes")
	beforeBal := mustBalances(t, s, acme)
	got, err := s.ChargeAll(ctx, tt.batch)
	if tt.wantErr != "" {
		if err == nil {
			t.Fatalf("ChargeAll = %d receipts, want an error", len(got))
		}
		if after := mustEntries(t, s, "diabetes"); len(after) != len(before) {
			t.Errorf("refused ChargeAll left %d entries, want the %d before it", len(after), len(before))
		}
		if after := mustBalances(t, s, acme); after != beforeBal {
			t.Errorf("refused ChargeAll changed the balances: %+v, want %+v", after, beforeBal)
		}
		var be *ledger.BudgetError
		switch {
		case tt.wantErr != "budget":
			if !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ledger.ErrBudgetExceeded) {
				t.Errorf("ChargeAll error = %v, want one containing %q", err, tt.wantErr)
			}
		case !errors.As(err, &be):
			t.Errorf("ChargeAll error = %v, want a BudgetError", err)
		case be.Scope != tt.wantScope || be.Relation != tt.wantRel || be.Requested != tt.wantReq:
			t.Errorf("ChargeAll refused for %s under %s requesting %+v, want %s under %s requesting %+v",
				be.Scope, be.Relation, be.Requested, tt.wantScope, tt.wantRel, tt.wantReq)
		}
		return
	}
	if err != nil {
		t.Fatalf("ChargeAll error: %v", err)
	}
	if len(got) != len(tt.batch) {
		t.Fatalf("ChargeAll = %d receipts, want %d", len(got), len(tt.batch))
	}
	for i, r := range got {
		c := tt.batch[i]
		if r.Account != c.Account || r.Key != c.Key || r.Cost != c.Cost || r.Replayed != tt.wantReplayed[i] {
			t.Errorf("receipt %d = %v/%s %+v replayed %v, want %v/%s %+v replayed %v", i, r.Account, r.Key, r.Cost, r.Replayed,
				c.Account, c.Key, c.Cost, tt.wantReplayed[i])
		}
		stored, ok, err := s.Get(ctx, c.Account, c.Key)
		if err != nil || !ok || diffReceipt(stored, ledger.Receipt{Account: r.Account, Key: r.Key, Kind: r.Kind, Relation: r.Relation,
			Description: r.Description, Cost: r.Cost, Result: r.Result, ResultSize: r.ResultSize, Created: r.Created}) != "" {
			t.Errorf("Get(%s) = %+v, %v, %v; want the receipt %+v", c.Key, stored, ok, err, r)
		}
	}
	// Totals: exactly the sum of the entries, per relation.
	es := mustEntries(t, s, "diabetes")
	for _, rel := range ledger.Relations {
		e, d := new(big.Rat), new(big.Rat)
		for _, x := range es {
			if x.Identity == acme.Identity && x.Relation.Implies(rel) {
				e.Add(e, new(big.Rat).SetFloat64(x.Cost.Epsilon))
				d.Add(d, new(big.Rat).SetFloat64(x.Cost.Delta))
			}
		}
		ef, _ := e.Float64()
		df, _ := d.Float64()
		if b := MustBalance(t, s, acme, rel); b.Spent != (ledger.Cost{Epsilon: ef, Delta: df}) {
			t.Errorf("%s Spent = %+v, the entries counting towards it sum to {%g %g}", rel, b.Spent, ef, df)
		}
	}
	// A second ChargeAll replays both.
	again, err := s.ChargeAll(ctx, tt.batch)
	if err != nil || !again[0].Replayed || !again[1].Replayed {
		t.Errorf("ChargeAll again = %+v, %v; want two replays", again, err)
	}
}

// testChargeAllRace runs studies of several identities at once, each charging its
// projection and its answers with one ChargeAll on a dataset cap with room for
// exactly wins studies (from one or two Ledgers): exactly that many succeed, each with
// both charges, and no loser leaves a charge behind.
func testChargeAllRace(t *testing.T, loc Location, nStores int) {
	const (
		studies = 24
		wins    = 5
	)
	proj, answers := ledger.Cost{Epsilon: 1.0 / 8, Delta: 1.0 / (1 << 30)}, ledger.Cost{Epsilon: 1.0 / 16}
	perStudy := proj.Epsilon + answers.Epsilon
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 0.5},
		Dataset: ledger.Cost{Epsilon: wins*perStudy + perStudy/2, Delta: 0.5}}
	open := loc(t)
	stores := make([]*ledger.Ledger, nStores)
	for i := range stores {
		stores[i] = open(t, limits)
	}
	account := func(i int) ledger.Account {
		return ledger.Account{Dataset: "diabetes", Identity: fmt.Sprintf("vendor%02d", i)}
	}
	errs := make([]error, studies)
	together(studies, func(i int) {
		_, errs[i] = stores[i%nStores].ChargeAll(ctx, studyCharges(account(i), proj, answers))
	})
	won := map[string]bool{}
	for i, err := range errs {
		switch {
		case err == nil:
			won[account(i).Identity] = true
		case !errors.Is(err, ledger.ErrBudgetExceeded):
			t.Errorf("study %d: error %v, want nil or ErrBudgetExceeded", i, err)
		}
	}
	if len(won) != wins {
		t.Errorf("%d studies charged, want exactly %d", len(won), wins)
	}
	es := mustEntries(t, stores[0], "diabetes")
	if len(es) != 2*wins {
		t.Errorf("len(Entries) = %d, want %d (two per study charged)", len(es), 2*wins)
	}
	perIdentity := map[string]int{}
	for _, e := range es {
		perIdentity[e.Identity]++
		if !won[e.Identity] {
			t.Errorf("entry %s of %s, whose study was refused", e.Key, e.Identity)
		}
	}
	for id, n := range perIdentity {
		if n != 2 {
			t.Errorf("identity %s has %d entries, want its projection and answers", id, n)
		}
	}
	eps, _ := exactSpent(es, "")
	want := new(big.Rat).Mul(big.NewRat(wins, 1), new(big.Rat).SetFloat64(perStudy))
	if eps.Cmp(want) != 0 {
		t.Errorf("entries sum to ε=%s, want %s", eps.FloatString(20), want.FloatString(20))
	}
}
