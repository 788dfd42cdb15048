package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curatorclient"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestLedgerBackendsTerminated runs a curator on the PostgreSQL ledger (the
// shared-budget deployment), terminates its database connections, and checks that
// the next release is served anyway — the lost connections are found out and
// replaced, and what had not committed is run again on a new one — and charged once.
// An unreachable database (UNAVAILABLE, saying to retry, within the ledger call
// timeout) is pkg/server's TestLedgerOutage, through a proxy it can cut.
func TestLedgerBackendsTerminated(t *testing.T) {
	dsn := os.Getenv("PRIVBO_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("PostgreSQL unreachable (set PRIVBO_TEST_POSTGRES_DSN): %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "privbo_it_" + hex.EncodeToString(b[:])
	// After the curator stops (cleanups run last first); a deferred Close would run
	// before, and the schema would stay.
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close(context.Background())
	})

	cfg := diabetesConfig(t, t.TempDir())
	cfg.Ledger = config.LedgerConfig{Kind: "postgres", DSN: dsn, Schema: schema}
	cur := startCurator(t, cfg)
	client := cur.client(t, "acme")
	if _, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'`, schema).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no connection of the curator to terminate")
	}
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-5}
	p, err := curatorclient.FetchProjection(ctx, client, req)
	if err != nil {
		t.Fatalf("release after %d of the ledger's connections were terminated: %v, want it served on new ones", killed, err)
	}
	if got := p.Budget.GetEpsilonSpent(); p.Replayed || got != 1 {
		t.Errorf("release: replayed %v, ε spent = %g; want a new release charged once (1)", p.Replayed, got)
	}
	again, err := curatorclient.FetchProjection(ctx, client, req)
	if err != nil || !again.Replayed || again.Budget.GetEpsilonSpent() != 1 {
		t.Errorf("the same request again: %v; want it replayed, ε spent still 1", err)
	}
}
