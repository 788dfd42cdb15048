package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
)

// The PostgreSQL tests need a server: PRIVBO_TEST_POSTGRES_DSN, or the
// local default below. They fail if it cannot be reached, unless
// PRIVBO_SKIP_POSTGRES=1.
const defaultTestDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// testCallTimeout is the call timeout of the tests' stores: only a guard against a
// hang. The default (5 s) is a production bound that a loaded test machine exceeds
// while a hundred racing charges queue for one dataset's lock, failing charges that
// were only slow; TestPostgresCallTimeout tests the bound itself.
const testCallTimeout = 2 * time.Minute

func testDSN() string {
	if dsn := os.Getenv("PRIVBO_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return defaultTestDSN
}

// requirePostgres connects to the test server, or fails (skips only with
// PRIVBO_SKIP_POSTGRES=1).
func requirePostgres(t testing.TB) *pgx.Conn {
	t.Helper()
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(cctx, testDSN())
	if err != nil {
		if os.Getenv("PRIVBO_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unreachable and PRIVBO_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("PostgreSQL unreachable (set PRIVBO_TEST_POSTGRES_DSN, or PRIVBO_SKIP_POSTGRES=1 to skip): %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// randomSchema creates nothing: it names a fresh schema and drops it when
// the test ends.
func randomSchema(t testing.TB, conn *pgx.Conn) string {
	var b [8]byte
	rand.Read(b[:])
	schema := "privbo_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// postgresLocation returns a Location: a fresh schema per test, dropped
// when the test ends.
func postgresLocation(conn *pgx.Conn) Location {
	return func(t *testing.T) Opener {
		schema := randomSchema(t, conn)
		return func(t *testing.T, limits ledger.Limits) *ledger.Ledger {
			s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, limits)
			if err != nil {
				t.Fatalf("Open error: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
}

func TestPostgresStore(t *testing.T) {
	conn := requirePostgres(t)
	Run(t, postgresLocation(conn))
}

func TestPostgresSchemaVersion(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := conn.Exec(ctx, `UPDATE "`+schema+`".schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, StdLimits); err == nil || !strings.Contains(err.Error(), "newer than this program") {
		if err == nil {
			s.Close()
		}
		t.Errorf("pgledger.Open(version 99) error = %v, want a schema version error", err)
	}
}

func TestOpenPostgresArguments(t *testing.T) {
	tests := []struct {
		dsn     string
		opt     pgledger.Options
		limits  ledger.Limits
		wantErr string
	}{
		{testDSN(), pgledger.Options{Schema: "Privbo"}, StdLimits, "must match"},
		{testDSN(), pgledger.Options{Schema: "1abc"}, StdLimits, "must match"},
		{testDSN(), pgledger.Options{Schema: `a"; DROP TABLE x; --`}, StdLimits, "must match"},
		{testDSN(), pgledger.Options{Schema: "pg_ledger"}, StdLimits, "not start with pg_"},
		{testDSN(), pgledger.Options{Schema: strings.Repeat("a", 64)}, StdLimits, "at most 63"},
		{testDSN(), pgledger.Options{MaxConns: -1}, StdLimits, "MaxConns"},
		{testDSN(), pgledger.Options{}, ledger.Limits{}, "limit epsilon"},
		{"postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", pgledger.Options{Schema: "unused"}, StdLimits, "connect to postgres"},
		{"://not a dsn", pgledger.Options{Schema: "unused"}, StdLimits, "pgledger: postgres"},
	}
	for _, tt := range tests {
		s, err := pgledger.Open(ctx, tt.dsn, tt.opt, tt.limits)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("pgledger.Open(%q, %+v) error = %v, want one containing %q", tt.dsn, tt.opt, err, tt.wantErr)
		}
	}
}

// TestPostgresUnavailable checks that losing the database connection is
// reported as ErrUnavailable (which the curator answers as UNAVAILABLE, so
// that clients retry), and that the store reconnects afterwards: the test
// terminates the store's server processes with pg_terminate_backend.
func TestPostgresUnavailable(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	s, err := pgledger.Open(ctx, withApplicationName(testDSN(), schema), pgledger.Options{Schema: schema, MaxConns: 1, CallTimeout: testCallTimeout}, StdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	acct := ledger.Account{Dataset: "d", Identity: "a"}
	if _, err := s.Balance(ctx, acct, ledger.RelationRecord); err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, schema).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d server processes, want the store's one", killed)
	}
	// The lost connection is found out by the call that uses it, which runs again
	// on a new one.
	if _, err := s.Balance(ctx, acct, ledger.RelationRecord); err != nil {
		t.Errorf("Balance after the connection was killed: %v, want it run again on a new connection", err)
	}
	if _, err := s.Charge(ctx, ledger.Charge{Account: acct, Key: "k", Kind: "test", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1}}); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, schema).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d server processes (%v), want the store's one", killed, err)
	}
	if _, err := s.Charge(ctx, ledger.Charge{Account: acct, Key: "k2", Kind: "test", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1}}); err != nil {
		t.Errorf("Charge after the connection was killed: %v, want it run again on a new connection", err)
	}
	if b, err := s.Balance(ctx, acct, ledger.RelationRecord); err != nil || b.Charges != 2 {
		t.Errorf("after the charges: %+v, %v; want 2 charges", b, err)
	}
	if _, err := pgledger.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", pgledger.Options{}, StdLimits); !errors.Is(err, ledger.ErrUnavailable) {
		t.Errorf("Open on a closed port: %v, want ErrUnavailable", err)
	}
}

// postgresV1DDL is the tables of schema version 1, as that version created them.
var postgresV1DDL = []string{
	`CREATE SCHEMA {schema}`,
	`CREATE TABLE {t}schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
	`CREATE TABLE {t}entries (
			seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			dataset TEXT NOT NULL, identity TEXT NOT NULL, entry_key TEXT NOT NULL,
			kind TEXT NOT NULL, description TEXT NOT NULL,
			epsilon DOUBLE PRECISION NOT NULL CHECK (epsilon >= 0),
			delta DOUBLE PRECISION NOT NULL CHECK (delta >= 0 AND delta < 1),
			result BYTEA, created_ns BIGINT NOT NULL,
			UNIQUE (dataset, identity, entry_key))`,
	`CREATE INDEX entries_dataset_seq ON {t}entries (dataset, seq)`,
	`CREATE TABLE {t}totals (
			dataset TEXT NOT NULL, identity TEXT NOT NULL,
			epsilon TEXT NOT NULL, delta TEXT NOT NULL, charges BIGINT NOT NULL,
			PRIMARY KEY (dataset, identity))`,
}

func TestPostgresUpgradeV1(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	quoted := `"` + schema + `"`
	exec := func(q string, args ...any) error {
		q = ledger.Dialect{Prefix: quoted + ".", Dollar: true}.SQL(strings.ReplaceAll(q, "{schema}", quoted))
		_, err := conn.Exec(ctx, q, args...)
		return err
	}
	for _, q := range postgresV1DDL {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	FillV1(t, exec)

	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2, Delta: 1e-4}}
	s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, limits)
	if err != nil {
		t.Fatalf("pgledger.Open(version 1) error: %v", err)
	}
	CheckUpgradedV1(t, s, limits)
	CheckUpgradedV1Writes(t, s)
	s.Close()

	var version int
	var nullable string
	if err := conn.QueryRow(ctx, `SELECT version FROM `+quoted+`.schema_version`).Scan(&version); err != nil || version != ledger.SchemaVersion {
		t.Errorf("schema version after upgrade = %d, %v; want %d", version, err, ledger.SchemaVersion)
	}
	if err := conn.QueryRow(ctx, `SELECT is_nullable FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'entries' AND column_name = 'relation'`, schema).Scan(&nullable); err != nil || nullable != "NO" {
		t.Errorf("entries.relation is_nullable = %q, %v; want NO", nullable, err)
	}
	s, err = pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, limits)
	if err != nil {
		t.Fatalf("reopen error: %v", err)
	}
	defer s.Close()
	if b := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationRecord); b.Charges != 4 {
		t.Errorf("after reopen acme record charges = %d, want 4", b.Charges)
	}
}

// postgresV3DDL is the tables of schema version 3, as that version created them
// (version 2: without the limits table).
var postgresV3DDL = []string{
	`CREATE SCHEMA {schema}`,
	`CREATE TABLE {t}schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
	`CREATE TABLE {t}entries (
		seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		dataset TEXT NOT NULL, identity TEXT NOT NULL, entry_key TEXT NOT NULL,
		kind TEXT NOT NULL, description TEXT NOT NULL,
		epsilon DOUBLE PRECISION NOT NULL CHECK (epsilon >= 0),
		delta DOUBLE PRECISION NOT NULL CHECK (delta >= 0 AND delta < 1),
		result BYTEA, created_ns BIGINT NOT NULL, relation TEXT NOT NULL,
		UNIQUE (dataset, identity, entry_key))`,
	`CREATE INDEX entries_dataset_seq ON {t}entries (dataset, seq)`,
	`CREATE TABLE {t}totals (
		dataset TEXT NOT NULL, identity TEXT NOT NULL, relation TEXT NOT NULL,
		epsilon TEXT NOT NULL, delta TEXT NOT NULL, charges BIGINT NOT NULL,
		PRIMARY KEY (dataset, identity, relation))`,
	`CREATE TABLE {t}limits (
		dataset TEXT PRIMARY KEY,
		identity_epsilon DOUBLE PRECISION NOT NULL, identity_delta DOUBLE PRECISION NOT NULL,
		dataset_epsilon DOUBLE PRECISION NOT NULL, dataset_delta DOUBLE PRECISION NOT NULL,
		recorded_ns BIGINT NOT NULL)`,
}

func TestPostgresUpgradeV3(t *testing.T) {
	conn := requirePostgres(t)
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprint("v", version), func(t *testing.T) {
			schema := randomSchema(t, conn)
			quoted := `"` + schema + `"`
			exec := func(q string, args ...any) error {
				q = ledger.Dialect{Prefix: quoted + ".", Dollar: true}.SQL(strings.ReplaceAll(q, "{schema}", quoted))
				_, err := conn.Exec(ctx, q, args...)
				return err
			}
			ddl := postgresV3DDL
			if version == 2 {
				ddl = ddl[:len(ddl)-1]
			}
			for _, q := range ddl {
				if err := exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			FillV3(t, version, exec)
			s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: schema, CallTimeout: testCallTimeout}, StdLimits)
			if err != nil {
				t.Fatalf("pgledger.Open(version %d): %v", version, err)
			}
			defer s.Close()
			CheckUpgradedV3(t, s, version)
			var v, limitsTables int
			if err := conn.QueryRow(ctx, `SELECT version FROM `+quoted+`.schema_version`).Scan(&v); err != nil || v != ledger.SchemaVersion {
				t.Errorf("schema version after upgrade = %d, %v; want %d", v, err, ledger.SchemaVersion)
			}
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'limits'`, schema).Scan(&limitsTables); err != nil || limitsTables != 0 {
				t.Errorf("limits tables after upgrade = %d, %v; want 0", limitsTables, err)
			}
		})
	}
}

// BenchmarkChargeIdentitiesPostgres: a charge on a dataset of 10 and of 10,000
// identities (docs/EXPERIMENTS.md, "A charge's cost and the number of identities").
func BenchmarkChargeIdentitiesPostgres(b *testing.B) {
	conn := requirePostgres(b)
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprint("identities=", n), func(b *testing.B) {
			s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: randomSchema(b, conn), CallTimeout: testCallTimeout}, BenchLimits)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			BenchChargeIdentities(b, s, n)
		})
	}
}

func BenchmarkChargePostgres(b *testing.B) {
	conn := requirePostgres(b)
	s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: randomSchema(b, conn), CallTimeout: testCallTimeout}, BenchLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	BenchCharge(b, s)
}

// TestPostgresCallTimeout opens a store on an address that accepts connections and
// never answers (a blackholed database): Open fails with ErrUnavailable, not with a
// context error the caller would read as its own deadline, though its ctx has none:
// only the call timeout can end it. Without the bound Open would wait forever; the
// test's own guard against that hang is 200 call timeouts, so a loaded machine cannot
// fail it, and the time Open took is logged.
func TestPostgresCallTimeout(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	const timeout = 300 * time.Millisecond
	start := time.Now()
	opened := make(chan error, 1)
	go func() {
		s, err := pgledger.Open(ctx, "postgres://postgres@"+lis.Addr().String()+"/test?sslmode=disable", pgledger.Options{CallTimeout: timeout}, StdLimits)
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	select {
	case err = <-opened:
	case <-time.After(200 * timeout): // only against a hang
		t.Fatalf("Open on a database that never answers had not returned after %v; want it ended by the call timeout %v", 200*timeout, timeout)
	}
	if !errors.Is(err, ledger.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open on a database that never answers: %v, want ErrUnavailable and no context error", err)
	}
	t.Logf("Open on a database that never answers failed after %v (call timeout %v)", time.Since(start).Round(time.Millisecond), timeout)
}

// withApplicationName adds application_name=name to dsn (URL or key=value form), so
// that a test terminates its own connections only.
func withApplicationName(dsn, name string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " application_name=" + name
	case strings.Contains(dsn, "?"):
		return dsn + "&application_name=" + name
	}
	return dsn + "?application_name=" + name
}
