package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
)

// The PostgreSQL tests need a server: PRIVBO_TEST_POSTGRES_DSN, or the local default;
// PRIVBO_SKIP_POSTGRES=1 skips them when it cannot be reached.
func testDSN() string {
	if dsn := os.Getenv("PRIVBO_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// pgSchema returns a new schema of the test server, dropped when t ends.
func pgSchema(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		if os.Getenv("PRIVBO_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unreachable and PRIVBO_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("PostgreSQL unreachable (set PRIVBO_TEST_POSTGRES_DSN, or PRIVBO_SKIP_POSTGRES=1 to skip): %v", err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "privbo_jobs_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	return schema
}

// pgOptions opens schema with a call timeout that only guards against a hang: the
// default (5 s) is a production bound a loaded test machine can exceed.
func pgOptions(schema string) pgledger.Options {
	return pgledger.Options{Schema: schema, CallTimeout: 2 * time.Minute}
}

// pgReplica is one curator replica's view of a shared PostgreSQL schema: its own
// ledger handle and its own job manager.
type pgReplica struct {
	m      *Manager
	led    *ledger.Ledger
	runner *fakeRunner
}

// startPGReplica starts a replica whose leases last lease and which renews them and looks
// for expired ones every `every` (0: lease/3).
func startPGReplica(t *testing.T, schema string, lease, every time.Duration, r *fakeRunner) *pgReplica {
	t.Helper()
	ctx := context.Background()
	led, err := pgledger.Open(ctx, testDSN(), pgOptions(schema),
		ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.1}, Dataset: ledger.Cost{Epsilon: 5, Delta: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	e, d, err := pgledger.OpenEngine(ctx, testDSN(), pgOptions(schema))
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenPostgres(ctx, e, d, "d")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{Store: st, Dataset: "d", Ledger: led, Runner: r, Lease: lease, every: every})
	if err != nil {
		t.Fatal(err)
	}
	rep := &pgReplica{m: m, led: led, runner: r}
	t.Cleanup(func() {
		m.Close()
		led.Close()
	})
	return rep
}

// pgExec runs one statement on the test server, as an operator (or a clock) would.
func pgExec(t *testing.T, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

// messages returns job id's messages as the store holds them, joined.
func messages(t *testing.T, m *Manager, id string) string {
	t.Helper()
	evs, err := m.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range evs {
		msgs = append(msgs, e.Message)
	}
	return strings.Join(msgs, " | ")
}

func (r *pgReplica) runs() int {
	r.runner.mu.Lock()
	defer r.runner.mu.Unlock()
	return r.runner.runs
}

// watchAll collects the events of job id through m until the job ends.
func watchAll(t *testing.T, m *Manager, id string) (<-chan []Event, <-chan error) {
	evs, errs := make(chan []Event, 1), make(chan error, 1)
	go func() {
		var got []Event
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only against a hang
		defer cancel()
		err := m.Watch(ctx, "alice", id, 0, func(e Event) error { got = append(got, e); return nil })
		evs <- got
		errs <- err
	}()
	return evs, errs
}

// TestPostgresTakeoverAfterReplicaDies: a job submitted to replica A is watched through
// replica B; A dies mid-job (its runner stops and it writes nothing more, as a killed
// process would, leaving its lease to expire), B takes the job over and finishes it.
// The job is charged once, its result is written once, and the watch through B sees
// the whole story in order.
//
// The test keeps the clock: A's lease lasts an hour, so no scheduling delay of a loaded
// machine can hand a live A's job to B, and B looks for expired leases only when the
// test calls its takeOver (its own loop looks every 20 minutes). Once A is dead, the
// test moves A's lease back by the hour, as the database clock would move on; B's next
// look takes the job. Leases running out on the database's own clock are tested by
// TestPostgresTakeoversAreBounded and integration's TestJobSurvivesKilledReplica.
func TestPostgresTakeoverAfterReplicaDies(t *testing.T) {
	schema := pgSchema(t)
	a := startPGReplica(t, schema, time.Hour, 0, &fakeRunner{block: make(chan struct{}), started: make(chan string, 1)})
	release := make(chan struct{})
	b := startPGReplica(t, schema, time.Hour, 0, &fakeRunner{block: release, started: make(chan string, 1)})
	ctx := context.Background()

	j, err := a.m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	<-a.runner.started
	evsCh, errCh := watchAll(t, b.m, j.ID)
	waitState(t, b.m, j.ID, Running)

	// A retry of the submission through B finds the job: no refusal, no second charge.
	if again, err := b.m.Submit(ctx, "alice", "k1", spec(1)); err != nil || again.ID != j.ID {
		t.Fatalf("retry through B = %s, %v; want job %s", again.ID, err, j.ID)
	}
	// While A's lease runs, B's look takes nothing.
	b.m.takeOver()
	if story := messages(t, b.m, j.ID); strings.Contains(story, "taken over") {
		t.Fatalf("B took the job over from a live A: %s", story)
	}

	a.m.crash()
	pgExec(t, `UPDATE "`+schema+`".jobs SET lease_ns = lease_ns - $1 WHERE id = $2`, time.Hour.Nanoseconds(), j.ID)
	b.m.takeOver() // B's first look after A's lease ran out takes the job
	if story := messages(t, b.m, j.ID); !strings.Contains(story, "taken over: the replica running it stopped") {
		t.Fatalf("after A's lease ran out, B's look left the job: %s", story)
	}
	<-b.runner.started
	close(release)

	evs, err := <-evsCh, <-errCh
	if err != nil {
		t.Fatalf("watch through B: %v", err)
	}
	var states, msgs []string
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d; want %d (gap-free, in order)", i, e.Seq, i+1)
		}
		states = append(states, string(e.State))
		msgs = append(msgs, e.Message)
	}
	story := strings.Join(msgs, " | ")
	if len(evs) == 0 || evs[len(evs)-1].State != Succeeded || !strings.Contains(story, "taken over") {
		t.Errorf("events through B: %v\n%s\nwant a takeover, then success", states, story)
	}
	done, err := a.m.store.get(ctx, j.ID) // the store of the dead replica shows it too
	if err != nil || done.State != Succeeded || done.Result == nil || done.Result.Score != 0.9 {
		t.Errorf("job after takeover = %+v, %v; want succeeded with B's result", done, err)
	}
	if a.runs() != 1 || b.runs() != 1 {
		t.Errorf("runs = %d on A, %d on B; want 1 and 1", a.runs(), b.runs())
	}
	bal, err := b.led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if err != nil || bal.Spent.Epsilon != 2 || bal.Charges != 1 {
		t.Errorf("spent ε = %g in %d charges (%v); want 2 in 1: a takeover does not pay again", bal.Spent.Epsilon, bal.Charges, err)
	}
	rec, ok, err := b.led.Get(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, "job/"+j.ID)
	if err != nil || !ok || !strings.Contains(string(rec.Result), `"score":0.9`) {
		t.Errorf("ledger receipt = %q, %v, %v; want B's result attached", rec.Result, ok, err)
	}
}

// TestPostgresCancelThroughAnotherReplica: a job running on A is cancelled through B,
// and B's Cancel returns it cancelled. A renews every 50 ms, and so sees the request
// soon, but its lease lasts an hour: however late a loaded machine runs A's renewals, B
// cannot take the job over (and run it to success) instead.
func TestPostgresCancelThroughAnotherReplica(t *testing.T) {
	schema := pgSchema(t)
	a := startPGReplica(t, schema, time.Hour, 50*time.Millisecond, &fakeRunner{block: make(chan struct{}), started: make(chan string, 1)})
	b := startPGReplica(t, schema, time.Hour, 50*time.Millisecond, &fakeRunner{})
	ctx := context.Background()
	j, err := a.m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	<-a.runner.started
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // only against a hang
	defer cancel()
	got, err := b.m.Cancel(cctx, "alice", j.ID)
	if err != nil || got.State != Cancelled {
		t.Fatalf("cancel through B = %s, %v; want cancelled", got.State, err)
	}
	if b.runs() != 0 {
		t.Errorf("B ran the cancelled job %d times", b.runs())
	}
	// Another identity cannot see, let alone cancel, alice's job.
	if _, err := b.m.Cancel(ctx, "bob", j.ID); err != ErrNotFound {
		t.Errorf("cancel by another identity: %v; want ErrNotFound", err)
	}
}

// TestPostgresHandoverOnShutdown: a replica that shuts down hands its running job over;
// another replica runs it at once (no lease to wait for) and nothing is charged again.
// Both leases last an hour, so no lease runs out and no look times out however loaded
// the machine; B looks every 50 ms.
func TestPostgresHandoverOnShutdown(t *testing.T) {
	schema := pgSchema(t)
	a := startPGReplica(t, schema, time.Hour, 0, &fakeRunner{block: make(chan struct{}), started: make(chan string, 1)})
	b := startPGReplica(t, schema, time.Hour, 50*time.Millisecond, &fakeRunner{})
	ctx := context.Background()
	j, err := a.m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	<-a.runner.started
	a.m.Interrupt() // A's lease is an hour: only the handover lets B run the job
	done := waitState(t, b.m, j.ID, Succeeded)
	if done.Result == nil || b.runs() != 1 {
		t.Errorf("after the handover: %+v, %d runs on B; want B's result", done, b.runs())
	}
	bal, _ := b.led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if bal.Charges != 1 {
		t.Errorf("%d charges; want 1", bal.Charges)
	}
}

// TestPostgresStoresKeepDatasetsApart: two datasets' managers in one schema see only
// their own jobs, even for one identity and idempotency key.
func TestPostgresStoresKeepDatasetsApart(t *testing.T) {
	schema := pgSchema(t)
	ctx := context.Background()
	stores := map[string]*Store{}
	for _, ds := range []string{"d1", "d2"} {
		e, d, err := pgledger.OpenEngine(ctx, testDSN(), pgOptions(schema))
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenPostgres(ctx, e, d, ds)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores[ds] = st
	}
	now := time.Now()
	var wg sync.WaitGroup
	for ds, st := range stores {
		m := &Manager{store: st, cfg: Config{Dataset: ds}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := m.jobID("alice", "same")
			if _, created, err := st.insert(ctx, Job{ID: id, Identity: "alice", Key: "same", Spec: spec(1), State: Queued, Created: now, Updated: now}, "r", time.Minute); err != nil || !created {
				t.Errorf("%s: insert = %v, %v", ds, created, err)
			}
		}()
	}
	wg.Wait()
	for ds, st := range stores {
		js, err := st.list(ctx, "alice")
		if err != nil || len(js) != 1 {
			t.Errorf("%s lists %d jobs (%v); want its own 1", ds, len(js), err)
		}
	}
}

// TestPostgresTakeoversAreBounded: a job whose replicas keep dying is failed, not taken
// over once more, after MaxTakeovers takeovers, so a job that kills its replica cannot
// take down every replica in turn.
//
// A's lease (300 ms) runs out on the database's own clock once A is dead; nothing else
// here is timed. B's lease lasts an hour, so B's claim can neither time out (a look is
// bounded by a third of its lease: with a 300 ms lease, a claim committed after 100 ms
// on a loaded machine was reported failed, and its lease, run out, was claimed again,
// counting one takeover too many) nor run out before B records the job failed. B looks
// every 50 ms, so how long the test takes does not depend on B's lease.
func TestPostgresTakeoversAreBounded(t *testing.T) {
	schema := pgSchema(t)
	a := startPGReplica(t, schema, 300*time.Millisecond, time.Hour, &fakeRunner{block: make(chan struct{}), started: make(chan string, 1)})
	ctx := context.Background()
	j, err := a.m.Submit(ctx, "alice", "k1", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	<-a.runner.started
	a.m.crash()
	// As if MaxTakeovers replicas had taken the job over and died in turn.
	pgExec(t, `UPDATE "`+schema+`".jobs SET takeovers = $1 WHERE id = $2`, MaxTakeovers, j.ID)
	b := startPGReplica(t, schema, time.Hour, 50*time.Millisecond, &fakeRunner{})
	done := waitState(t, b.m, j.ID, Failed)
	if !strings.Contains(done.Error, "stopped 3 times") || b.runs() != 0 {
		t.Errorf("job after %d takeovers: %q, %d runs on B; want failed, not run again", MaxTakeovers+1, done.Error, b.runs())
	}
}

// TestAdoptJobsDB: a curator that moves from its jobs.db to the shared store keeps its
// jobs — finished ones with their result and events, unfinished ones failed as a
// restart marks them — and a retry of one finds it, charging nothing.
func TestAdoptJobsDB(t *testing.T) {
	schema := pgSchema(t)
	ctx := context.Background()
	led, err := pgledger.Open(ctx, testDSN(), pgOptions(schema),
		ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.1}, Dataset: ledger.Cost{Epsilon: 5, Delta: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	dir := t.TempDir()
	old, err := NewManager(Config{StateDir: dir, Dataset: "d", Ledger: led, Runner: &fakeRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := old.Submit(ctx, "alice", "done", spec(1))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, old, done.ID, Succeeded)
	old.Close()
	blocked := &fakeRunner{block: make(chan struct{}), started: make(chan string, 1)}
	old, err = NewManager(Config{StateDir: dir, Dataset: "d", Ledger: led, Runner: blocked})
	if err != nil {
		t.Fatal(err)
	}
	running, err := old.Submit(ctx, "alice", "running", spec(0.5))
	if err != nil {
		t.Fatal(err)
	}
	<-blocked.started
	old.crash() // left running in the file
	old.store.Close()
	// A job of another dataset served from the same directory before: no charge here.
	file, err := OpenSQLite(filepath.Join(dir, "jobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	now := time.Now()
	if _, _, err := file.insert(ctx, Job{ID: jobID("alice", "other"), Identity: "alice", Key: "other", Spec: spec(1), State: Succeeded, Created: now, Updated: now}, "", 0); err != nil {
		t.Fatal(err)
	}

	b := startPGReplica(t, schema, time.Hour, 0, &fakeRunner{})
	for range 2 { // copying again changes nothing
		got, err := Adopt(ctx, b.m.store, file, led)
		if err != nil || got.Jobs != 2 || got.Interrupted != 1 || got.Skipped != 1 {
			t.Fatalf("Adopt = %+v, %v; want 2 jobs (1 interrupted), 1 skipped", got, err)
		}
	}
	if j, err := b.m.Get(ctx, "alice", done.ID); err != nil || j.State != Succeeded || j.Result == nil || j.Result.Score != 0.9 {
		t.Errorf("adopted finished job = %+v, %v; want it with its result", j, err)
	}
	if evs, err := b.m.Events(ctx, done.ID, 0); err != nil || len(evs) < 3 || evs[len(evs)-1].State != Succeeded {
		t.Errorf("adopted events = %v, %v; want the file's, ending in success", evs, err)
	}
	if j, err := b.m.Get(ctx, "alice", running.ID); err != nil || j.State != Failed || !strings.Contains(j.Error, "interrupted") {
		t.Errorf("adopted unfinished job = %s %q, %v; want failed, interrupted", j.State, j.Error, err)
	}
	if _, err := b.m.Get(ctx, "alice", jobID("alice", "other")); err != ErrNotFound {
		t.Errorf("another dataset's job: %v; want it left in the file", err)
	}
	before, _ := led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	again, err := b.m.Submit(ctx, "alice", "done", spec(1))
	if err != nil || again.ID != done.ID || again.State != Succeeded {
		t.Errorf("retry of an adopted job = %s %s, %v; want job %s, succeeded", again.ID, again.State, err, done.ID)
	}
	after, _ := led.Balance(ctx, ledger.Account{Dataset: "d", Identity: "alice"}, ledger.RelationValidationRecord)
	if after.Charges != before.Charges || b.runs() != 0 {
		t.Errorf("charges %d → %d, %d runs; want no new charge, no run", before.Charges, after.Charges, b.runs())
	}
}
