package rpc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/refusal"
)

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

// TestReservationStatus: a release being made by another request is ABORTED with
// reason RELEASE_IN_PROGRESS; a refusal names what releases in progress hold.
func TestReservationStatus(t *testing.T) {
	h := &handlers{log: zap.NewNop(), limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2, Delta: 1e-5}}}
	st := status.Convert(h.status(context.Background(), fmt.Errorf("curator: ledger: reserve: key %q: %w", "projection/x", ledger.ErrReserved)))
	if st.Code() != codes.Aborted || reasonOf(st) != string(refusal.ReleaseInProgress) {
		t.Errorf("status(ErrReserved) = %v (%s), want ABORTED, %s", st, reasonOf(st), refusal.ReleaseInProgress)
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
