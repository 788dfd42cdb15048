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
	"github.com/privbo/privbo/pkg/memory"
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

// TestMemoryWaitStatus: a request whose wait for memory gave up before its deadline is
// RESOURCE_EXHAUSTED, reason MEMORY_LIMIT, with the figures in bytes (held_bytes tells
// it from a release that never fits) and a retry hint; one whose client cancelled is
// CANCELLED.
func TestMemoryWaitStatus(t *testing.T) {
	h := &handlers{log: zap.NewNop()}
	we := &memory.WaitError{Need: 3 << 20, Held: 60 << 20, Capacity: 64 << 20, Err: context.DeadlineExceeded}
	st := status.Convert(h.status(context.Background(), fmt.Errorf("curator: waiting for memory: %w", we)))
	md := metadataOf(st)
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	if st.Code() != codes.ResourceExhausted || reasonOf(st) != string(refusal.MemoryLimit) || retry.GetRetryDelay().AsDuration() <= 0 ||
		md[refusal.KeyNeededBytes] != "3145728" || md[refusal.KeyHeldBytes] != "62914560" || md[refusal.KeyAvailableBytes] != "67108864" {
		t.Errorf("status(WaitError) = %v, metadata %v, retry %v; want RESOURCE_EXHAUSTED, MEMORY_LIMIT with the bytes and a retry hint", st, md, retry)
	}
	if !strings.Contains(st.Message(), "it needs 3 MiB; 60 MiB of 64 MiB were held") || len(st.Message()) > 300 {
		t.Errorf("message %q: want the figures in MiB, at most 300 characters", st.Message())
	}
	we.Err = context.Canceled
	if st := status.Convert(h.status(context.Background(), we)); st.Code() != codes.Canceled {
		t.Errorf("status(WaitError, cancelled) = %v, want CANCELLED", st)
	}
}

// TestStreamsPerIdentity: an identity's streams beyond Streams.PerIdentity are refused
// with a retry hint, others' are not, and a closed stream frees its place.
func TestStreamsPerIdentity(t *testing.T) {
	h := New(nil, nil, ledger.Limits{}, Streams{PerIdentity: 2}, zap.NewNop()).(*handlers)
	var closers []func()
	for range 2 {
		closed, err := h.openStream("a")
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, closed)
	}
	_, err := h.openStream("a")
	st := status.Convert(err)
	var retry bool
	for _, d := range st.Details() {
		_, retry = d.(*errdetails.RetryInfo)
	}
	if st.Code() != codes.ResourceExhausted || !retry || !strings.Contains(st.Message(), `identity "a" already has 2 release streams open`) {
		t.Errorf("a third stream of a: %v (retry hint %v), want RESOURCE_EXHAUSTED with a retry hint", err, retry)
	}
	if _, err := h.openStream("b"); err != nil {
		t.Errorf("b's stream beside a's two: %v", err)
	}
	closers[0]()
	if _, err := h.openStream("a"); err != nil {
		t.Errorf("a's stream after one closed: %v", err)
	}
}
