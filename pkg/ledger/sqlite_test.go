package ledger

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

func sqliteBackend() backend {
	return backend{name: "sqlite", location: func(t *testing.T) opener {
		path := filepath.Join(t.TempDir(), "ledger.db")
		return func(t *testing.T, limits Limits) Store {
			s, err := OpenSQLite(path, limits)
			if err != nil {
				t.Fatalf("OpenSQLite error: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}}
}

func TestSQLiteStore(t *testing.T) { runStoreSuite(t, sqliteBackend()) }

func TestOpenSQLiteArguments(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path    string
		limits  Limits
		wantErr string
	}{
		{"", stdLimits, "path must not be empty"},
		{":memory:", stdLimits, "must name a file"},
		{"file:x.db?mode=memory", stdLimits, "must name a file"},
		{filepath.Join(dir, "a?b.db"), stdLimits, "must not contain"},
		{filepath.Join(dir, "ok.db"), Limits{}, "limit epsilon"},
		{filepath.Join(dir, "missing", "dir", "x.db"), stdLimits, "ledger:"},
	}
	for _, tt := range tests {
		s, err := OpenSQLite(tt.path, tt.limits)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("OpenSQLite(%q, %+v) error = %v, want one containing %q", tt.path, tt.limits, err, tt.wantErr)
		}
	}
}

// rawSQLite runs statements on the ledger file behind the Store's back.
func rawSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestSQLiteSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSQLite(path, stdLimits)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	rawSQLite(t, path, `UPDATE schema_version SET version = 99`)
	if s, err := OpenSQLite(path, stdLimits); err == nil || !strings.Contains(err.Error(), "newer than this program") {
		if err == nil {
			s.Close()
		}
		t.Errorf("OpenSQLite(version 99) error = %v, want a schema version error", err)
	}
}

func TestSQLiteCorruptTotal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSQLite(path, stdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCharge(t, s, Charge{Account: acme, Key: "k", Kind: "query", Relation: RelationRecord, Cost: Cost{0.5, 0}})
	rawSQLite(t, path, `UPDATE totals SET epsilon = '-1/2'`)
	if _, err := s.Balance(ctx, acme, RelationRecord); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Balance(corrupt total) error = %v, want a corruption error", err)
	}
	if _, err := s.Charge(ctx, Charge{Account: acme, Key: "k2", Kind: "query", Relation: RelationRecord, Cost: Cost{0.25, 0}}); err == nil {
		t.Errorf("Charge(corrupt total) error = nil, want an error")
	}
}
