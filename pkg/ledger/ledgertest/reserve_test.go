package ledgertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// RunReserve runs, as subtests of t, the reservation protocol every Ledger must
// keep (Ledger.Reserve, Commit, Cancel, Extend, DropReservations): a reservation
// counts against both limits and the whole-patient caps until it is committed,
// cancelled, expires or is dropped at its owner's restart; a commit is an
// idempotent charge; concurrent reservations never hold more than the limits.
func RunReserve(t *testing.T, loc Location) {
	tests := []struct {
		name string
		fn   func(t *testing.T, loc Location)
	}{
		{"HoldsBudget", testReserveHolds},
		{"CancelFrees", testReserveCancel},
		{"Expiry", testReserveExpiry},
		{"Restart", testReserveRestart},
		{"Idempotent", testReserveIdempotent},
		{"WholePatient", testReservePatient},
		{"Views", testReserveViews},
		{"RaceOneStore", func(t *testing.T, loc Location) { testReserveRace(t, loc, 1) }},
		{"RaceTwoStores", func(t *testing.T, loc Location) { testReserveRace(t, loc, 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, loc) })
	}
}

// reserveLimits allow ε 1 per identity and 1.5 for the dataset, δ 0.5.
var reserveLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 1.5, Delta: 0.5}}

func projCharge(a ledger.Account, key string, eps float64) ledger.Charge {
	return ledger.Charge{Account: a, Key: key, Kind: ledger.KindProjection, Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: eps, Delta: 1e-6}, Description: "release " + key}
}

// MustReserve reserves cs in s and fails the test on error.
func MustReserve(t testing.TB, s *ledger.Ledger, h ledger.Hold, cs ...ledger.Charge) *ledger.Reservation {
	t.Helper()
	r, err := s.Reserve(ctx, cs, h)
	if err != nil {
		t.Fatalf("Reserve(%s/%s) error: %v", cs[0].Identity, cs[0].Key, err)
	}
	return r
}

func wantRefused(t *testing.T, what string, err error, scope string, reserved float64) {
	t.Helper()
	var be *ledger.BudgetError
	if !errors.As(err, &be) {
		t.Errorf("%s: %v, want a *BudgetError", what, err)
		return
	}
	if be.Scope != scope || be.Reserved.Epsilon != reserved {
		t.Errorf("%s: scope %s, reserved ε=%g; want %s, %g (%v)", what, be.Scope, be.Reserved.Epsilon, scope, reserved, err)
	}
}

// testReserveHolds: a live reservation is counted by later reservations and
// charges (the identity's and the dataset's), is not spent until committed, and
// its commit fits whatever was charged meanwhile.
func testReserveHolds(t *testing.T, loc Location) {
	s := loc(t)(t, reserveLimits)
	bob := ledger.Account{Dataset: acme.Dataset, Identity: "bob"}
	r := MustReserve(t, s, ledger.Hold{Owner: "a"}, projCharge(acme, "p1", 0.75))
	if !r.Reserved() || len(r.Receipts) != 1 || r.Receipts[0].Replayed || !r.Expires.After(time.Now()) {
		t.Fatalf("Reserve = %+v, want one charge reserved, expiring later", r)
	}
	if b := MustBalance(t, s, acme, ledger.RelationFeatureUnit); b.Charges != 0 || !b.Spent.IsZero() {
		t.Errorf("after Reserve: %d charges, spent %+v; a reservation spends nothing", b.Charges, b.Spent)
	}
	_, err := s.Reserve(ctx, []ledger.Charge{projCharge(acme, "p2", 0.5)}, ledger.Hold{Owner: "a"})
	wantRefused(t, "a second reservation beyond the identity's limit", err, ledger.ScopeIdentity, 0.75)
	_, err = s.Charge(ctx, projCharge(acme, "p2", 0.5))
	wantRefused(t, "a charge beyond the identity's limit with the reservation", err, ledger.ScopeIdentity, 0.75)
	if err != nil && !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("refusal %v does not match ErrBudgetExceeded", err)
	}
	// The dataset: 1.5 − 0.75 reserved leaves 0.75 for another identity.
	_, err = s.Charge(ctx, projCharge(bob, "b1", 0.875))
	wantRefused(t, "another identity's charge beyond the dataset's limit with the reservation", err, ledger.ScopeDataset, 0.75)
	MustCharge(t, s, projCharge(bob, "b1", 0.75))

	recs, err := s.Commit(ctx, r, []ledger.Charge{projCharge(acme, "p1", 0.75)})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(recs) != 1 || recs[0].Replayed || recs[0].Cost.Epsilon != 0.75 {
		t.Errorf("Commit = %+v, want the new record", recs)
	}
	if b := MustBalance(t, s, acme, ledger.RelationFeatureUnit); b.Charges != 1 || b.Spent.Epsilon != 0.75 || b.DatasetSpent.Epsilon != 1.5 {
		t.Errorf("after Commit: %d charges, spent %+v, dataset %+v; want 1, 0.75, 1.5", b.Charges, b.Spent, b.DatasetSpent)
	}
	// Committed, the reservation holds nothing more: the budget is spent once.
	if _, err := s.Charge(ctx, projCharge(acme, "p3", 0)); err != nil {
		t.Errorf("a zero charge after the commit: %v", err)
	}
	_, err = s.Reserve(ctx, []ledger.Charge{projCharge(acme, "p4", 0.25)}, ledger.Hold{})
	wantRefused(t, "a reservation beyond the dataset's limit once all is spent", err, ledger.ScopeDataset, 0)
	if err := s.Cancel(ctx, r); err != nil {
		t.Errorf("Cancel after Commit: %v, want nothing to do", err)
	}
	mustVerify(t, s, acme.Dataset)
}

// testReserveCancel: a cancelled reservation (a failed computation) gives its
// budget back; its commit afterwards is checked like a new charge.
func testReserveCancel(t *testing.T, loc Location) {
	s := loc(t)(t, reserveLimits)
	r := MustReserve(t, s, ledger.Hold{Owner: "a"}, projCharge(acme, "p1", 0.75))
	if _, err := s.Reserve(ctx, []ledger.Charge{projCharge(acme, "p2", 0.75)}, ledger.Hold{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("second reservation while the first is held: %v, want refused", err)
	}
	if err := s.Cancel(ctx, r); err != nil {
		t.Fatal(err)
	}
	r2 := MustReserve(t, s, ledger.Hold{Owner: "a"}, projCharge(acme, "p2", 0.75))
	if _, err := s.Commit(ctx, r2, []ledger.Charge{projCharge(acme, "p2", 0.75)}); err != nil {
		t.Fatal(err)
	}
	// The cancelled reservation's commit is a new charge, and the budget is spent.
	_, err := s.Commit(ctx, r, []ledger.Charge{projCharge(acme, "p1", 0.75)})
	wantRefused(t, "the commit of a cancelled reservation once its budget is spent", err, ledger.ScopeIdentity, 0)
	if b := MustBalance(t, s, acme, ledger.RelationFeatureUnit); b.Charges != 1 || b.Spent.Epsilon != 0.75 {
		t.Errorf("%d charges, spent %+v; want the one committed", b.Charges, b.Spent)
	}
}

// testReserveExpiry: an expired reservation does not block, cannot be extended,
// and its commit is checked like a new charge; a live one can be extended.
func testReserveExpiry(t *testing.T, loc Location) {
	s := loc(t)(t, reserveLimits)
	stale := MustReserve(t, s, ledger.Hold{Owner: "a", TTL: time.Nanosecond}, projCharge(acme, "p1", 0.75))
	live := MustReserve(t, s, ledger.Hold{Owner: "a", TTL: time.Hour}, projCharge(acme, "p2", 0.25))
	if err := s.Extend(ctx, stale, time.Hour); !errors.Is(err, ledger.ErrReservationLapsed) {
		t.Errorf("Extend of an expired reservation: %v, want ErrReservationLapsed", err)
	}
	before := live.Expires
	if err := s.Extend(ctx, live, 2*time.Hour); err != nil || !live.Expires.After(before) {
		t.Errorf("Extend of a live reservation: %v, expires %v (was %v)", err, live.Expires, before)
	}
	r := MustReserve(t, s, ledger.Hold{Owner: "a"}, projCharge(acme, "p3", 0.75))
	if _, err := s.Commit(ctx, r, []ledger.Charge{projCharge(acme, "p3", 0.75)}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Commit(ctx, stale, []ledger.Charge{projCharge(acme, "p1", 0.75)})
	wantRefused(t, "the commit of an expired reservation once its budget is spent", err, ledger.ScopeIdentity, 0.25)
	if _, err := s.Commit(ctx, live, []ledger.Charge{projCharge(acme, "p2", 0.25)}); err != nil {
		t.Errorf("the commit of the extended reservation: %v", err)
	}
	if b := MustBalance(t, s, acme, ledger.RelationFeatureUnit); b.Charges != 2 || b.Spent.Epsilon != 1 {
		t.Errorf("%d charges, spent %+v; want 2, ε 1", b.Charges, b.Spent)
	}
}

// testReserveRestart: the reservations a process left (it crashed before
// committing or cancelling) are dropped when it starts again, and only its own.
func testReserveRestart(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, reserveLimits)
	bob := ledger.Account{Dataset: acme.Dataset, Identity: "bob"}
	MustReserve(t, s, ledger.Hold{Owner: "replica-a", TTL: time.Hour}, projCharge(acme, "p1", 0.75))
	MustReserve(t, s, ledger.Hold{Owner: "replica-b", TTL: time.Hour}, projCharge(bob, "b1", 0.5))
	if err := s.Close(); err != nil { // the crash: neither committed nor cancelled
		t.Fatal(err)
	}
	s2 := open(t, reserveLimits)
	if _, err := s2.Reserve(ctx, []ledger.Charge{projCharge(acme, "p2", 0.75)}, ledger.Hold{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("before the restart's recovery the reservation must still hold: %v", err)
	}
	n, err := s2.DropReservations(ctx, acme.Dataset, "replica-a")
	if err != nil || n != 1 {
		t.Fatalf("DropReservations(replica-a) = %d, %v; want 1", n, err)
	}
	MustReserve(t, s2, ledger.Hold{Owner: "replica-a"}, projCharge(acme, "p2", 0.75))
	// replica-b's reservation still holds: 1.5 − 0.75 − 0.5 leaves 0.25 for the dataset.
	_, err = s2.Reserve(ctx, []ledger.Charge{projCharge(ledger.Account{Dataset: acme.Dataset, Identity: "carol"}, "c1", 0.5)}, ledger.Hold{})
	wantRefused(t, "a reservation beyond what the other replica still holds", err, ledger.ScopeDataset, 1.25)
}

// testReserveIdempotent: reserving a recorded key replays it and holds nothing;
// committing a recorded key again spends nothing; a key reserved by a request in
// progress is refused with ErrReserved.
func testReserveIdempotent(t *testing.T, loc Location) {
	s := loc(t)(t, reserveLimits)
	c := projCharge(acme, "p1", 0.5)
	r := MustReserve(t, s, ledger.Hold{}, c)
	if _, err := s.Reserve(ctx, []ledger.Charge{c}, ledger.Hold{}); !errors.Is(err, ledger.ErrReserved) {
		t.Errorf("the same key reserved twice: %v, want ErrReserved", err)
	}
	c.Result = []byte("Z")
	first, err := s.Commit(ctx, r, []ledger.Charge{c})
	if err != nil {
		t.Fatal(err)
	}
	again := MustReserve(t, s, ledger.Hold{}, c)
	if again.Reserved() || !again.Receipts[0].Replayed || string(again.Receipts[0].Result) != "Z" {
		t.Errorf("Reserve of a recorded key = %+v, want its stored receipt replayed and nothing held", again.Receipts)
	}
	recs, err := s.Commit(ctx, again, []ledger.Charge{c})
	if err != nil || !recs[0].Replayed || !recs[0].Created.Equal(first[0].Created) {
		t.Errorf("a repeated commit = %+v, %v; want the stored receipt replayed", recs, err)
	}
	conflict := c
	conflict.Cost.Epsilon = 0.25
	if _, err := s.Reserve(ctx, []ledger.Charge{conflict}, ledger.Hold{}); !errors.Is(err, ledger.ErrKeyConflict) {
		t.Errorf("Reserve of a recorded key with another cost: %v, want ErrKeyConflict", err)
	}
	if b := MustBalance(t, s, acme, ledger.RelationFeatureUnit); b.Charges != 1 || b.Spent.Epsilon != 0.5 {
		t.Errorf("%d charges, spent %+v; want one of ε 0.5", b.Charges, b.Spent)
	}
	for _, bad := range []func() error{
		func() error { _, err := s.Reserve(ctx, nil, ledger.Hold{}); return err },
		func() error { _, err := s.Reserve(ctx, []ledger.Charge{c}, ledger.Hold{TTL: -time.Second}); return err },
		func() error {
			_, err := s.Reserve(ctx, []ledger.Charge{projCharge(acme, "p9", -1)}, ledger.Hold{})
			return err
		},
		func() error { _, err := s.Commit(ctx, nil, []ledger.Charge{c}); return err },
		func() error { _, err := s.DropReservations(ctx, acme.Dataset, ""); return err },
	} {
		if err := bad(); err == nil {
			t.Error("an invalid reservation call: no error")
		}
	}
}

// testReservePatient: reservations count towards the whole-patient caps too.
func testReservePatient(t *testing.T, loc Location) {
	s := loc(t)(t, PatientLimits)
	p := func(key string, eps float64) ledger.Charge {
		c := projCharge(acme, key, 0.1)
		c.Patient = &ledger.PatientCost{Epsilon: eps, Delta: 1e-6}
		return c
	}
	r := MustReserve(t, s, ledger.Hold{}, p("p1", 6))
	_, err := s.Reserve(ctx, []ledger.Charge{p("p2", 6)}, ledger.Hold{})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !be.WholePatient || be.Scope != ledger.ScopeIdentity || be.Reserved.Epsilon != 6 {
		t.Fatalf("a second reservation beyond the whole-patient cap: %v, want refused by the identity's cap after ε 6 reserved", err)
	}
	if err := s.Cancel(ctx, r); err != nil {
		t.Fatal(err)
	}
	r2 := MustReserve(t, s, ledger.Hold{}, p("p2", 6))
	if _, err := s.Commit(ctx, r2, []ledger.Charge{p("p2", 6)}); err != nil {
		t.Fatal(err)
	}
	if b := mustPatient(t, s, acme); b.IdentityTotal.Charges != 1 {
		t.Errorf("whole-patient charges %d, want 1", b.IdentityTotal.Charges)
	}
	mustVerify(t, s, acme.Dataset)
}

// testReserveViews: what a live reservation holds shows in the views an operator
// reads — Balance, PatientBalance, Accounts, DatasetTotals, Report — as
// "reserved", its own figure, and the remainders drop by it as the limit check
// counts it; a commit moves it to "spent", a cancel or expiry frees it.
func testReserveViews(t *testing.T, loc Location) {
	s := loc(t)(t, PatientLimits)
	bob := ledger.Account{Dataset: acme.Dataset, Identity: "bob"}
	withPatient := func(a ledger.Account, key string, eps, patientEps float64) ledger.Charge {
		c := projCharge(a, key, eps)
		c.Patient = &ledger.PatientCost{Epsilon: patientEps, Delta: 1e-6}
		return c
	}
	MustCharge(t, s, withPatient(acme, "c1", 1, 2))
	r := MustReserve(t, s, ledger.Hold{Owner: "a"}, withPatient(acme, "p1", 3, 4))
	rb := MustReserve(t, s, ledger.Hold{Owner: "a"}, withPatient(bob, "b1", 0.5, 1))
	// Expired at once: counted by nothing.
	MustReserve(t, s, ledger.Hold{Owner: "a", TTL: time.Nanosecond}, withPatient(acme, "gone", 2, 2))

	type fig struct{ spent, reserved, remaining, dsSpent, dsReserved, dsRemaining float64 }
	balance := func(what string, a ledger.Account, rel ledger.Relation, charges, reservations int, want fig) {
		t.Helper()
		b := MustBalance(t, s, a, rel)
		got := fig{b.Spent.Epsilon, b.Reserved.Epsilon, b.Remaining.Epsilon, b.DatasetSpent.Epsilon, b.DatasetReserved.Epsilon, b.DatasetRemaining.Epsilon}
		if got != want || b.Charges != charges || b.Reservations != reservations {
			t.Errorf("%s: Balance(%s, %s) ε spent/reserved/remaining, dataset's = %+v, %d charges, %d reservations; want %+v, %d, %d",
				what, a.Identity, rel, got, b.Charges, b.Reservations, want, charges, reservations)
		}
	}
	// Per identity ε 10, dataset 100.
	balance("reserved", acme, ledger.RelationFeatureUnit, 1, 1, fig{1, 3, 6, 1, 3.5, 95.5})
	balance("reserved", bob, ledger.RelationFeatureUnit, 0, 1, fig{0, 0.5, 9.5, 1, 3.5, 95.5})
	// Feature-unit releases do not count towards the record relation.
	balance("reserved", acme, ledger.RelationRecord, 0, 0, fig{0, 0, 10, 0, 0, 100})
	// The remainder shown is what the limit check leaves: ε 6 fits, more does not.
	if _, err := s.Charge(ctx, projCharge(acme, "over", 6.25)); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("a charge beyond the remainder shown: %v, want refused", err)
	}

	// Whole patient: caps ε 10 per identity, 15 for the dataset.
	pb := mustPatient(t, s, acme)
	if e := floatOf(pb.IdentityTotal.Epsilon); e != 2 {
		t.Errorf("whole-patient total ε %g, want 2", e)
	}
	if e, de := floatOf(pb.IdentityReserved.Epsilon), floatOf(pb.DatasetReserved.Epsilon); e != 4 || de != 5 {
		t.Errorf("whole-patient reserved ε %g, dataset's %g; want 4, 5", e, de)
	}
	if pb.Remaining.Epsilon != 4 || pb.DatasetRemaining.Epsilon != 8 {
		t.Errorf("whole-patient remaining ε %g, dataset's %g; want 4 (10 − 2 − 4), 8 (15 − 2 − 5)", pb.Remaining.Epsilon, pb.DatasetRemaining.Epsilon)
	}

	// Listings: bob holds a reservation only, and is listed.
	accts, err := s.Accounts(ctx, acme.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, b := range accts {
		listed = append(listed, fmt.Sprintf("%s/%s spent %g reserved %g remaining %g", b.Identity, b.Relation, b.Spent.Epsilon, b.Reserved.Epsilon, b.Remaining.Epsilon))
	}
	if want := []string{"acme/feature-unit spent 1 reserved 3 remaining 6", "bob/feature-unit spent 0 reserved 0.5 remaining 9.5"}; fmt.Sprint(listed) != fmt.Sprint(want) {
		t.Errorf("Accounts = %q, want %q", listed, want)
	}
	dts, err := s.DatasetTotals(ctx, acme.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	if len(dts) != 1 || dts[0].Spent.Epsilon != 1 || dts[0].Reserved.Epsilon != 3.5 || dts[0].Remaining.Epsilon != 95.5 || dts[0].Reservations != 2 {
		t.Errorf("DatasetTotals = %+v, want feature-unit spent ε 1, reserved 3.5 by 2, remaining 95.5", dts)
	}
	rep, err := s.Report(ctx, acme.Dataset, PatientLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Relations) != 1 || len(rep.Relations[0].Identities) != 2 {
		t.Fatalf("Report relations = %+v, want feature-unit with acme and bob", rep.Relations)
	}
	rr := rep.Relations[0]
	a, ds := rr.Identities[0], rr.Dataset
	if floatOf(a.Spent.Epsilon) != 1 || floatOf(a.Reserved.Epsilon) != 3 || a.Reservations != 1 || floatOf(a.OwnLeft.Epsilon) != 6 || floatOf(a.Left.Epsilon) != 6 {
		t.Errorf("Report row of acme: spent %s, reserved %s by %d, own left %s, left %s; want 1, 3 by 1, 6, 6",
			a.Spent.Epsilon, a.Reserved.Epsilon, a.Reservations, a.OwnLeft.Epsilon, a.Left.Epsilon)
	}
	if floatOf(ds.Reserved.Epsilon) != 3.5 || ds.Reservations != 2 || floatOf(ds.Left.Epsilon) != 95.5 {
		t.Errorf("Report row of the dataset: reserved %s by %d, left %s; want 3.5 by 2, 95.5", ds.Reserved.Epsilon, ds.Reservations, ds.Left.Epsilon)
	}
	if p := rep.Patient.Dataset; floatOf(p.Reserved.Epsilon) != 5 || floatOf(p.Left.Epsilon) != 8 {
		t.Errorf("Report whole-patient dataset row: reserved %s, left %s; want 5, 8", p.Reserved.Epsilon, p.Left.Epsilon)
	}

	// Commit moves acme's reservation to spent; cancel frees bob's.
	if _, err := s.Commit(ctx, r, []ledger.Charge{withPatient(acme, "p1", 3, 4)}); err != nil {
		t.Fatal(err)
	}
	balance("committed", acme, ledger.RelationFeatureUnit, 2, 0, fig{4, 0, 6, 4, 0.5, 95.5})
	if err := s.Cancel(ctx, rb); err != nil {
		t.Fatal(err)
	}
	balance("cancelled", acme, ledger.RelationFeatureUnit, 2, 0, fig{4, 0, 6, 4, 0, 96})
	if accts, err := s.Accounts(ctx, acme.Dataset); err != nil || len(accts) != 1 || accts[0].Identity != "acme" {
		t.Errorf("Accounts after the cancel = %+v, %v; want acme's only", accts, err)
	}
	if pb := mustPatient(t, s, acme); floatOf(pb.DatasetReserved.Epsilon) != 0 || pb.DatasetRemaining.Epsilon != 9 {
		t.Errorf("whole-patient dataset reserved %s, remaining %g after commit and cancel; want 0, 9", pb.DatasetReserved.Epsilon, pb.DatasetRemaining.Epsilon)
	}
	mustVerify(t, s, acme.Dataset)
}

// testReserveRace: 100 concurrent reservations of distinct releases, from one or
// two Ledgers, with budget for 2: exactly 2 are held, and their commits are the
// only charges.
func testReserveRace(t *testing.T, loc Location, nStores int) {
	const n = 100
	open := loc(t)
	stores := make([]*ledger.Ledger, nStores)
	for i := range stores {
		stores[i] = open(t, reserveLimits)
	}
	var mu sync.Mutex
	var held []*ledger.Reservation
	var keys []string
	together(n, func(i int) {
		key := fmt.Sprint("p", i)
		r, err := stores[i%nStores].Reserve(ctx, []ledger.Charge{projCharge(acme, key, 0.5)}, ledger.Hold{Owner: "race"})
		if err != nil {
			if !errors.Is(err, ledger.ErrBudgetExceeded) {
				t.Errorf("Reserve %s: %v", key, err)
			}
			return
		}
		mu.Lock()
		held, keys = append(held, r), append(keys, key)
		mu.Unlock()
	})
	if len(held) != 2 {
		t.Fatalf("%d reservations held with budget for 2", len(held))
	}
	for i, r := range held {
		if _, err := stores[i%nStores].Commit(ctx, r, []ledger.Charge{projCharge(acme, keys[i], 0.5)}); err != nil {
			t.Errorf("Commit %s: %v", keys[i], err)
		}
	}
	if b := MustBalance(t, stores[0], acme, ledger.RelationFeatureUnit); b.Charges != 2 || b.Spent.Epsilon != 1 {
		t.Errorf("%d charges, spent %+v; want 2, ε 1", b.Charges, b.Spent)
	}
}
