package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestStartRecordsLimits: Start records the limits it enforces in the ledger, so
// that 'curator ledger' reads them, and warns when the δ budget is zero.
func TestStartRecordsLimits(t *testing.T) {
	dir := t.TempDir()
	data := smallData(t)
	cfg := Config{
		Listen: "127.0.0.1:0", DataPath: data, Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(dir, "state"), Budget: ledger.Cost{Epsilon: 2}, DatasetBudget: ledger.Cost{Epsilon: 3},
		DatasetID: "limits", Output: curator.OutputPrivacy{Lower: 0, Upper: 5},
	}
	if w := strings.Join(Warnings(cfg), "\n"); !strings.Contains(w, "Config.Budget.Delta is 0") || !strings.Contains(w, "Gaussian projection") {
		t.Errorf("Warnings(δ budget 0) = %q, want a warning naming Config.Budget.Delta and the Gaussian projection", w)
	}
	ok := cfg
	ok.Budget.Delta = DefaultBudgetDelta
	if w := strings.Join(Warnings(ok), "\n"); strings.Contains(w, "δ") {
		t.Errorf("Warnings(δ budget %g) = %q, want no δ warning", DefaultBudgetDelta, w)
	}
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)

	store, err := OpenLedger(context.Background(), LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 1}})
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

// TestZeroDeltaRefusalStatus: a refusal because the δ limit is zero says so, as
// FAILED_PRECONDITION, even when the refusing code did not name the limit.
func TestZeroDeltaRefusalStatus(t *testing.T) {
	h := &handlers{log: zap.NewNop(), limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2}, Dataset: ledger.Cost{Epsilon: 2}}}
	be := &ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: ledger.Account{Dataset: "d", Identity: "acme"},
		Relation: ledger.RelationFeatureUnit, Requested: ledger.Cost{Epsilon: 1, Delta: 1e-6}, Remaining: ledger.Cost{Epsilon: 2}}
	err := h.status(context.Background(), fmt.Errorf("curator: %w", be))
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "per-identity δ budget is 0") ||
		strings.Contains(st.Message(), "budget exceeded") || strings.Contains(st.Message(), "--") {
		t.Errorf("status(zero δ limit) = %v, want FAILED_PRECONDITION naming the zero δ budget and none of the curator's flags", err)
	}
	// A δ limit above zero: a spent budget, as before.
	h.limits.PerIdentity.Delta = 1e-5
	if st := status.Convert(h.status(context.Background(), be)); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "budget exceeded") {
		t.Errorf("status(spent budget) = %v, want RESOURCE_EXHAUSTED", st)
	}
}
