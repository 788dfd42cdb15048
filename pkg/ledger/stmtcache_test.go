package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/privbo/privbo/pkg/sqlitedb"
)

// TestChargeStatementsPrepared: after a first charge, every statement a charge runs is
// taken from the engine's cache (none is queued to be prepared again), the cache holds
// what a charge needs, and it works on a pool of one connection, where preparing
// inside a transaction would wait for the connection the transaction holds.
func TestChargeStatementsPrepared(t *testing.T) {
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	e := newSQLiteEngine(db)
	limits := Limits{PerIdentity: Cost{Epsilon: 100, Delta: 0.5}, Dataset: Cost{Epsilon: 100, Delta: 0.5}}
	s, err := OpenEngine(context.Background(), e, Dialect{}, sqliteDDL, limits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	charge := func(k int) {
		t.Helper()
		if _, err := s.Charge(context.Background(), Charge{Account: Account{Dataset: "d", Identity: "acme"}, Key: fmt.Sprint("k", k),
			Kind: "q", Relation: RelationRecord, Cost: Cost{Epsilon: 0.1}}); err != nil {
			t.Fatal(err)
		}
	}
	charge(0)
	charge(1) // prepares what the first queued
	e.mu.Lock()
	cached := len(e.stmts)
	e.mu.Unlock()
	charge(2)
	e.mu.Lock()
	pending, after := len(e.pending), len(e.stmts)
	e.mu.Unlock()
	if cached < 5 || pending != 0 || after != cached {
		t.Errorf("statements cached after two charges: %d; after a third: %d, with %d new texts queued; want ≥ 5, the same, and none", cached, after, pending)
	}
	if b, err := s.Balance(context.Background(), Account{Dataset: "d", Identity: "acme"}, RelationRecord); err != nil || b.Spent.Epsilon < 0.29 {
		t.Errorf("balance after three charges of 0.1: %+v, %v", b, err)
	}
}
