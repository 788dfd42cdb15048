package ledgertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// storedQuota is the stored-bytes quota of testStoredQuota: 3 releases of 40
// bytes fit an identity's 100 bytes twice, the dataset's 200 bytes five times.
var storedQuota = ledger.Hold{Stored: ledger.StoredQuota{PerIdentity: 100, Dataset: 200}}

// storedCharge is a near-free release of key storing 40 bytes.
func storedCharge(a ledger.Account, key string) ledger.Charge {
	return ledger.Charge{Account: a, Key: key, Kind: ledger.KindProjection, Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 1e-6}, Stored: 40}
}

func wantStoredRefusal(t *testing.T, what string, err error, want ledger.StoredBytesError) {
	t.Helper()
	var se *ledger.StoredBytesError
	if !errors.As(err, &se) || !errors.Is(err, ledger.ErrStoredBytes) {
		t.Errorf("%s: %v, want a *StoredBytesError", what, err)
		return
	}
	if got := *se; got != want {
		t.Errorf("%s: %+v, want %+v", what, got, want)
	}
}

// testStoredQuota: a reservation that stores bytes is checked against the
// stored-bytes quotas like a budget, counting the recorded releases and those
// being computed, and refused with the figures; replays, cancelled reservations
// and releases that store nothing are never refused by it, and other identities
// only by the dataset's quota.
func testStoredQuota(t *testing.T, loc Location) {
	s := loc(t)(t, bigLimits)
	bob := ledger.Account{Dataset: acme.Dataset, Identity: "bob"}
	release := func(a ledger.Account, key string) error {
		r, err := s.Reserve(ctx, []ledger.Charge{storedCharge(a, key)}, storedQuota)
		if err != nil {
			return err
		}
		_, err = s.Commit(ctx, r, []ledger.Charge{storedCharge(a, key)})
		return err
	}
	for _, k := range []string{"p1", "p2"} {
		if err := release(acme, k); err != nil {
			t.Fatalf("release %s within the quota: %v", k, err)
		}
	}
	wantStoredRefusal(t, "a third release by acme", release(acme, "p3"),
		ledger.StoredBytesError{Scope: ledger.ScopeIdentity, Account: acme, Requested: 40, Stored: 80, Quota: 100})
	if err := release(acme, "p1"); err != nil {
		t.Errorf("a replay past the quota: %v, want it replayed", err)
	}
	MustReserve(t, s, storedQuota, ledger.Charge{Account: acme, Key: "job", Kind: "job:kusner", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1}})
	// A reservation holds its bytes until it is committed or cancelled.
	held := MustReserve(t, s, storedQuota, storedCharge(bob, "q1"), storedCharge(bob, "q2"))
	wantStoredRefusal(t, "a third release by bob while two are computed", release(bob, "q3"),
		ledger.StoredBytesError{Scope: ledger.ScopeIdentity, Account: bob, Requested: 40, Reserved: 80, Quota: 100})
	if err := s.Cancel(ctx, held); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"q1", "q2"} {
		if err := release(bob, k); err != nil {
			t.Fatalf("bob's release %s after the cancel: %v", k, err)
		}
	}
	carol := ledger.Account{Dataset: acme.Dataset, Identity: "carol"}
	if err := release(carol, "r1"); err != nil {
		t.Fatalf("carol's first release: %v", err)
	}
	wantStoredRefusal(t, "a release past the dataset's quota", release(carol, "r2"),
		ledger.StoredBytesError{Scope: ledger.ScopeDataset, Account: carol, Requested: 40, Stored: 200, Quota: 200})
	rows, err := s.Stored(ctx, acme.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(rows), "[{ 200 5 0} {acme 80 2 0} {bob 80 2 0} {carol 40 1 0}]"; got != want {
		t.Errorf("Stored = %s, want %s", got, want)
	}
	mustVerify(t, s, acme.Dataset)
}
