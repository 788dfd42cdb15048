package curator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// reserveLimits leave budget for two releases of ε 0.5.
var reserveLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 1, Delta: 0.5}}

// reserveCurator is memoryCurator's curator on led (ample memory: only the budget
// bounds the computations), counting the computations it starts.
func reserveCurator(t *testing.T, led *ledger.Ledger, owner string) (*Curator, *atomic.Int64) {
	t.Helper()
	base, _ := memoryCurator(t, 2000, 4, 1<<30, 1)
	cfg := base.cfg
	cfg.Ledger, cfg.ReservationOwner, cfg.Releases = led, owner, nil
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var computed atomic.Int64
	c.computeHook = func() { computed.Add(1) }
	return c, &computed
}

// TestConcurrentReleasesReserve: 100 concurrent distinct releases with budget for 2
// are refused before any work but 2, which are computed and charged — on SQLite and
// on PostgreSQL.
func TestConcurrentReleasesReserve(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var led *ledger.Ledger
			if engine == "postgres" {
				led = postgresLedger(t, reserveLimits)
			} else {
				_, led = memoryCurator(t, 10, 2, MinMemory, 1) // its SQLite ledger, limits ε 1
			}
			c, computed := reserveCurator(t, led, "replica-a")
			const k = 100
			var refused atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range k {
				wg.Go(func() {
					<-start
					_, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 4, Epsilon: 0.5, Delta: 1e-5, Label: fmt.Sprint(i)})
					var be *ledger.BudgetError
					switch {
					case errors.As(err, &be):
						refused.Add(1)
					case err != nil:
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			if computed.Load() != 2 || refused.Load() != k-2 {
				t.Errorf("%d computed, %d refused; want 2 computed and %d refused", computed.Load(), refused.Load(), k-2)
			}
			if b, err := led.Balance(ctx, c.account("vendor"), ledger.RelationFeatureUnit); err != nil || b.Charges != 2 || b.Spent.Epsilon != 1 {
				t.Errorf("%d charges, spent %+v (%v); want 2, ε 1", b.Charges, b.Spent, err)
			}
		})
	}
}

// TestFailedReleaseCancelsReservation: a release whose computation fails (its matrix
// cannot be stored) gives its reservation back at once: the budget pays the next one.
func TestFailedReleaseCancelsReservation(t *testing.T) {
	ctx := context.Background()
	_, led := memoryCurator(t, 10, 2, MinMemory, 1)
	var log []string
	blobs := &memBlobs{blobs: map[string][]byte{}, log: &log, failPut: errors.New("disk full")}
	c, computed := reserveCurator(t, led, "replica-a")
	c.releases = blobs
	for i := range 3 { // each would hold the whole budget if it were not given back
		if _, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 4, Epsilon: 1, Delta: 1e-5, Label: fmt.Sprint("fails", i)}); err == nil {
			t.Fatal("a release whose matrix cannot be stored: no error")
		}
	}
	blobs.failPut = nil
	if _, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 4, Epsilon: 1, Delta: 1e-5, Label: "stored"}); err != nil {
		t.Fatalf("the release after three failed ones: %v, want the whole budget available", err)
	}
	if computed.Load() != 4 {
		t.Errorf("%d computations, want 4", computed.Load())
	}
}

// TestRestartRecoversReservations: budget a crashed curator left reserved is free
// again when a curator with its owner name starts (RecoverReservations), and a stale
// reservation of another owner stops blocking once it expires.
func TestRestartRecoversReservations(t *testing.T) {
	ctx := context.Background()
	_, led := memoryCurator(t, 10, 2, MinMemory, 1)
	c, _ := reserveCurator(t, led, "replica-a")
	// What a crash between reserving and committing leaves: a live reservation.
	held := func(owner, key string, ttl time.Duration) {
		if _, err := led.Reserve(ctx, []ledger.Charge{{Account: c.account("vendor"), Key: key, Kind: ledger.KindProjection,
			Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.5}}}, ledger.Hold{Owner: owner, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	held("replica-a", "projection/crashed-a", time.Hour)
	held("replica-b", "projection/crashed-b", time.Hour)
	req := ProjectionRequest{R: 4, Epsilon: 0.5, Delta: 1e-5}
	if _, err := c.ReleaseProjection(ctx, "vendor", req); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("with the budget reserved: %v, want refused", err)
	}
	restarted, computed := reserveCurator(t, led, "replica-a")
	if n, err := restarted.RecoverReservations(ctx); err != nil || n != 1 {
		t.Fatalf("RecoverReservations = %d, %v; want its 1", n, err)
	}
	if _, err := restarted.ReleaseProjection(ctx, "vendor", req); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	// replica-b's reservation still holds the rest; once expired, it does not.
	if _, err := restarted.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 4, Epsilon: 0.5, Delta: 1e-5, Label: "2"}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("with replica-b's reservation live: %v, want refused", err)
	}
	n, err := led.DropReservations(ctx, c.cfg.DatasetID, "replica-b")
	if err != nil || n != 1 {
		t.Fatalf("DropReservations(replica-b) = %d, %v", n, err)
	}
	held("replica-c", "projection/stale-c", time.Nanosecond) // expired at once
	if _, err := restarted.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 4, Epsilon: 0.5, Delta: 1e-5, Label: "2"}); err != nil {
		t.Fatalf("with only an expired reservation: %v", err)
	}
	if computed.Load() != 2 {
		t.Errorf("%d computations, want 2", computed.Load())
	}
}
