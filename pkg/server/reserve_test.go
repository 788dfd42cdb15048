package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestStartRecoversReservations: a start frees the budget its curator (same host and
// state directory) left reserved when it stopped without committing, and only that.
func TestStartRecoversReservations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{
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
	store, err := OpenLedger(ctx, LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget})
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
	store, err = OpenLedger(ctx, LedgerConfig{}, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget})
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

// TestReservationStatus: a release being made by another request is ABORTED with
// reason RELEASE_IN_PROGRESS; a refusal names what releases in progress hold.
func TestReservationStatus(t *testing.T) {
	h := &handlers{log: zap.NewNop(), limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2, Delta: 1e-5}}}
	st := status.Convert(h.status(context.Background(), fmt.Errorf("curator: ledger: reserve: key %q: %w", "projection/x", ledger.ErrReserved)))
	if st.Code() != codes.Aborted || reasonOf(st) != ReasonReleaseInProgress {
		t.Errorf("status(ErrReserved) = %v (%s), want ABORTED, %s", st, reasonOf(st), ReasonReleaseInProgress)
	}
	be := &ledger.BudgetError{Scope: ledger.ScopeIdentity, Account: ledger.Account{Dataset: "d", Identity: "acme"}, Relation: ledger.RelationFeatureUnit,
		Requested: ledger.Cost{Epsilon: 1}, Remaining: ledger.Cost{Epsilon: 0.5}, Limit: ledger.Cost{Epsilon: 2, Delta: 1e-5}, Reserved: ledger.Cost{Epsilon: 1.5}}
	st = status.Convert(h.status(context.Background(), be))
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "reserved by releases being computed") {
		t.Errorf("status(refusal with reservations) = %v, want RESOURCE_EXHAUSTED saying what is reserved", st)
	}
	if md := metadataOf(st); md["reserved_epsilon"] != "1.5" {
		t.Errorf("metadata %v, want reserved_epsilon 1.5", md)
	}
}

// errorInfo returns st's google.rpc.ErrorInfo (nil if none).
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			return i
		}
	}
	return nil
}

func reasonOf(st *status.Status) string { return errorInfo(st).GetReason() }

func metadataOf(st *status.Status) map[string]string { return errorInfo(st).GetMetadata() }
