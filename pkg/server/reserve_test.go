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

// TestStartRecoversReservations: a start frees the budget its curator (same host and
// state directory) left reserved when it stopped without committing, and only that.
func TestStartRecoversReservations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config.Config{
		Listen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(dir, "state"), Budget: ledger.Cost{Epsilon: 2, Delta: 1e-5}, DatasetBudget: ledger.Cost{Epsilon: 2, Delta: 1e-5},
		DatasetID: "reserve", Output: curator.OutputPrivacy{Lower: 0, Upper: 5},
	}
	srv, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)

	// What a crash leaves: reservations of this curator and of another one.
	store, err := storage.OpenLedger(ctx, config.LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget})
	if err != nil {
		t.Fatal(err)
	}
	charge := func(key string) []ledger.Charge {
		return []ledger.Charge{{Account: ledger.Account{Dataset: "reserve", Identity: "vendor"}, Key: key, Kind: ledger.KindProjection,
			Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1}}}
	}
	for _, owner := range []string{reservationOwner(cfg.StateDir), "elsewhere"} {
		if _, err := store.Reserve(ctx, charge("projection/"+owner), ledger.Hold{Owner: owner, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Reserve(ctx, charge("projection/probe"), ledger.Hold{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("with the budget reserved: %v, want refused", err)
	}
	store.Close()

	srv, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown(sctx)
	store, err = storage.OpenLedger(ctx, config.LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Its own reservation is gone, the other curator's holds: room for one more ε 1.
	if _, err := store.Reserve(ctx, charge("projection/probe"), ledger.Hold{}); err != nil {
		t.Errorf("after the restart: %v, want its own reservation freed", err)
	}
	if _, err := store.Reserve(ctx, charge("projection/probe2"), ledger.Hold{}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("beyond the other curator's reservation: %v, want refused", err)
	}
}
