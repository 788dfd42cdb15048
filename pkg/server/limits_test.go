package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/storage"
)

// TestStartRecordsLimits: Start records the limits it enforces in the ledger, so
// that 'curator ledger' reads them, and warns when the δ budget is zero.
func TestStartRecordsLimits(t *testing.T) {
	dir := t.TempDir()
	data := smallData(t)
	cfg := config.Config{
		Listen: "127.0.0.1:0", DataPath: data, Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(dir, "state"), Budget: ledger.Cost{Epsilon: 2}, DatasetBudget: ledger.Cost{Epsilon: 3},
		DatasetID: "limits", Output: curator.OutputPrivacy{Lower: 0, Upper: 5},
	}
	if w := strings.Join(config.Warnings(cfg), "\n"); !strings.Contains(w, "--budget-delta is 0") || !strings.Contains(w, "Gaussian projection") {
		t.Errorf("Warnings(δ budget 0) = %q, want a warning naming --budget-delta and the Gaussian projection", w)
	}
	ok := cfg
	ok.Budget.Delta = config.DefaultBudgetDelta
	if w := strings.Join(config.Warnings(ok), "\n"); strings.Contains(w, "δ") {
		t.Errorf("Warnings(δ budget %g) = %q, want no δ warning", config.DefaultBudgetDelta, w)
	}
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)

	store, err := storage.OpenLedger(context.Background(), config.LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, found, err := store.RecordedLimits(context.Background(), "limits")
	want := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2}, Dataset: ledger.Cost{Epsilon: 3}}
	if err != nil || !found || r.Limits != want {
		t.Errorf("recorded limits = %+v, %v, %v; want %+v", r.Limits, found, err, want)
	}
}
