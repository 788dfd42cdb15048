package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/storage"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// replicaLedger is a PostgreSQL ledger for replicas whose ledger call timeout only
// guards against a hang: the default (5 s) is a production bound which racing
// releases on a loaded test machine exceed, failing UNAVAILABLE what was only slow.
// TestLedgerOutage tests the bound itself.
func replicaLedger(t *testing.T) config.LedgerConfig {
	lc := curatortest.PostgresLedger(t)
	lc.CallTimeout = 2 * time.Minute
	return lc
}

// TestReplicasSharePostgres runs two curator replicas on one PostgreSQL ledger, each
// with its own state directory (no shared disk): a projection released by replica A is
// replayed by replica B byte for byte and at no cost, and the budget is one: what A
// charges, B reports and enforces.
func TestReplicasSharePostgres(t *testing.T) {
	ctx := context.Background()
	lc := replicaLedger(t)
	// The dataset cap is large, so that acme's own budget (ε = 2) binds; the curator's
	// private scaling estimate (half of ε = 2, so that its forecast is not poor), charged
	// to the dataset, leaves it alone.
	budget, capped := ledger.Cost{Epsilon: 2, Delta: 1e-3}, ledger.Cost{Epsilon: 10, Delta: 1e-2}
	start := func() *curatortest.Curator {
		return curatortest.Start(t, curatortest.Options{Budget: budget, DatasetBudget: capped, Ledger: lc,
			Configure: func(c *config.Config) { c.PrivateScalingShare = 0.5 }})
	}
	a, b := start(), start()
	if a.Config.StateDir == b.Config.StateDir {
		t.Fatal("the replicas share a state directory; the test needs one each")
	}
	clientA, clientB := a.Client(t, "acme"), b.Client(t, "acme")

	// A release on A, charged once.
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 4, Epsilon: 1.5, Delta: 1e-5, Label: "replicas"}
	pa, err := curatorclient.FetchProjection(ctx, clientA, req)
	if err != nil {
		t.Fatalf("release on A: %v", err)
	}
	if pa.Replayed || pa.Budget.GetEpsilonSpent() != 1.5 {
		t.Fatalf("release on A: replayed %v, ε spent %g; want a new release charged 1.5", pa.Replayed, pa.Budget.GetEpsilonSpent())
	}

	// Replayed by B: same bytes, nothing charged.
	pb, err := curatorclient.FetchProjection(ctx, clientB, req)
	if err != nil {
		t.Fatalf("replay on B: %v", err)
	}
	sumA, sumB := sha256.Sum256(matrixio.AppendFloat64s(nil, pa.Z)), sha256.Sum256(matrixio.AppendFloat64s(nil, pb.Z))
	if !pb.Replayed || pb.ReleaseID != pa.ReleaseID || pb.Rows != pa.Rows || pb.Cols != pa.Cols || sumA != sumB {
		t.Errorf("replay on B: id %s, %d×%d, replayed %v, SHA-256 %x; want A's release %s, %d×%d, replayed, %x",
			pb.ReleaseID, pb.Rows, pb.Cols, pb.Replayed, sumB, pa.ReleaseID, pa.Rows, pa.Cols, sumA)
	}
	if got := pb.Budget.GetEpsilonSpent(); got != 1.5 {
		t.Errorf("ε spent after B's replay = %g, want 1.5 (no new charge)", got)
	}

	// The matrix is in the database, under the SHA-256 the clients received, and in
	// neither replica's state directory.
	conn, err := pgx.Connect(ctx, lc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var stored []byte
	var size int64
	if err := conn.QueryRow(ctx, `SELECT sha256, size FROM "`+lc.Schema+`".blobs WHERE name LIKE $1 || '-%'`, pa.ReleaseID).Scan(&stored, &size); err != nil {
		t.Fatalf("the release's blob in PostgreSQL: %v", err)
	}
	if !bytes.Equal(stored, sumA[:]) || size != int64(8*pa.Rows*pa.Cols) {
		t.Errorf("stored blob: SHA-256 %x, %d bytes; want %x, %d", stored, size, sumA, 8*pa.Rows*pa.Cols)
	}
	for name, c := range map[string]*curatortest.Curator{"A": a, "B": b} {
		files, err := os.ReadDir(filepath.Join(c.Config.StateDir, "releases"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if len(files) != 0 {
			t.Errorf("replica %s keeps %d release files in its state directory, want none", name, len(files))
		}
	}

	// One budget: B reports A's charge and refuses what only A's remainder would allow.
	bud, err := clientB.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := bud.GetBudget(); got.GetEpsilonSpent() != 1.5 || got.GetEpsilonRemaining() != 0.5 {
		t.Errorf("B's budget for acme: spent %g, remaining %g; want 1.5 and 0.5 (A's charge)", got.GetEpsilonSpent(), got.GetEpsilonRemaining())
	}
	over := &curatorv1.ReleaseProjectionRequest{Dimension: 4, Epsilon: 1, Delta: 1e-5, Label: "over"}
	if _, err := curatorclient.FetchProjection(ctx, clientB, over); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("release of ε = 1 on B with 0.5 left: %v, want ResourceExhausted", err)
	}
	// What is left can be spent on B, and then A sees it spent.
	rest := &curatorv1.ReleaseProjectionRequest{Dimension: 4, Epsilon: 0.5, Delta: 1e-5, Label: "rest"}
	if _, err := curatorclient.FetchProjection(ctx, clientB, rest); err != nil {
		t.Fatalf("release of the remaining ε = 0.5 on B: %v", err)
	}
	if bud, err := clientA.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil || bud.GetBudget().GetEpsilonRemaining() != 0 {
		t.Errorf("A's budget for acme after B's release: %v, %v; want nothing remaining", bud.GetBudget(), err)
	}
	if _, err := curatorclient.FetchProjection(ctx, clientA, over); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("release on A after B spent the rest: %v, want ResourceExhausted", err)
	}
}

// TestOpenReleasesByLedger checks where each ledger kind keeps the released matrices:
// the curator's files for SQLite, the ledger's PostgreSQL schema otherwise.
func TestOpenReleasesByLedger(t *testing.T) {
	ctx := context.Background()
	r, err := storage.OpenReleases(ctx, config.LedgerConfig{}, t.TempDir())
	if err != nil || r.Store != nil {
		t.Errorf("OpenReleases(sqlite) = %v, %v; want no store (the curator's files)", r.Store, err)
	}
	r.Close()
	lc := replicaLedger(t)
	r, err = storage.OpenReleases(ctx, lc, t.TempDir())
	if err != nil || r.Store == nil {
		t.Fatalf("OpenReleases(postgres) = %v, %v; want the PostgreSQL blob store", r.Store, err)
	}
	defer r.Close()
	if _, err := r.Store.Put(ctx, "probe", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatalf("Put: %v", err)
	}
	conn, err := pgx.Connect(ctx, lc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM "`+lc.Schema+`".blobs WHERE name = 'probe'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("blob rows in the ledger's schema = %d, %v; want 1", n, err)
	}
	lc.DSN = "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"
	if _, err := storage.OpenReleases(ctx, lc, t.TempDir()); err == nil {
		t.Error("OpenReleases on an unreachable database: error = nil")
	}
}

// TestReplicasAdoptStateReleases starts a replica whose state directory holds a release
// as a file, as curators on a PostgreSQL ledger kept them before their releases moved
// into the database: the replica copies it into PostgreSQL when it starts, and another
// replica, with a state directory of its own, then replays it byte for byte.
func TestReplicasAdoptStateReleases(t *testing.T) {
	ctx := context.Background()
	lc := replicaLedger(t)
	opts := func(state string) curatortest.Options {
		return curatortest.Options{Ledger: lc, StateDir: state}
	}
	a := curatortest.Start(t, opts(""))
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-5, Label: "old"}
	pa, err := curatorclient.FetchProjection(ctx, a.Client(t, "acme"), req)
	if err != nil {
		t.Fatal(err)
	}
	a.Stop(t)

	// Move the release out of the database into a state directory, as a file.
	conn, err := pgx.Connect(ctx, lc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var name string
	var data []byte
	if err := conn.QueryRow(ctx, `SELECT b.name, string_agg(c.data, ''::bytea ORDER BY c.seq) FROM "`+lc.Schema+`".blobs b
		JOIN "`+lc.Schema+`".blob_chunks c USING (name) WHERE b.name LIKE $1 || '-%' GROUP BY b.name`, pa.ReleaseID).Scan(&name, &data); err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	if err := os.MkdirAll(filepath.Join(old, "releases"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "releases", name), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM "`+lc.Schema+`".blobs WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}

	// The replica holding the file copies it into the database when it starts...
	curatortest.Start(t, opts(old))
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM "`+lc.Schema+`".blobs WHERE name = $1`, name).Scan(&n); err != nil || n != 1 {
		t.Fatalf("blobs named %s after the replica with the file started: %d, %v; want 1", name, n, err)
	}
	// ...and one without it replays it.
	b := curatortest.Start(t, opts(""))
	pb, err := curatorclient.FetchProjection(ctx, b.Client(t, "acme"), req)
	if err != nil {
		t.Fatalf("replay on a replica without the file: %v", err)
	}
	sumA, sumB := sha256.Sum256(matrixio.AppendFloat64s(nil, pa.Z)), sha256.Sum256(matrixio.AppendFloat64s(nil, pb.Z))
	if !pb.Replayed || sumA != sumB || pb.Budget.GetEpsilonSpent() != 1 {
		t.Errorf("replay: replayed %v, SHA-256 %x, ε spent %g; want a replay of %x at no cost (spent 1)", pb.Replayed, sumB, pb.Budget.GetEpsilonSpent(), sumA)
	}
}

// TestReplicasDifferentLimits: replicas on one PostgreSQL ledger cannot enforce
// different limits. A replica whose budget flags differ from the limits in force is
// refused at start; one that changes them (Config.ChangeLimits) makes every replica
// enforce the new ones from its next charge, read in the charge's own transaction —
// replica A, started with ε = 3, refuses what its own flags would allow once the limits
// in force are 2 — and racing releases through both replicas never take an identity
// past the limits in force.
func TestReplicasDifferentLimits(t *testing.T) {
	ctx := context.Background()
	lc := replicaLedger(t)
	opts := func(eps float64) curatortest.Options {
		return curatortest.Options{Scaling: curatortest.DiabetesSchema(t), Budget: ledger.Cost{Epsilon: eps, Delta: 1e-3}, DatasetBudget: ledger.Cost{Epsilon: 100, Delta: 0.5}, Ledger: lc}
	}
	a := curatortest.Start(t, opts(3))
	clientA := a.Client(t, "acme")

	// The audit's case: B at ε = 100 on A's ledger would let one identity spend 3 on
	// A and 100 on B. It is refused, naming the setting that would change the limits.
	cfgB := opts(100).Config(t)
	if _, err := server.Start(ctx, cfgB); err == nil || !strings.Contains(err.Error(), "--change-limits") || !strings.Contains(err.Error(), "differ") {
		t.Fatalf("replica B with ε = 100 on a ledger in force at 3: error = %v, want a refusal naming --change-limits", err)
	}
	// A lowers nothing by itself; B lowering the limits to 2 changes them for A too.
	lower := opts(2)
	lower.Configure = func(c *config.Config) { c.ChangeLimits = true }
	b := curatortest.Start(t, lower)
	if p := b.Server.LimitsStart().Previous; p == nil || p.PerIdentity.Epsilon != 3 || b.Server.LimitsStart().InForce.PerIdentity.Epsilon != 2 {
		t.Fatalf("B's start = %+v, want the change from 3 to 2", b.Server.LimitsStart())
	}
	clientB := b.Client(t, "acme")
	if _, err := curatorclient.FetchProjection(ctx, clientA, &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 1.5, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	// 1.5 + 1 fits A's own flags (3) but not the limits in force (2).
	_, err := curatorclient.FetchProjection(ctx, clientA, &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 1, Delta: 1e-5, Label: "over"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("ε = 1 on A after 1.5 under the limits in force (2): %v, want ResourceExhausted", err)
	}
	if bud, err := clientA.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil || bud.GetBudget().GetEpsilonLimit() != 2 || bud.GetBudget().GetEpsilonRemaining() != 0.5 {
		t.Errorf("A's GetBudget = %v, %v; want the limit in force 2, 0.5 remaining", bud.GetBudget(), err)
	}
	if _, err := curatorclient.FetchProjection(ctx, clientB, &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 0.5, Delta: 1e-5, Label: "rest"}); err != nil {
		t.Errorf("the remaining ε = 0.5 on B: %v", err)
	}

	// Races through both replicas: 6 identities, 8 releases of ε = 0.75 each,
	// alternately on A and B: 2 fit each identity's limit in force.
	const identities, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, identities*each)
	for i := range identities * each {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := a
			if i%2 == 1 {
				c = b
			}
			id := fmt.Sprintf("racer%d", i%identities)
			_, err := curatorclient.FetchProjection(ctx, c.Client(t, id), &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 0.75, Delta: 1e-5, Label: fmt.Sprint(i)})
			if err != nil && status.Code(err) != codes.ResourceExhausted {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("racing release: %v, want success or ResourceExhausted", err)
	}
	cfg, _, err := opts(2).Config(t).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.OpenLedger(ctx, lc, t.TempDir(), cfg.LedgerLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	accts, err := store.Accounts(ctx, "diabetes")
	if err != nil {
		t.Fatal(err)
	}
	for _, bal := range accts {
		if ledger.IsReserved(bal.Identity) || bal.Relation != ledger.RelationFeatureUnit {
			continue
		}
		if bal.Spent.Epsilon > 2 {
			t.Errorf("%s spent ε = %g under the feature-unit relation, above the limit in force 2", bal.Identity, bal.Spent.Epsilon)
		}
		if strings.HasPrefix(bal.Identity, "racer") && bal.Spent.Epsilon != 1.5 {
			t.Errorf("%s spent ε = %g, want 1.5 (two releases of 0.75 fit the limit in force)", bal.Identity, bal.Spent.Epsilon)
		}
	}
	h, err := store.LimitsHistory(ctx, "diabetes")
	if err != nil || len(h) != 2 || h[0].PerIdentity.Epsilon != 3 || h[1].PerIdentity.Epsilon != 2 {
		t.Errorf("limits history = %+v, %v; want 3 then 2", h, err)
	}
}
