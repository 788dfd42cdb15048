package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/kusner"
	"github.com/privbo/privbo/pkg/ledger"
)

// forecastRunner plans like fakeRunner with a forecast that is informative only from
// ε = 2 on, and returns a result with an operator trace.
type forecastRunner struct{ fakeRunner }

func (f *forecastRunner) Plan(spec Spec) (Plan, error) {
	p, err := f.fakeRunner.Plan(spec)
	if err != nil {
		return p, err
	}
	p.Forecast = &kusner.Forecast{Candidates: 16, Epsilon: spec.Kusner.Epsilon, Margin: 0.1, HasSelection: true,
		SelectionLift: 1 + spec.Kusner.Epsilon/30, EpsilonNeeded: 2, Informative: spec.Kusner.Epsilon >= 2}
	return p, nil
}

func (f *forecastRunner) Run(ctx context.Context, spec Spec, progress func(Progress)) (Result, error) {
	res, err := f.fakeRunner.Run(ctx, spec, progress)
	res.Trace = &Trace{Grid: []hparam.Axis{{Name: "lambda", Kind: hparam.AxisList, Values: []float64{0.01, 0.1}}},
		Steps: []TraceStep{jobspec.NewTraceStep(1, 1, map[string]float64{"lambda": 0.1}, 0.87, false, []float64{0.25, 0.75})},
		Final: []float64{0.5, 1.5}, Visits: []int{0, 1}}
	return res, err
}

// TestUninformativeRefusedAtNoCost: Submit refuses a job whose forecast is not
// informative before the ledger sees it — no charge, no record, no run — and runs it when
// forced; Quote plans without charging and says whether Submit would refuse.
func TestUninformativeRefusedAtNoCost(t *testing.T) {
	r := &forecastRunner{}
	m, led := newTestManager(t, t.TempDir(), r)
	defer led.Close()
	defer m.Close()
	ctx := context.Background()
	acct := ledger.Account{Dataset: "d", Identity: "alice"}

	q, err := m.Quote(spec(1))
	if err != nil || q.Forecast == nil || !Refused(spec(1), q) || q.Relation != ledger.RelationValidationRecord || q.Cost.Epsilon != 2 {
		t.Fatalf("Quote(ε=1) = %+v, %v; want refused, validation-record, cost 2", q, err)
	}
	_, err = m.Submit(ctx, "alice", "k", spec(1))
	var ue *UninformativeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUninformative) || ue.Forecast.EpsilonNeeded != 2 {
		t.Fatalf("Submit(ε=1) = %v, want an UninformativeError carrying the forecast", err)
	}
	bal, _ := led.Balance(ctx, acct, ledger.RelationValidationRecord)
	if entries, _ := led.Entries(ctx, "d"); bal.Spent.Epsilon != 0 || len(entries) != 0 {
		t.Errorf("after the quote and the refusal: spent ε %g, %d ledger records; want none", bal.Spent.Epsilon, len(entries))
	}
	if js, _ := m.List(ctx, "alice"); len(js) != 0 || r.runs != 0 {
		t.Errorf("after the refusal: %d jobs, %d runs; want none", len(js), r.runs)
	}
	// The same key is still free: forced, the job runs and is charged.
	forced := spec(1)
	forced.Kusner.Force = true
	if Refused(forced, q) {
		t.Error("Refused(forced spec) = true, want false")
	}
	j, err := m.Submit(ctx, "alice", "k", forced)
	if err != nil {
		t.Fatal(err)
	}
	done := waitState(t, m, j.ID, Succeeded)
	bal, _ = led.Balance(ctx, acct, ledger.RelationValidationRecord)
	if bal.Spent.Epsilon != 2 {
		t.Errorf("forced job: spent ε %g, want 2", bal.Spent.Epsilon)
	}
	// Informative jobs need no force.
	if q, _ := m.Quote(spec(1.5)); !Refused(spec(1.5), q) {
		t.Error("Quote(ε=1.5) not refused")
	}
	if _, err := m.Submit(ctx, "alice", "", spec(1.5)); !errors.Is(err, ErrUninformative) {
		t.Errorf("Submit(ε=1.5) = %v, want ErrUninformative", err)
	}

	// The trace stays with the operator: in the trace table, not in the result, the job
	// record's JSON or the ledger receipt.
	tr, err := m.Trace(ctx, j.ID)
	if err != nil || len(tr.Steps) != 1 || tr.Steps[0].Score != 0.87 || tr.Steps[0].MaxDensity != 1.5 || tr.Steps[0].MinDensity != 0.5 {
		t.Fatalf("Trace = %+v, %v; want the run with max/min density 1.5/0.5", tr, err)
	}
	if done.Result.Trace != nil {
		t.Error("the stored result carries the trace")
	}
	b, _ := json.Marshal(done.Result)
	rec, _, _ := led.Get(ctx, acct, "job/"+j.ID)
	for what, s := range map[string]string{"result JSON": string(b), "ledger receipt": string(rec.Result)} {
		if strings.Contains(s, "0.87") || strings.Contains(s, "steps") {
			t.Errorf("the %s holds the trace: %s", what, s)
		}
	}
}

// TestReaderReadsTheReport: a Reader, opened while the manager is open, reads a job as
// the curator's report needs it (package jobreport renders it): the record, its events
// and the operator-only trace.
func TestReaderReadsTheReport(t *testing.T) {
	dir := t.TempDir()
	r := &forecastRunner{}
	m, led := newTestManager(t, dir, r)
	defer led.Close()
	defer m.Close()
	ctx := context.Background()
	j, err := m.Submit(ctx, "alice", "", spec(2))
	if err != nil {
		t.Fatal(err)
	}
	done := waitState(t, m, j.ID, Succeeded)
	evs, _ := m.Events(ctx, j.ID, 0)
	rd, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	oj, err := rd.Job(ctx, j.ID)
	if err != nil || oj.ID != done.ID || oj.State != Succeeded || oj.Result == nil || oj.Result.Score != done.Result.Score {
		t.Errorf("Reader.Job = %+v, %v; want the manager's %+v", oj, err, done)
	}
	if oevs, err := rd.Events(ctx, j.ID); err != nil || len(oevs) != len(evs) {
		t.Errorf("Reader.Events = %d events, %v; want the manager's %d", len(oevs), err, len(evs))
	}
	tr, err := rd.Trace(ctx, j.ID)
	if err != nil || len(tr.Steps) != 1 || tr.Steps[0].Score != 0.87 {
		t.Errorf("Reader.Trace = %+v, %v; want the runner's one step", tr, err)
	}
	if _, err := OpenReader(filepath.Join(dir, "missing")); err == nil {
		t.Error("OpenReader of a directory without jobs.db succeeded")
	}
}
