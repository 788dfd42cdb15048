package jobs

import (
	"context"
	"errors"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// planRunner is fakeRunner with the plan a real runner states: a relation of its own
// (as an external evaluator's declared one), a whole-patient figure and a guarantee text.
type planRunner struct {
	fakeRunner
	plan Plan
}

func (r *planRunner) Plan(spec Spec) (Plan, error) {
	if _, err := r.fakeRunner.Plan(spec); err != nil {
		return Plan{}, err
	}
	return r.plan, nil
}

// TestJobStatesItsPlan: row (e) of the privacy path table (docs/PRIVACY.md §6b). The job
// the client receives (SubmitJob, GetJob) states its plan's guarantee word for word; its
// charge is the plan's (ε, δ) under the plan's relation with the plan's whole-patient
// figure; a quote charges nothing; resubmitting the same key charges nothing; a job the
// budget cannot pay is refused with nothing recorded or run. (A charge the ledger fails
// is TestSubmitReserves.)
func TestJobStatesItsPlan(t *testing.T) {
	ctx := context.Background()
	patient := ledger.PatientCost{Epsilon: 5.66, Delta: 1e-5}
	r := &planRunner{plan: Plan{Cost: ledger.Cost{Epsilon: 2.78, Delta: 1e-5}, Relation: ledger.RelationTrainingAddRemove, Patient: &patient,
		Guarantee: "(2.78, 1e-05)-DP under the training-add-remove neighbour relation. Whole patient: ε=5.66 at δ=1e-05.", Steps: 3}}
	m, led := newTestManager(t, t.TempDir(), r)
	defer led.Close()
	defer m.Close()
	alice := ledger.Account{Dataset: "d", Identity: "alice"}
	entries := func() []ledger.Receipt {
		t.Helper()
		es, err := led.Entries(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		return es
	}

	q, err := m.Quote(spec(1))
	if err != nil || q.Guarantee != r.plan.Guarantee || q.Relation != ledger.RelationTrainingAddRemove || len(entries()) != 0 {
		t.Fatalf("quote = %+v, %v, %d records; want the plan's guarantee and relation, nothing charged", q, err, len(entries()))
	}
	j, err := m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	if j.Guarantee != r.plan.Guarantee || j.Cost != r.plan.Cost {
		t.Errorf("submitted job states %q at %+v; want the plan's %q at %+v", j.Guarantee, j.Cost, r.plan.Guarantee, r.plan.Cost)
	}
	rec, ok, err := led.Get(ctx, alice, "job/"+j.ID)
	if err != nil || !ok || rec.Relation != ledger.RelationTrainingAddRemove || rec.Cost != r.plan.Cost || rec.Patient != patient {
		t.Errorf("job charge %+v (%v, %v); want %+v under training-add-remove, whole patient %+v", rec, ok, err, r.plan.Cost, patient)
	}
	done := waitState(t, m, j.ID, Succeeded)
	if done.Guarantee != r.plan.Guarantee {
		t.Errorf("finished job states %q, want %q", done.Guarantee, r.plan.Guarantee)
	}
	if again, err := m.Submit(ctx, "alice", "k1", spec(1)); err != nil || again.ID != j.ID || len(entries()) != 1 {
		t.Errorf("resubmit: %v, %v, %d records; want the same job, no new charge", again.ID, err, len(entries()))
	}
	// Over budget (ε 2.78 spent of 5; another 2.78 does not fit).
	if _, err := m.Submit(ctx, "alice", "k2", spec(1)); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("over-budget job: %v, want refused", err)
	}
	if _, err := m.Get(ctx, "alice", jobID("alice", "k2")); !errors.Is(err, ErrNotFound) || len(entries()) != 1 || r.runCount() != 1 {
		t.Errorf("over-budget job: %v, %d records, %d runs; want no job, one charge, one run", err, len(entries()), r.runCount())
	}
}

func (r *planRunner) runCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}
