package jobs

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/ledger"
)

// fakeRunner costs the spec's ε and, when run, reports steps and returns a result.
// It blocks until release is closed if block is set.
type fakeRunner struct {
	block   chan struct{}
	fail    error
	started chan string
	mu      sync.Mutex
	runs    int
}

func (f *fakeRunner) Plan(spec Spec) (Plan, error) {
	if spec.Kusner == nil {
		return Plan{}, errors.New("fake: kusner only")
	}
	if spec.Kusner.Epsilon <= 0 {
		return Plan{}, ErrInvalidSpec
	}
	return Plan{Cost: ledger.Cost{Epsilon: 2 * spec.Kusner.Epsilon, Delta: 2 * spec.Kusner.Delta}, Guarantee: "fake", Steps: 3}, nil
}

func (f *fakeRunner) Run(ctx context.Context, spec Spec, progress func(Progress)) (Result, error) {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	if f.started != nil {
		select { // a run nobody waits for (a test that went wrong) must not hang Close
		case f.started <- "run":
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	for i := 1; i <= 3; i++ {
		progress(Progress{Step: i, Total: 3, Message: "step"})
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	if f.fail != nil {
		return Result{}, f.fail
	}
	return Result{Score: 0.9, HasHyperparameters: true, Hyperparameters: map[string]float64{"lambda": 0.1}, Epsilon: 2 * spec.Kusner.Epsilon}, nil
}

func newTestManager(t *testing.T, dir string, r Runner) (*Manager, *ledger.Ledger) {
	t.Helper()
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.1}, Dataset: ledger.Cost{Epsilon: 5, Delta: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{StateDir: dir, Dataset: "d", Ledger: led, Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	return m, led
}

func spec(eps float64) Spec {
	return Spec{Kusner: &KusnerSpec{Algorithm: 1, Iterations: 5, Epsilon: eps, Delta: 1e-3}}
}

func waitState(t *testing.T, m *Manager, id string, want State) Job {
	t.Helper()
	// Watch wakes on the job's events (and looks at the store every poll), so the wait
	// ends when the event is written, however loaded the machine; the deadline only
	// bounds a test that would otherwise hang.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errReached := errors.New("reached")
	err := m.Watch(ctx, "alice", id, 0, func(e Event) error {
		if e.State == want {
			return errReached
		}
		return nil
	})
	j, gerr := m.Get(context.Background(), "alice", id)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if err != errReached {
		t.Fatalf("job %s state = %s, want %s (watch: %v)", id, j.State, want, err)
	}
	return j
}

func TestSubmitRunsAndCharges(t *testing.T) {
	dir := t.TempDir()
	m, led := newTestManager(t, dir, &fakeRunner{})
	defer led.Close()
	defer m.Close()
	ctx := context.Background()
	j, err := m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	done := waitState(t, m, j.ID, Succeeded)
	if done.Result == nil || done.Result.Score != 0.9 || done.Result.Hyperparameters["lambda"] != 0.1 {
		t.Errorf("result = %+v, want the runner's", done.Result)
	}
	bal, _ := led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if bal.Spent.Epsilon != 2 {
		t.Errorf("spent ε = %g, want 2 (the plan's cost)", bal.Spent.Epsilon)
	}
	rec, ok, err := led.Get(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, "job/"+j.ID)
	if err != nil || !ok || !strings.Contains(string(rec.Result), `"score":0.9`) {
		t.Errorf("ledger receipt of the job = %q, %v, %v; want the result attached", rec.Result, ok, err)
	}
	if rec.Relation != ledger.RelationValidationRecord {
		t.Errorf("ledger receipt of a Kusner job is stated for %s, want %s", rec.Relation, ledger.RelationValidationRecord)
	}

	// Same key, same spec: the same job, no new charge, no new run.
	again, err := m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil || again.ID != j.ID {
		t.Fatalf("resubmit = %v, %v; want job %s", again.ID, err, j.ID)
	}
	// Same key, other spec: refused.
	if _, err := m.Submit(ctx, "alice", "k1", spec(0.5)); !errors.Is(err, ErrKeyReused) {
		t.Errorf("key reuse with another spec: %v, want ErrKeyReused", err)
	}
	bal, _ = led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if bal.Spent.Epsilon != 2 {
		t.Errorf("spent ε after resubmits = %g, want 2", bal.Spent.Epsilon)
	}
	// Another identity cannot see the job.
	if _, err := m.Get(ctx, "bob", j.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get by another identity: %v, want ErrNotFound", err)
	}
	// Events: accepted, running, 3 steps, succeeded — in order.
	var states []State
	err = m.Watch(ctx, "alice", j.ID, 0, func(e Event) error { states = append(states, e.State); return nil })
	if err != nil || len(states) != 6 || states[0] != Queued || states[1] != Running || states[5] != Succeeded {
		t.Errorf("Watch = %v, %v; want queued, running ×4, succeeded", states, err)
	}
}

func TestOverBudgetRefusedBeforeRunning(t *testing.T) {
	r := &fakeRunner{}
	m, led := newTestManager(t, t.TempDir(), r)
	defer led.Close()
	defer m.Close()
	_, err := m.Submit(context.Background(), "alice", "", spec(3)) // costs 6 > 5
	var be *ledger.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("Submit over budget: %v, want a BudgetError", err)
	}
	if jobs, _ := m.List(context.Background(), "alice"); len(jobs) != 0 || r.runs != 0 {
		t.Errorf("after refusal: %d jobs, %d runs; want none", len(jobs), r.runs)
	}
	if _, err := m.Submit(context.Background(), "alice", "", spec(0)); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("invalid spec: %v, want ErrInvalidSpec", err)
	}
}

func TestCancelAndErrors(t *testing.T) {
	r := &fakeRunner{block: make(chan struct{})}
	m, led := newTestManager(t, t.TempDir(), r)
	defer led.Close()
	defer m.Close()
	ctx := context.Background()
	j, err := m.Submit(ctx, "alice", "", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, m, j.ID, Running)
	c, err := m.Cancel(ctx, "alice", j.ID)
	if err != nil || c.State != Cancelled {
		t.Fatalf("Cancel = %s, %v; want cancelled", c.State, err)
	}

	r2 := &fakeRunner{fail: errors.New("secret detail 123.45")}
	m2, led2 := newTestManager(t, t.TempDir(), r2)
	defer led2.Close()
	defer m2.Close()
	j2, _ := m2.Submit(ctx, "alice", "", spec(1))
	f := waitState(t, m2, j2.ID, Failed)
	if strings.Contains(f.Error, "secret") || !strings.Contains(f.Error, "internal error") {
		t.Errorf("private error reached the job record: %q", f.Error)
	}
	r3 := &fakeRunner{fail: jobspec.Publicf("evaluator timed out after 1s")}
	m3, led3 := newTestManager(t, t.TempDir(), r3)
	defer led3.Close()
	defer m3.Close()
	j3, _ := m3.Submit(ctx, "alice", "", spec(1))
	if f := waitState(t, m3, j3.ID, Failed); f.Error != "evaluator timed out after 1s" {
		t.Errorf("public error = %q, want the runner's message", f.Error)
	}
}

func TestRestartMarksInterrupted(t *testing.T) {
	dir := t.TempDir()
	r := &fakeRunner{block: make(chan struct{})}
	m, led := newTestManager(t, dir, r)
	ctx := context.Background()
	j, err := m.Submit(ctx, "alice", "key", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, m, j.ID, Running)
	m.Close() // shutdown interrupts the running job
	led.Close()

	m2, led2 := newTestManager(t, dir, &fakeRunner{})
	defer led2.Close()
	defer m2.Close()
	got, err := m2.Get(ctx, "alice", j.ID)
	if err != nil || got.State != Failed || !strings.Contains(got.Error, "interrupted") {
		t.Fatalf("after restart: %s %q %v; want failed, interrupted", got.State, got.Error, err)
	}
	bal, _ := led2.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if bal.Spent.Epsilon != 2 {
		t.Errorf("spent ε after an interrupted job = %g, want 2 (the charge stays)", bal.Spent.Epsilon)
	}
	// Resubmitting the same key returns the failed job; it does not run or charge again.
	again, err := m2.Submit(ctx, "alice", "key", spec(1))
	if err != nil || again.ID != j.ID || again.State != Failed {
		t.Errorf("resubmit after restart = %s %s %v", again.ID, again.State, err)
	}
}

// TestWatchFinishedJobReturns: a watcher that asks for events after the last one of a
// finished job gets an empty, ended stream instead of hanging.
func TestWatchFinishedJobReturns(t *testing.T) {
	m, led := newTestManager(t, t.TempDir(), &fakeRunner{})
	defer led.Close()
	defer m.Close()
	j, err := m.Submit(context.Background(), "alice", "", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, m, j.ID, Succeeded)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only against a hang
	defer cancel()
	n := 0
	if err := m.Watch(ctx, "alice", j.ID, 1000, func(Event) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("Watch after the last event = %d events, %v; want an immediate, empty end", n, err)
	}
}

// TestReplayedChargeOnAnotherReplicaDoesNotRun: two curator replicas, each with its own
// jobs.db, share one ledger. A retry of a job on the replica that did not accept it
// replays the ledger charge; it must not run the job again (a second release for one
// charge, docs/MATHS.md §7) and must say why.
func TestReplayedChargeOnAnotherReplicaDoesNotRun(t *testing.T) {
	shared := t.TempDir()
	led, err := ledger.OpenSQLite(filepath.Join(shared, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.1}, Dataset: ledger.Cost{Epsilon: 5, Delta: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	ra, rb := &fakeRunner{}, &fakeRunner{}
	a, err := NewManager(Config{StateDir: t.TempDir(), Dataset: "d", Ledger: led, Runner: ra})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewManager(Config{StateDir: t.TempDir(), Dataset: "d", Ledger: led, Runner: rb})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()

	j, err := a.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, a, j.ID, Succeeded)

	_, err = b.Submit(ctx, "alice", "k1", spec(1))
	if !errors.Is(err, ErrAcceptedElsewhere) || !errors.Is(err, ErrKeyReused) {
		t.Fatalf("retry on another replica: %v; want ErrAcceptedElsewhere (and ErrKeyReused, which the server maps)", err)
	}
	if !strings.Contains(err.Error(), "another curator replica") {
		t.Errorf("error %q does not tell the modeler where the job is", err)
	}
	if jobs, _ := b.List(ctx, "alice"); len(jobs) != 0 {
		t.Errorf("replica b recorded %d jobs; want none", len(jobs))
	}
	ra.mu.Lock()
	runsA := ra.runs
	ra.mu.Unlock()
	rb.mu.Lock()
	runsB := rb.runs
	rb.mu.Unlock()
	if runsA != 1 || runsB != 0 {
		t.Errorf("runs = %d on a, %d on b; want 1 and 0 (one release for one charge)", runsA, runsB)
	}
	bal, _ := led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if bal.Spent.Epsilon != 2 || bal.Charges != 1 {
		t.Errorf("spent ε = %g in %d charges; want 2 in 1", bal.Spent.Epsilon, bal.Charges)
	}
	// The replica that accepted the job still answers the retry with it.
	if again, err := a.Submit(ctx, "alice", "k1", spec(1)); err != nil || again.ID != j.ID {
		t.Errorf("retry on the accepting replica = %s, %v; want job %s", again.ID, err, j.ID)
	}
}

// TestConcurrentIdenticalSubmitsOneJob: identical submissions racing on one manager get
// the one job, not a refusal meant for another replica's job, and it runs once.
func TestConcurrentIdenticalSubmitsOneJob(t *testing.T) {
	r := &fakeRunner{}
	m, led := newTestManager(t, t.TempDir(), r)
	defer led.Close()
	defer m.Close()
	ctx := context.Background()
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := m.Submit(ctx, "alice", "same", spec(1))
			ids[i], errs[i] = j.ID, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("submission %d = %s, %v; want job %s", i, ids[i], errs[i], ids[0])
		}
	}
	waitState(t, m, ids[0], Succeeded)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs != 1 {
		t.Errorf("runs = %d, want 1", r.runs)
	}
}

func TestJobRelation(t *testing.T) {
	for _, tt := range []struct {
		spec Spec
		want ledger.Relation
	}{
		{Spec{Kusner: &KusnerSpec{}}, ledger.RelationValidationRecord},
		{Spec{DPHyPO: &DPHyPOSpec{}}, ledger.RelationTrainingAddRemove},
		{Spec{}, ledger.RelationRecord},
	} {
		if got := jobRelation(tt.spec); got != tt.want {
			t.Errorf("jobRelation(%s) = %s, want %s", tt.spec.Kind(), got, tt.want)
		}
	}
}

// stubbornRunner is a runner whose Run reports when it sees its context cancelled and
// returns only when the test closes release: it stands for a job slow to stop. If
// heedCancel is false it ignores cancellation altogether and succeeds once released.
type stubbornRunner struct {
	fakeRunner
	heedCancel bool
	running    chan struct{} // closed when Run starts
	sawCancel  chan struct{} // closed when Run sees ctx done
	release    chan struct{}
	stopOnce   sync.Once
}

// stop lets Run return; a test defers it so that a failed test does not leave Close
// waiting for the job.
func (s *stubbornRunner) stop() { s.stopOnce.Do(func() { close(s.release) }) }

func newStubbornRunner(heedCancel bool) *stubbornRunner {
	return &stubbornRunner{heedCancel: heedCancel, running: make(chan struct{}), sawCancel: make(chan struct{}), release: make(chan struct{})}
}

func (s *stubbornRunner) Run(ctx context.Context, spec Spec, progress func(Progress)) (Result, error) {
	close(s.running)
	if !s.heedCancel { // it ignores the cancellation, but the test may wait for it
		go func() {
			select {
			case <-ctx.Done():
				close(s.sawCancel)
			case <-s.release:
			}
		}()
	}
	if s.heedCancel {
		<-ctx.Done()
		close(s.sawCancel)
		<-s.release
		return Result{}, ctx.Err()
	}
	<-s.release
	return Result{Score: 0.5, Epsilon: 2 * spec.Kusner.Epsilon}, nil
}

type cancelResult struct {
	job Job
	err error
}

// TestCancelReturnsWhenJobStops: Cancel waits for the job's own end, not a poll: it has
// not returned while the runner is still stopping, and returns the cancelled job once
// the runner returns. The manager looks at its store only every hour here, so a Cancel
// that waited for a look instead of the job's end would not return before the test's
// guard against a hang.
func TestCancelReturnsWhenJobStops(t *testing.T) {
	r := newStubbornRunner(true)
	dir := t.TempDir()
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.1}, Dataset: ledger.Cost{Epsilon: 5, Delta: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	m, err := NewManager(Config{StateDir: dir, Dataset: "d", Ledger: led, Runner: r, every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer r.stop()
	ctx := context.Background()
	j, err := m.Submit(ctx, "alice", "", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	<-r.running
	res := make(chan cancelResult, 1)
	go func() {
		c, err := m.Cancel(ctx, "alice", j.ID)
		res <- cancelResult{c, err}
	}()
	<-r.sawCancel // the runner was told to stop, and has not stopped yet
	select {
	case got := <-res:
		t.Fatalf("Cancel returned %s, %v while the job was still running", got.job.State, got.err)
	default:
	}
	r.stop()
	var got cancelResult
	select {
	case got = <-res:
	case <-time.After(2 * time.Minute): // only against a hang
		t.Fatal("Cancel did not return after the job stopped")
	}
	if got.err != nil || got.job.State != Cancelled {
		t.Fatalf("Cancel = %s, %v; want cancelled", got.job.State, got.err)
	}
	m.mu.Lock()
	n := len(m.running)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d jobs still registered as running after Cancel returned", n)
	}

	// Cancelling a finished job returns it as it is.
	again, err := m.Cancel(ctx, "alice", j.ID)
	if err != nil || again.State != Cancelled {
		t.Errorf("Cancel of a cancelled job = %s, %v; want cancelled, no error", again.State, err)
	}
	// Another identity cannot cancel (or learn of) the job.
	if _, err := m.Cancel(ctx, "bob", j.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel by another identity: %v, want ErrNotFound", err)
	}
}

// TestCancelFinishedJob: a succeeded job is returned unchanged.
func TestCancelFinishedJob(t *testing.T) {
	m, led := newTestManager(t, t.TempDir(), &fakeRunner{})
	defer led.Close()
	defer m.Close()
	j, err := m.Submit(context.Background(), "alice", "", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, m, j.ID, Succeeded)
	c, err := m.Cancel(context.Background(), "alice", j.ID)
	if err != nil || c.State != Succeeded || c.Result == nil {
		t.Errorf("Cancel of a succeeded job = %s (result %v), %v; want it unchanged", c.State, c.Result, err)
	}
}

// TestCancelHonoursContext: with a job that does not stop, Cancel returns ctx's error
// once ctx ends (ended by the test once the job was told to stop), leaves no goroutine
// behind, and a done ctx requests nothing.
func TestCancelHonoursContext(t *testing.T) {
	r := newStubbornRunner(false)
	m, led := newTestManager(t, t.TempDir(), r)
	defer led.Close()
	defer m.Close()
	defer r.stop()
	bg := context.Background()
	j, err := m.Submit(bg, "alice", "", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	<-r.running
	waitState(t, m, j.ID, Running)

	// cancelWithin calls Cancel on another goroutine, then runs meanwhile (if set), so
	// that a Cancel that ignored ctx fails the test instead of hanging it.
	cancelWithin := func(ctx context.Context, meanwhile func()) error {
		res := make(chan error, 1)
		go func() {
			_, err := m.Cancel(ctx, "alice", j.ID)
			res <- err
		}()
		if meanwhile != nil {
			meanwhile()
		}
		select {
		case err := <-res:
			return err
		case <-time.After(2 * time.Minute): // only against a hang
			t.Fatal("Cancel did not return after its ctx ended")
			return nil
		}
	}

	// An already-cancelled ctx: an error at once, and the job is not touched.
	done, cancel := context.WithCancel(bg)
	cancel()
	if err := cancelWithin(done, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Cancel with a cancelled ctx: %v, want context.Canceled", err)
	}
	m.mu.Lock()
	rj, ok := m.running[j.ID]
	m.mu.Unlock()
	if !ok {
		t.Fatal("job no longer registered as running")
	}
	select {
	case <-rj.done:
		t.Fatal("job ended after a Cancel whose ctx was already done")
	case <-r.sawCancel:
		t.Fatal("job told to stop by a Cancel whose ctx was already done")
	default:
	}

	// ctx ends while Cancel waits for a job that ignores cancellation: once the job was
	// told to stop, Cancel waits for its end, and the test ends ctx.
	cctx, cancel := context.WithCancel(bg)
	if err := cancelWithin(cctx, func() { <-r.sawCancel; cancel() }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Cancel whose ctx is cancelled while the job runs: %v, want context.Canceled", err)
	}
	// Twenty more whose deadline expires, one after another on one goroutine, which
	// counts the goroutines before and after: any left over were started by Cancel.
	type loopResult struct {
		before, after int
		err           error
	}
	loop := make(chan loopResult, 1)
	go func() {
		var lr loopResult
		lr.before = runtime.NumGoroutine()
		for range 20 {
			ctx, cancel := context.WithTimeout(bg, 5*time.Millisecond)
			_, err := m.Cancel(ctx, "alice", j.ID)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				lr.err = err
				break
			}
		}
		lr.after = runtime.NumGoroutine()
		loop <- lr
	}()
	var lr loopResult
	select {
	case lr = <-loop:
	case <-time.After(2 * time.Minute): // only against a hang
		t.Fatal("20 Cancels with a 5 ms deadline did not return")
	}
	if lr.err != nil {
		t.Fatalf("Cancel whose ctx expires while the job runs: %v, want context.DeadlineExceeded", lr.err)
	}
	if lr.after > lr.before+2 {
		t.Errorf("goroutines: %d before 20 abandoned Cancels, %d after; want no growth", lr.before, lr.after)
	}

	// The runner ignores the cancellation and finishes: its result is recorded.
	r.stop()
	<-rj.done
	if got, err := m.Get(bg, "alice", j.ID); err != nil || !got.State.Terminal() {
		t.Errorf("after the runner returned: %s, %v; want a final state", got.State, err)
	}
}

// TestChargeRelationFollowsPlan: a job is charged under the relation its plan's
// guarantee states, and under its kind's default when the plan names none.
func TestChargeRelationFollowsPlan(t *testing.T) {
	dp := Spec{DPHyPO: &DPHyPOSpec{}}
	if got := chargeRelation(dp, Plan{Relation: ledger.RelationRecord}); got != ledger.RelationRecord {
		t.Errorf("charge relation with a plan stating record = %s, want record", got)
	}
	if got := chargeRelation(dp, Plan{}); got != ledger.RelationTrainingAddRemove {
		t.Errorf("charge relation with no stated relation = %s, want the DP-HyPO default", got)
	}
}
