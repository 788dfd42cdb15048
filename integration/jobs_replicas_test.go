package integration

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestJobSurvivesKilledReplica runs two curator processes on one PostgreSQL ledger,
// each with a state directory of its own. A job submitted to replica A is watched
// through replica B; A is killed with SIGKILL while the job runs (its external
// evaluator is blocked, so the job is mid-run whatever the machine's speed); B takes
// the job over once A's lease expires and finishes it. The job is charged once, and B's
// watch sees the takeover and the result. The lease is 1 s, or PRIVBO_TEST_JOB_LEASE
// (docs/EXPERIMENTS.md measures the takeover at the default lease with it).
func TestJobSurvivesKilledReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real curator process")
	}
	lease := "1s"
	if v := os.Getenv("PRIVBO_TEST_JOB_LEASE"); v != "" {
		lease = v
	}
	bin := buildBinary(t, "./cmd/curator")
	lc := curatortest.PostgresLedger(t)
	// The evaluator blocks until the file release exists, leaving a file started.PID
	// for each evaluation that waited; once released it scores at once.
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	prog := filepath.Join(dir, "blocking.sh")
	os.WriteFile(prog, []byte("#!/bin/sh\ncat >/dev/null\nif [ ! -e "+release+" ]; then\n  touch "+dir+"/started.$$\n  while [ ! -e "+release+" ]; do sleep 0.05; done\nfi\necho '{\"score\": 0.5}'\n"), 0o755)
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) }) // lets the killed replica's evaluator exit
	args := func(state string) []string {
		return []string{"--data", breastCancerPath, "--target", "benign", "--schema", filepath.Join("..", "examples", "data", "breast_cancer.schema.csv"),
			"--dataset-id", "breast-cancer", "--state", state, "--ledger", "postgres", "--ledger-dsn", lc.DSN, "--ledger-schema", lc.Schema,
			"--output-lower", "0", "--output-upper", "1", "--budget-epsilon", "100", "--budget-delta", "0.5",
			"--jobs", "--job-validation-fraction", "0.3", "--kusner-k1", "0.5", "--evaluators", "blocking=" + prog, "--job-lease", lease}
	}
	a := startRealCurator(t, bin, args(t.TempDir())...)
	defer a.kill()
	b := startRealCurator(t, bin, args(t.TempDir())...)
	defer b.kill()
	ca := curatorv1.NewCuratorServiceClient(dial(t, a.addr, "tuner"))
	cb := curatorv1.NewCuratorServiceClient(dial(t, b.addr, "tuner"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	spec := kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)
	spec.GetKusner().Evaluator = "blocking"
	spec.GetKusner().Iterations = 5
	spec.GetKusner().Space = []*curatorv1.HyperparameterRange{{Name: "depth", Scale: curatorv1.HyperparameterRange_SCALE_LINEAR, Low: 1, High: 10, Count: 10}}
	j, err := ca.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "survivor", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := cb.WatchJob(ctx, &curatorv1.WatchJobRequest{Id: j.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	started := func(n int) {
		t.Helper()
		for {
			m, _ := filepath.Glob(filepath.Join(dir, "started.*"))
			if len(m) >= n {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("fewer than %d blocked evaluations before the deadline", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	started(1) // A's job is mid-run, its evaluation blocked
	if got, err := cb.GetJob(ctx, &curatorv1.GetJobRequest{Id: j.GetId()}); err != nil || got.GetState() != curatorv1.JobState_JOB_STATE_RUNNING {
		t.Fatalf("B's view of A's job = %s, %v; want running", got.GetState(), err)
	}
	killed := time.Now()
	a.kill()
	started(2) // B took the job over and its evaluation is blocked in turn
	t.Logf("B took the job over %v after A was killed (--job-lease %s)", time.Since(killed).Round(time.Millisecond), lease)
	os.WriteFile(release, nil, 0o644)

	var msgs []string
	last := curatorv1.JobState_JOB_STATE_UNSPECIFIED
	for {
		e, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("watch through B: %v (events so far: %s)", err, strings.Join(msgs, " | "))
		}
		msgs = append(msgs, e.GetMessage())
		last = e.GetState()
	}
	if last != curatorv1.JobState_JOB_STATE_SUCCEEDED || !strings.Contains(strings.Join(msgs, " | "), "taken over") {
		t.Errorf("watch through B ended in %s after: %s; want a takeover, then success", last, strings.Join(msgs, " | "))
	}
	done, err := cb.GetJob(ctx, &curatorv1.GetJobRequest{Id: j.GetId()})
	if err != nil || done.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED || done.GetResult() == nil {
		t.Fatalf("job through B = %v, %v; want succeeded with a result", done, err)
	}
	// One charge, whatever ran where: a takeover does not pay again, and a retry of the
	// submission through B returns the job.
	if got := relationBudget(t, cb, ledger.RelationValidationRecord); got.GetEpsilonSpent() != 2 {
		t.Errorf("validation-record spent ε = %g, want 2 (one job at 2ε)", got.GetEpsilonSpent())
	}
	if again, err := cb.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "survivor", Spec: spec}); err != nil || again.GetId() != j.GetId() {
		t.Errorf("retry through B = %v, %v; want job %s", again.GetId(), err, j.GetId())
	}
	// The operator's report reads the job from PostgreSQL, with no replica's state.
	odir := t.TempDir()
	rep := exec.Command(bin, "job-report", "--ledger", "postgres", "--ledger-dsn", lc.DSN, "--ledger-schema", lc.Schema,
		"--dataset-id", "breast-cancer", "--job", j.GetId(), "--out", odir)
	if b, err := rep.CombinedOutput(); err != nil {
		t.Fatalf("curator job-report --ledger postgres: %v\n%s", err, b)
	}
	if page, err := os.ReadFile(filepath.Join(odir, "index.html")); err != nil || !strings.Contains(string(page), "taken over") {
		t.Errorf("job report: %v; want the job's events, its takeover among them", err)
	}
}
