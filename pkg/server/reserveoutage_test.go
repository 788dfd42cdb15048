package server_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestOutageReservationClears: a release that holds an identity's whole budget fails
// while the PostgreSQL ledger is cut off, and so does the cancel of its reservation,
// which stays in the database. When the ledger is back the curator cancels it again
// before its health turns SERVING, so the identity's next release of its whole budget
// succeeds at once, not when the reservation's 2 minutes run out. The test waits on
// events: the release's computation starting, the health service's Watch stream, the
// RPCs' answers.
func TestOutageReservationClears(t *testing.T) {
	ctx := context.Background()
	lc := curatortest.PostgresLedger(t)
	direct, err := pgx.Connect(ctx, lc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	dcfg, _ := pgx.ParseConfig(lc.DSN)
	proxy := startProxy(t, net.JoinHostPort(dcfg.Host, fmt.Sprint(dcfg.Port)))
	lc.DSN = viaProxy(t, lc.DSN, proxy.addr())
	lc.CallTimeout = 2 * time.Second

	computing, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cur := curatortest.Start(t, curatortest.Options{Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Ledger: lc,
		Scaling: dataset.Scaling{Mode: dataset.ScaleNone}, Output: curator.OutputPrivacy{Lower: 0, Upper: 400},
		Configure: func(cfg *config.Config) {
			cfg.SimulationHooks = func(c *curator.Config) {
				c.SimulationProjectionSource = func() projection.Source {
					once.Do(func() { close(computing); <-resume }) // the first release waits for the cut
					return projection.SeededSource(7)
				}
			}
		}})
	conn := cur.Conn(t, "acme")
	client := curatorv1.NewCuratorServiceClient(conn)
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	health := watchHealth(t, hctx, healthpb.NewHealthClient(conn))
	health.await(t, true)

	whole := func(label string) error {
		_, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-9, Label: label})
		return err
	}
	failed := make(chan error, 1)
	go func() { failed <- whole("during-the-outage") }()
	<-computing
	proxy.Cut()
	health.await(t, false)
	close(resume)
	if err := <-failed; err == nil {
		t.Fatal("the release computed during the outage succeeded; the test needs its commit and cancel to fail")
	}
	var held int
	if err := direct.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.reservations`, lc.Schema)).Scan(&held); err != nil || held != 1 {
		t.Fatalf("reservations held after the failed release: %d (%v); the test needs its cancel to have failed", held, err)
	}

	proxy.Restore()
	serving := health.await(t, true)
	if err := direct.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.reservations`, lc.Schema)).Scan(&held); err != nil || held != 0 {
		t.Errorf("reservations held once the health is SERVING again: %d (%v), want 0", held, err)
	}
	if err := whole("after-the-outage"); err != nil {
		t.Errorf("the identity's whole budget after the ledger's return: %v, want it spent", err)
	} else {
		t.Logf("the identity's whole budget was released %v after SERVING", time.Since(serving).Round(time.Millisecond))
	}
	if !strings.Contains(cur.Logs.String(), "reservations whose cancel failed, or whose reserve got no answer, cancelled again") {
		t.Errorf("the curator did not log that it released the reservation")
	}
}
