package jobs

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// failingCommit is a ledger whose commits fail, recording nothing.
type failingCommit struct{ Ledger }

func (failingCommit) Commit(context.Context, *ledger.Reservation, []ledger.Charge) ([]ledger.Receipt, error) {
	return nil, ledger.ErrUnavailable
}

// TestSubmitReserves: a job's cost is reserved before it is recorded: budget held by a
// release in progress refuses it before anything is recorded, and a submission whose
// charge fails after its job was recorded never runs, spends nothing, and gives its
// reservation back.
func TestSubmitReserves(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := &fakeRunner{}
	m, led := newTestManager(t, dir, r)
	defer led.Close()
	defer m.Close()
	alice := ledger.Account{Dataset: "d", Identity: "alice"}
	held, err := led.Reserve(ctx, []ledger.Charge{{Account: alice, Key: "projection/p", Kind: ledger.KindProjection,
		Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 4}}}, ledger.Hold{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Submit(ctx, "alice", "k1", spec(1)); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("a job of ε 2 with ε 4 of 5 reserved: %v, want refused", err)
	}
	if _, err := m.Get(ctx, "alice", jobID("alice", "k1")); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused job: %v, want no record", err)
	}
	if err := led.Cancel(ctx, held); err != nil {
		t.Fatal(err)
	}
	m.Close()

	// The ledger fails the charge after the job is recorded.
	m2, err := NewManager(Config{StateDir: filepath.Join(dir), Dataset: "d", Ledger: failingCommit{led}, Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if _, err := m2.Submit(ctx, "alice", "k2", spec(2)); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("a job whose charge fails: %v, want the ledger's error", err)
	}
	j, err := m2.Get(ctx, "alice", jobID("alice", "k2"))
	if err != nil || j.State != Failed {
		t.Errorf("the uncharged job: %+v, %v; want recorded as failed", j, err)
	}
	if b, _ := led.Balance(ctx, alice, ledger.RelationValidationRecord); b.Charges != 0 || r.runs != 0 {
		t.Errorf("%d charges, %d runs; want none", b.Charges, r.runs)
	}
	// Its reservation was cancelled: the whole budget is there.
	if _, err := led.Reserve(ctx, []ledger.Charge{{Account: alice, Key: "projection/q", Kind: ledger.KindProjection,
		Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 5}}}, ledger.Hold{}); err != nil {
		t.Errorf("the whole budget after the failed submission: %v", err)
	}
}
