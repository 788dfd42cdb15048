package ledgertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// sqliteV1DDL is the tables of schema version 1, as that version created them.
var sqliteV1DDL = []string{
	`CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
	`CREATE TABLE entries (
			seq INTEGER PRIMARY KEY AUTOINCREMENT,
			dataset TEXT NOT NULL, identity TEXT NOT NULL, entry_key TEXT NOT NULL,
			kind TEXT NOT NULL, description TEXT NOT NULL,
			epsilon REAL NOT NULL CHECK (epsilon >= 0),
			delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
			result BLOB, created_ns INTEGER NOT NULL,
			UNIQUE (dataset, identity, entry_key))`,
	`CREATE INDEX entries_dataset_seq ON entries (dataset, seq)`,
	`CREATE TABLE totals (
			dataset TEXT NOT NULL, identity TEXT NOT NULL,
			epsilon TEXT NOT NULL, delta TEXT NOT NULL, charges INTEGER NOT NULL,
			PRIMARY KEY (dataset, identity))`,
}

// sqliteLocation is a fresh ledger file per test.
func sqliteLocation(t *testing.T) Opener {
	path := filepath.Join(t.TempDir(), "ledger.db")
	return func(t *testing.T, limits ledger.Limits) *ledger.Ledger {
		s, err := ledger.OpenSQLite(path, limits)
		if err != nil {
			t.Fatalf("OpenSQLite error: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestSQLiteStore(t *testing.T) { Run(t, sqliteLocation) }

func TestOpenSQLiteArguments(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path    string
		limits  ledger.Limits
		wantErr string
	}{
		{"", StdLimits, "path must not be empty"},
		{":memory:", StdLimits, "must name a file"},
		{"file:x.db?mode=memory", StdLimits, "must name a file"},
		{filepath.Join(dir, "a?b.db"), StdLimits, "must not contain"},
		{filepath.Join(dir, "ok.db"), ledger.Limits{}, "limit epsilon"},
		{filepath.Join(dir, "missing", "dir", "x.db"), StdLimits, "ledger:"},
	}
	for _, tt := range tests {
		s, err := ledger.OpenSQLite(tt.path, tt.limits)
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
	s, err := ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	rawSQLite(t, path, `UPDATE schema_version SET version = 99`)
	if s, err := ledger.OpenSQLite(path, StdLimits); err == nil || !strings.Contains(err.Error(), "newer than this program") {
		if err == nil {
			s.Close()
		}
		t.Errorf("OpenSQLite(version 99) error = %v, want a schema version error", err)
	}
}

func TestSQLiteCorruptTotal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}})
	rawSQLite(t, path, `UPDATE totals SET epsilon = '-1/2'`)
	if _, err := s.Balance(ctx, acme, ledger.RelationRecord); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Balance(corrupt total) error = %v, want a corruption error", err)
	}
	if _, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "k2", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25, Delta: 0}}); err == nil {
		t.Errorf("Charge(corrupt total) error = nil, want an error")
	}
}

func TestSQLiteUpgradeV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range sqliteV1DDL {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	FillV1(t, func(q string, args ...any) error {
		_, err := db.Exec(strings.ReplaceAll(q, "{t}", ""), args...)
		return err
	})
	db.Close()

	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2, Delta: 1e-4}}
	s, err := ledger.OpenSQLite(path, limits)
	if err != nil {
		t.Fatalf("OpenSQLite(version 1) error: %v", err)
	}
	CheckUpgradedV1(t, s, limits)
	CheckUpgradedV1Writes(t, s)
	s.Close()

	// The upgrade is recorded and not repeated; the schema is version 2's.
	var version int
	var nullable, sequence int64
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != ledger.SchemaVersion {
		t.Errorf("schema version after upgrade = %d, %v; want %d", version, err, ledger.SchemaVersion)
	}
	if err := db.QueryRow(`SELECT "notnull" FROM pragma_table_info('entries') WHERE name = 'relation'`).Scan(&nullable); err != nil || nullable != 1 {
		t.Errorf("entries.relation NOT NULL = %d, %v; want 1", nullable, err)
	}
	if err := db.QueryRow(`SELECT seq FROM sqlite_sequence WHERE name = 'entries'`).Scan(&sequence); err != nil || sequence != int64(V1Records()+1) {
		t.Errorf("entries sequence after upgrade and one charge = %d, %v; want %d", sequence, err, V1Records()+1)
	}
	s, err = ledger.OpenSQLite(path, limits)
	if err != nil {
		t.Fatalf("reopen error: %v", err)
	}
	defer s.Close()
	if b := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationRecord); b.Charges != 4 {
		t.Errorf("after reopen acme record charges = %d, want 4", b.Charges)
	}
}

// sqliteV3DDL is the tables of schema version 3, as that version created them
// (version 2: without the limits table).
var sqliteV3DDL = []string{
	`CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
	`CREATE TABLE entries (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		dataset TEXT NOT NULL, identity TEXT NOT NULL, entry_key TEXT NOT NULL,
		kind TEXT NOT NULL, description TEXT NOT NULL,
		epsilon REAL NOT NULL CHECK (epsilon >= 0),
		delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
		result BLOB, created_ns INTEGER NOT NULL, relation TEXT NOT NULL,
		UNIQUE (dataset, identity, entry_key))`,
	`CREATE INDEX entries_dataset_seq ON entries (dataset, seq)`,
	`CREATE TABLE totals (
		dataset TEXT NOT NULL, identity TEXT NOT NULL, relation TEXT NOT NULL,
		epsilon TEXT NOT NULL, delta TEXT NOT NULL, charges INTEGER NOT NULL,
		PRIMARY KEY (dataset, identity, relation))`,
	`CREATE TABLE limits (
		dataset TEXT PRIMARY KEY,
		identity_epsilon REAL NOT NULL, identity_delta REAL NOT NULL,
		dataset_epsilon REAL NOT NULL, dataset_delta REAL NOT NULL,
		recorded_ns INTEGER NOT NULL)`,
}

// TestSQLiteUpgradeV3 opens version 2 and 3 databases as those versions wrote them
// and checks the upgrade to the current version: every record's whole-patient cost
// from what it states, the totals recomputed and consistent, the limits history.
func TestSQLiteUpgradeV3(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprint("v", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			ddl := sqliteV3DDL
			if version == 2 {
				ddl = ddl[:len(ddl)-1]
			}
			rawSQLite(t, path, ddl...)
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			FillV3(t, version, func(q string, args ...any) error {
				_, err := db.Exec(strings.ReplaceAll(q, "{t}", ""), args...)
				return err
			})
			db.Close()
			s, err := ledger.OpenSQLite(path, StdLimits)
			if err != nil {
				t.Fatalf("OpenSQLite(version %d): %v", version, err)
			}
			defer s.Close()
			CheckUpgradedV3(t, s, version)
			var v, limitsTables int
			rawSQLiteQuery(t, path, `SELECT version FROM schema_version`, &v)
			rawSQLiteQuery(t, path, `SELECT count(*) FROM sqlite_master WHERE name = 'limits'`, &limitsTables)
			if v != ledger.SchemaVersion || limitsTables != 0 {
				t.Errorf("after upgrade: schema version %d, %d limits tables; want %d, 0", v, limitsTables, ledger.SchemaVersion)
			}
		})
	}
}

func BenchmarkChargeSQLite(b *testing.B) {
	s, err := ledger.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"), BenchLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	BenchCharge(b, s)
}

// BenchmarkChargeIdentitiesSQLite: a charge on a dataset of 10 and of 10,000
// identities (docs/EXPERIMENTS.md, "A charge's cost and the number of identities").
func BenchmarkChargeIdentitiesSQLite(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprint("identities=", n), func(b *testing.B) {
			s, err := ledger.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"), BenchLimits)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			BenchChargeIdentities(b, s, n)
		})
	}
}

// TestSQLiteVerify: a total changed behind the ledger's back is reported by Verify.
func TestSQLiteVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}})
	if inc, err := s.Verify(ctx, "diabetes"); err != nil || len(inc) != 0 {
		t.Fatalf("Verify = %v, %v; want consistent", inc, err)
	}
	rawSQLite(t, path, `UPDATE patient_totals SET epsilon = '1/4' WHERE identity = 'acme'`, `UPDATE totals SET charges = 2 WHERE identity = ''`)
	inc, err := s.Verify(ctx, "diabetes")
	if err != nil || len(inc) != 2 || inc[0].What != "dataset, relation record" || inc[1].What != "whole patient, identity acme" {
		t.Errorf("Verify after changing two totals = %v, %v; want the dataset's record total and acme's whole-patient total", inc, err)
	}
	// A corrupt live reservation would refuse every charge: Verify says so.
	MustReserve(t, s, ledger.Hold{TTL: time.Hour}, ledger.Charge{Account: acme, Key: "r", Kind: "query", Relation: ledger.RelationRecord,
		Cost: ledger.Cost{Epsilon: 0.25}})
	rawSQLite(t, path, `UPDATE reservations SET epsilon = -1`)
	if _, err := s.Verify(ctx, "diabetes"); err == nil || !strings.Contains(err.Error(), `reservation "r"`) {
		t.Errorf("Verify with a corrupt reservation: %v, want it named", err)
	}
}

func rawSQLiteQuery(t *testing.T, path, q string, dest ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(q).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestSQLiteUpgradeV4: a version 4 ledger (no reservations table) is upgraded to
// the current version in place, its records and totals kept, and reserves.
func TestSQLiteUpgradeV4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	acct := ledger.Account{Dataset: "d", Identity: "acme"}
	MustCharge(t, s, ledger.Charge{Account: acct, Key: "k1", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}})
	s.Close()
	rawSQLite(t, path, `DROP TABLE reservations`, `DROP TABLE stored_totals`, `ALTER TABLE entries DROP COLUMN stored_bytes`)
	rawSQLite(t, path, `UPDATE schema_version SET version = 4`)
	s, err = ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatalf("OpenSQLite(version 4): %v", err)
	}
	defer s.Close()
	if b := MustBalance(t, s, acct, ledger.RelationRecord); b.Charges != 1 || b.Spent.Epsilon != 0.5 {
		t.Errorf("after the upgrade: %d charges, spent %+v; want the record kept", b.Charges, b.Spent)
	}
	if _, err := s.Reserve(context.Background(), []ledger.Charge{{Account: acct, Key: "k2", Kind: "query", Relation: ledger.RelationRecord,
		Cost: ledger.Cost{Epsilon: 0.75}}}, ledger.Hold{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("Reserve beyond the limit after the upgrade: %v, want refused", err)
	}
	MustReserve(t, s, ledger.Hold{}, ledger.Charge{Account: acct, Key: "k2", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}})
}

// TestSQLiteUpgradeV5: a version 5 ledger (no stored bytes) with a live
// reservation is upgraded in place: the reservation still holds its budget, the
// records count as storing nothing, and the stored-bytes quota applies from then on.
func TestSQLiteUpgradeV5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	acct := ledger.Account{Dataset: "d", Identity: "acme"}
	MustCharge(t, s, ledger.Charge{Account: acct, Key: "k1", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25}})
	MustReserve(t, s, ledger.Hold{TTL: time.Hour}, ledger.Charge{Account: acct, Key: "k2", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}})
	s.Close()
	rawSQLite(t, path, `DROP TABLE stored_totals`, `ALTER TABLE entries DROP COLUMN stored_bytes`, `ALTER TABLE reservations DROP COLUMN stored_bytes`,
		`UPDATE schema_version SET version = 5`)
	s, err = ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatalf("OpenSQLite(version 5): %v", err)
	}
	defer s.Close()
	if b := MustBalance(t, s, acct, ledger.RelationRecord); b.Charges != 1 || b.Spent.Epsilon != 0.25 || b.Reserved.Epsilon != 0.5 {
		t.Errorf("after the upgrade: %d charges, spent %+v, reserved %+v; want the record and the reservation kept", b.Charges, b.Spent, b.Reserved)
	}
	quota := ledger.Hold{Stored: ledger.StoredQuota{PerIdentity: 100}}
	MustReserve(t, s, quota, ledger.Charge{Account: acct, Key: "k3", Kind: "projection", Relation: ledger.RelationRecord, Stored: 100})
	if _, err := s.Reserve(ctx, []ledger.Charge{{Account: acct, Key: "k4", Kind: "projection", Relation: ledger.RelationRecord, Stored: 1}}, quota); !errors.Is(err, ledger.ErrStoredBytes) {
		t.Errorf("Reserve past the stored-bytes quota after the upgrade: %v, want ErrStoredBytes", err)
	}
}

// TestSQLiteVerifyStored: a stored-bytes total changed behind the ledger's back is
// reported by Verify, as the other totals are.
func TestSQLiteVerifyStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.OpenSQLite(path, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.5}, Stored: 4096})
	if inc, err := s.Verify(ctx, "diabetes"); err != nil || len(inc) != 0 {
		t.Fatalf("Verify = %v, %v; want consistent", inc, err)
	}
	rawSQLite(t, path, `UPDATE stored_totals SET bytes = 1 WHERE identity = 'acme'`)
	inc, err := s.Verify(ctx, "diabetes")
	if err != nil || len(inc) != 1 || inc[0].What != "stored bytes, identity acme" || inc[0].Recomputed != "4096 bytes over 1 releases" {
		t.Errorf("Verify after changing acme's stored bytes = %v, %v; want that total reported", inc, err)
	}
}
