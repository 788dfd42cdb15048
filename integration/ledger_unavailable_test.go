package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/server"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestLedgerOutageIsUnavailable runs a curator on the PostgreSQL ledger (the
// shared-budget deployment), cuts its database connections, and checks that a
// release is then answered UNAVAILABLE with a message that says to retry —
// which the modeler's retry loop rides out — and that the same request
// succeeds once the curator has reconnected, charged once.
func TestLedgerOutageIsUnavailable(t *testing.T) {
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
	cfg.Ledger = server.LedgerConfig{Kind: "postgres", DSN: dsn, Schema: schema}
	cur := startCurator(t, cfg)
	client := cur.client(t, "acme")
	if _, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'`, schema); err != nil {
		t.Fatal(err)
	}
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-5}
	_, err = curatorclient.FetchProjection(ctx, client, req)
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "retry") {
		t.Errorf("release while the ledger's connections are cut: %v, want Unavailable saying to retry", err)
	}
	p, err := curatorclient.FetchProjection(ctx, client, req)
	if err != nil {
		t.Fatalf("the same release after reconnecting: %v", err)
	}
	if got := p.Budget.GetEpsilonSpent(); got != 1 {
		t.Errorf("ε spent = %g, want 1 (one charge)", got)
	}
}
