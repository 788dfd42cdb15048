package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/storage"
)

// TestStartBeats: a started curator's heartbeat bounds its reservations, so that if
// it vanishes (a rescheduled pod, which never returns under its owner name) another
// process stops counting them once ledger.DefaultLivenessWindow has passed, not
// after their hour-long time to live. The other process's clock is moved, not waited
// for.
func TestStartBeats(t *testing.T) {
	ctx := context.Background()
	cfg := config.Config{
		Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(t.TempDir(), "state"), Budget: ledger.Cost{Epsilon: 2, Delta: 1e-5}, DatasetBudget: ledger.Cost{Epsilon: 2, Delta: 1e-5},
		DatasetID: "beats", Output: curator.OutputPrivacy{Lower: 0, Upper: 5},
	}
	srv, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	charge := func(key string) []ledger.Charge {
		return []ledger.Charge{{Account: ledger.Account{Dataset: "beats", Identity: "vendor"}, Key: key, Kind: ledger.KindProjection,
			Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 2}}}
	}
	if _, err := srv.ledger.Reserve(ctx, charge("projection/held"), ledger.Hold{Owner: reservationOwner(cfg.StateDir), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	other, err := storage.OpenLedger(ctx, config.LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	now := time.Now()
	other.SetClock(func() time.Time { return now.Add(time.Second) })
	if _, err := other.Reserve(ctx, charge("projection/probe"), ledger.Hold{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("while the curator's heartbeat holds: %v, want refused", err)
	}
	other.SetClock(func() time.Time { return now.Add(ledger.DefaultLivenessWindow + time.Second) })
	if _, err := other.Reserve(ctx, charge("projection/probe"), ledger.Hold{}); err != nil {
		t.Errorf("once the curator's heartbeat lapsed: %v, want its reservation no longer counted", err)
	}
}
