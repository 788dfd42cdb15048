package ledgertest

import (
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

func testRecordedLimits(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	if _, found, err := s.RecordedLimits(ctx, "diabetes"); err != nil || found {
		t.Fatalf("RecordedLimits before any record = %v, %v; want none", found, err)
	}
	before := time.Now().Add(-time.Second)
	st, err := s.RecordLimits(ctx, "diabetes", false)
	if err != nil || !st.First || st.Previous != nil || st.InForce.Limits != StdLimits || st.InForce.Starts != 1 {
		t.Fatalf("RecordLimits (first start) = %+v, %v; want first, in force %+v", st, err, StdLimits)
	}
	r, found, err := s.RecordedLimits(ctx, "diabetes")
	if err != nil || !found || r.Limits != StdLimits || r.Recorded.Before(before) || r.Confirmed != r.Recorded {
		t.Errorf("RecordedLimits = %+v, %v, %v; want %+v recorded after %v", r, found, err, StdLimits, before)
	}
	// A start with the same limits confirms them.
	if st, err := s.RecordLimits(ctx, "diabetes", false); err != nil || st.First || st.Previous != nil || st.InForce.Starts != 2 ||
		!st.InForce.Recorded.Equal(r.Recorded) || st.InForce.Confirmed.Before(r.Recorded) {
		t.Errorf("RecordLimits (same limits) = %+v, %v; want the limits in force confirmed, 2 starts", st, err)
	}
	// A start with other limits is refused and records nothing, unless it changes them.
	other := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 0.5, Delta: 2e-6}, Dataset: ledger.Cost{Epsilon: 7, Delta: 1e-5},
		Patient: ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 20, Delta: 1e-5}}}
	s2 := open(t, other)
	_, err = s2.RecordLimits(ctx, "diabetes", false)
	var de *ledger.LimitsDifferError
	if !errors.Is(err, ledger.ErrLimitsDiffer) || !errors.As(err, &de) || de.InForce.Limits != StdLimits || de.Configured != other {
		t.Fatalf("RecordLimits (other limits) error = %v, want a *LimitsDifferError naming both", err)
	}
	if h, err := s.LimitsHistory(ctx, "diabetes"); err != nil || len(h) != 1 {
		t.Errorf("LimitsHistory after a refused start = %d entries, %v; want 1", len(h), err)
	}
	// Until the change, a charge by the store opened with the other limits is
	// checked against the limits in force: ε 0.75 fits StdLimits' 1 and not 0.5.
	MustCharge(t, s2, ledger.Charge{Account: acme, Key: "a", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.75}})
	st, err = s2.RecordLimits(ctx, "diabetes", true)
	if err != nil || st.First || st.Previous == nil || st.Previous.Limits != StdLimits || st.InForce.Limits != other {
		t.Fatalf("RecordLimits (change) = %+v, %v; want other in force, StdLimits before", st, err)
	}
	// Now the store opened with StdLimits enforces the new ones, read in the charge's
	// transaction: the identity is already above the lowered ε of 0.5.
	if _, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "b", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.01}}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("Charge over the lowered limit by a store opened with the old ones: error = %v, want ErrBudgetExceeded", err)
	}
	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Limits != other || b.Remaining != (ledger.Cost{Delta: 2e-6}) {
		t.Errorf("Balance after the change = limits %+v, remaining %+v; want the limits in force, ε 0 remaining", b.Limits, b.Remaining)
	}
	h, err := s.LimitsHistory(ctx, "diabetes")
	if err != nil || len(h) != 2 || h[0].Limits != StdLimits || h[1].Limits != other || h[1].Recorded.Before(h[0].Recorded) {
		t.Errorf("LimitsHistory = %+v, %v; want StdLimits then the change", h, err)
	}
	rep, err := s.Report(ctx, "diabetes", other)
	if err != nil || len(rep.Relations) == 0 {
		t.Fatalf("Report: %v", err)
	}
	for _, rr := range rep.Relations {
		for _, row := range rr.Identities {
			if !row.OverLimit {
				t.Errorf("Report under the lowered limit: %s %s not OverLimit (spent %s)", rr.Relation, row.Identity, row.Spent.Epsilon.RatString())
			}
		}
		if rr.Dataset.OverLimit {
			t.Errorf("Report: dataset %s OverLimit at ε %s under a cap of 7", rr.Relation, rr.Dataset.Spent.Epsilon.RatString())
		}
	}
	if _, found, err := s.RecordedLimits(ctx, "diamonds"); err != nil || found {
		t.Errorf("RecordedLimits(other dataset) = %v, %v; want none", found, err)
	}
	if _, err := s.RecordLimits(ctx, "", false); err == nil {
		t.Errorf("RecordLimits(\"\") error = nil, want an error")
	}
}

func testReport(t *testing.T, loc Location) {
	s := loc(t)(t, bigLimits)
	for i, c := range []ledger.Charge{
		{Account: acme, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-6}},
		{Account: acme, Key: "q", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1, Delta: 0}},
		{Account: ledger.Account{Dataset: "diabetes", Identity: "globex"}, Key: "q", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.8, Delta: 0}},
		{Account: acme, Key: "j", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-7}},
	} {
		c.Description = string(rune('a' + i))
		MustCharge(t, s, c)
	}
	// The reader's limits, not the store's: identity ε 2, dataset ε 2.5.
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2.5, Delta: 1e-5}}
	r, err := s.Report(ctx, "diabetes", limits)
	if err != nil {
		t.Fatal(err)
	}
	if r.Limits != limits || len(r.Relations) != 3 {
		t.Fatalf("Report = %+v, want the given limits and 3 relations", r)
	}
	fu := r.Relations[0]
	if fu.Relation != ledger.RelationFeatureUnit || len(fu.Identities) != 2 {
		t.Fatalf("first relation = %+v, want feature-unit with acme and globex", fu)
	}
	eq := func(what string, got *big.Rat, want *big.Rat) {
		t.Helper()
		if got.Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", what, got.RatString(), want.RatString())
		}
	}
	tenth := new(big.Rat).SetFloat64(0.1)
	eight := new(big.Rat).SetFloat64(0.8)
	dsSpent := new(big.Rat).Add(big.NewRat(1, 1), tenth)
	dsSpent.Add(dsSpent, eight)
	eq("feature-unit dataset spent ε", fu.Dataset.Spent.Epsilon, dsSpent)
	dsLeft := new(big.Rat).Sub(big.NewRat(5, 2), dsSpent) // 0.6 − float noise
	eq("feature-unit dataset left ε", fu.Dataset.Left.Epsilon, dsLeft)
	a := fu.Identities[0]
	acmeSpent := new(big.Rat).Add(big.NewRat(1, 1), tenth)
	eq("acme feature-unit spent ε", a.Spent.Epsilon, acmeSpent)
	eq("acme own left ε", a.OwnLeft.Epsilon, new(big.Rat).Sub(big.NewRat(2, 1), acmeSpent))
	// The cap binds: acme's own 0.9 is more than the dataset's 0.6.
	eq("acme left ε (capped)", a.Left.Epsilon, dsLeft)
	eq("acme left δ", a.Left.Delta, new(big.Rat).Sub(new(big.Rat).SetFloat64(1e-5), new(big.Rat).SetFloat64(1e-6)))
	if a.Identity != "acme" || a.Charges != 2 || fu.Identities[1].Identity != "globex" {
		t.Errorf("feature-unit rows = %+v", fu.Identities)
	}
	// Relations never mix: the validation-record row holds the job alone.
	vr := r.Relations[2]
	if vr.Relation != ledger.RelationValidationRecord || len(vr.Identities) != 1 || vr.Dataset.Charges != 1 {
		t.Fatalf("third relation = %+v, want validation-record with acme's job only", vr)
	}
	eq("validation-record spent ε", vr.Dataset.Spent.Epsilon, big.NewRat(1, 2))
	eq("validation-record acme left ε", vr.Identities[0].Left.Epsilon, big.NewRat(3, 2))
	if _, err := s.Report(ctx, "diabetes", ledger.Limits{}); err == nil {
		t.Errorf("Report(zero limits) error = nil, want an error")
	}
}
