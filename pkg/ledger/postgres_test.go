package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The PostgreSQL tests need a server: PRIVBO_TEST_POSTGRES_DSN, or the
// local default below. They fail if it cannot be reached, unless
// PRIVBO_SKIP_POSTGRES=1.
const defaultTestDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

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
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

func postgresBackend(conn *pgx.Conn) backend {
	return backend{name: "postgres", location: func(t *testing.T) opener {
		schema := randomSchema(t, conn)
		return func(t *testing.T, limits Limits) Store {
			s, err := OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, limits)
			if err != nil {
				t.Fatalf("OpenPostgres error: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}}
}

func TestPostgresStore(t *testing.T) {
	conn := requirePostgres(t)
	runStoreSuite(t, postgresBackend(conn))
}

func TestPostgresSchemaVersion(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	s, err := OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, stdLimits)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := conn.Exec(ctx, `UPDATE "`+schema+`".schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, stdLimits); err == nil || !strings.Contains(err.Error(), "newer than this program") {
		if err == nil {
			s.Close()
		}
		t.Errorf("OpenPostgres(version 99) error = %v, want a schema version error", err)
	}
}

func TestOpenPostgresArguments(t *testing.T) {
	tests := []struct {
		dsn     string
		opt     PostgresOptions
		limits  Limits
		wantErr string
	}{
		{testDSN(), PostgresOptions{Schema: "Privbo"}, stdLimits, "must match"},
		{testDSN(), PostgresOptions{Schema: "1abc"}, stdLimits, "must match"},
		{testDSN(), PostgresOptions{Schema: `a"; DROP TABLE x; --`}, stdLimits, "must match"},
		{testDSN(), PostgresOptions{Schema: "pg_ledger"}, stdLimits, "not start with pg_"},
		{testDSN(), PostgresOptions{Schema: strings.Repeat("a", 64)}, stdLimits, "at most 63"},
		{testDSN(), PostgresOptions{MaxConns: -1}, stdLimits, "MaxConns"},
		{testDSN(), PostgresOptions{}, Limits{}, "limit epsilon"},
		{"postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", PostgresOptions{Schema: "unused"}, stdLimits, "connect to postgres"},
		{"://not a dsn", PostgresOptions{Schema: "unused"}, stdLimits, "ledger: postgres"},
	}
	for _, tt := range tests {
		s, err := OpenPostgres(ctx, tt.dsn, tt.opt, tt.limits)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("OpenPostgres(%q, %+v) error = %v, want one containing %q", tt.dsn, tt.opt, err, tt.wantErr)
		}
	}
	for _, tt := range []struct{ in, want string }{{"", DefaultPostgresSchema}, {"ledger_2", "ledger_2"}, {"_x", "_x"}} {
		if got, err := (PostgresOptions{Schema: tt.in}).schema(); err != nil || got != tt.want {
			t.Errorf("PostgresOptions{Schema: %q}.schema() = %q, %v, want %q", tt.in, got, err, tt.want)
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
	s, err := OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema, MaxConns: 1}, stdLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	acct := Account{Dataset: "d", Identity: "a"}
	if _, err := s.Balance(ctx, acct, RelationRecord); err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'`, schema).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d server processes, want the store's one", killed)
	}
	_, err = s.Balance(ctx, acct, RelationRecord)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Balance after the connection was killed: %v, want ErrUnavailable", err)
	}
	if _, err := s.Balance(ctx, acct, RelationRecord); err != nil {
		t.Errorf("Balance after reconnecting: %v", err)
	}
	if _, err := OpenPostgres(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", PostgresOptions{}, stdLimits); !errors.Is(err, ErrUnavailable) {
		t.Errorf("OpenPostgres on a closed port: %v, want ErrUnavailable", err)
	}
}
