package ledgertest

import (
	"errors"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// testFreeCharges: a record that spends nothing (a paid identity's query answer)
// is written without the limits' check, so it must behave as if checked: it
// starts totals where there are none, fits when the budget is spent and when a
// live reservation holds the rest, keeps every total consistent, and a zero-cost
// record whose whole-patient cost is not bounded is still checked against the
// caps.
func testFreeCharges(t *testing.T, loc Location) {
	s := loc(t)(t, PatientLimits)
	free := func(key string) ledger.Charge {
		return ledger.Charge{Account: acme, Key: key, Kind: "query", Relation: ledger.RelationRecord, Result: []byte(key)}
	}
	if r := MustCharge(t, s, free("query/0")); r.Replayed || string(r.Result) != "query/0" {
		t.Errorf("first free record: receipt %+v, want a new record holding its result", r)
	}
	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Charges != 1 || b.Spent != (ledger.Cost{}) {
		t.Errorf("after one free record: %d charges, spent %+v; want 1 and nothing", b.Charges, b.Spent)
	}
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "query-answers", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 9}})
	MustReserve(t, s, ledger.Hold{}, ledger.Charge{Account: acme, Key: "projection", Kind: "projection", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1}})
	if _, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "paid", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.01}}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("a paid charge past what is spent and reserved: error = %v, want ErrBudgetExceeded", err)
	}
	for _, k := range []string{"query/1", "query/2"} {
		MustCharge(t, s, free(k))
	}
	if r := MustCharge(t, s, free("query/1")); !r.Replayed {
		t.Errorf("a free record charged again: Replayed = false, want true")
	}
	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Charges != 4 || b.Spent != (ledger.Cost{Epsilon: 9}) {
		t.Errorf("after the free records: %d charges, spent %+v; want 4 and ε=9", b.Charges, b.Spent)
	}
	if pb := mustPatient(t, s, acme); pb.IdentityTotal.Charges != 4 || pb.DatasetTotal.Charges != 4 {
		t.Errorf("whole-patient charges: identity %d, dataset %d; want 4 and 4", pb.IdentityTotal.Charges, pb.DatasetTotal.Charges)
	}
	exact := free("query/3")
	exact.Patient = &ledger.Unbounded
	if _, err := s.Charge(ctx, exact); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("a zero-cost record without a whole-patient bound under a cap: error = %v, want ErrBudgetExceeded", err)
	}
	mustVerify(t, s, "diabetes")
}
