package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// TestLedgerShowsStoredBytes: 'curator ledger' lists what each identity's releases keep
// for replay, recorded and being computed, and the dataset's total.
func TestLedgerShowsStoredBytes(t *testing.T) {
	state := t.TempDir()
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{
		PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 30, Delta: 1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.RecordLimits(ctx, "diabetes", false); err != nil {
		t.Fatal(err)
	}
	projection := func(identity, key string, stored int64) ledger.Charge {
		return ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: identity}, Key: key, Kind: "projection",
			Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-4}, Stored: stored}
	}
	for _, c := range []ledger.Charge{projection("acme", "p1", 3<<20), projection("acme", "p2", 1<<20), projection("bob", "p1", 1536)} {
		if _, err := store.Charge(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Reserve(ctx, []ledger.Charge{projection("bob", "p2", 1<<30)}, ledger.Hold{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(t, func() error { return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes"}) })
	if err != nil {
		t.Fatalf("curator ledger: %v\n%s", err, out)
	}
	want := "IDENTITY   STORED     RELEASES  RESERVED\n" +
		"acme       4 MiB      2         0 B\n" +
		"bob        1.5 KiB    1         1 GiB\n" +
		"(dataset)  4.001 MiB  3         1 GiB\n"
	if !strings.Contains(out, want) {
		t.Errorf("curator ledger output lacks %q:\n%s", want, out)
	}
}
