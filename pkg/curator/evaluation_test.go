package curator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

func testCurator(t *testing.T, ev Evaluation) (*Curator, *ledger.Ledger, *dataset.Dataset) {
	t.Helper()
	return testCuratorOutput(t, ev, OutputPrivacy{})
}

func testCuratorOutput(t *testing.T, ev Evaluation, out OutputPrivacy) (*Curator, *ledger.Ledger, *dataset.Dataset) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*5)%7, 10*i)
	}
	path := filepath.Join(dir, "d.csv")
	os.WriteFile(path, []byte(b.String()), 0o600)
	ds, err := dataset.LoadCSV(path, dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir, Evaluation: ev, Output: out, AllowExactProgramAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	return c, led, ds
}

func TestManualEvaluation(t *testing.T) {
	c, led, _ := testCurator(t, Evaluation{Mode: EvaluateManual, Poll: 5 * time.Millisecond})
	ctx := context.Background()
	done := make(chan []Observation)
	go func() {
		obs, _, err := c.Query(ctx, "vendor", []int{3, 5})
		if err != nil {
			t.Error(err)
		}
		done <- obs
	}()
	// pendingOnce polls until some row is pending and returns the pending rows. It has
	// no deadline of its own (a loaded machine may take long; go test's -timeout ends
	// a hang), so it cannot fail by a timer.
	pendingOnce := func(ok func([]int) bool) []int {
		for {
			if p, _ := PendingEvaluations(ctx, led, "d"); ok(p) {
				return p
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	pending := pendingOnce(func(p []int) bool { return len(p) > 0 })
	if len(pending) != 1 || pending[0] != 3 {
		t.Fatalf("pending = %v, want [3] (rows are evaluated in order)", pending)
	}
	if err := RecordEvaluation(ctx, led, "d", 3, 42); err != nil {
		t.Fatal(err)
	}
	pendingOnce(func(p []int) bool { return len(p) == 1 && p[0] == 5 })
	if err := RecordEvaluation(ctx, led, "d", 5, -1.5); err != nil {
		t.Fatal(err)
	}
	obs := <-done
	if obs[0].Value != 42 || obs[1].Value != -1.5 {
		t.Errorf("answers = %+v, want the recorded 42 and -1.5", obs)
	}
	if err := RecordEvaluation(ctx, led, "d", 3, 43); err == nil {
		t.Error("re-recording row 3 with another value succeeded; recorded values are final")
	}
	if p, _ := PendingEvaluations(ctx, led, "d"); len(p) != 0 {
		t.Errorf("pending after recording = %v, want none", p)
	}
	// A waiting query ends with its context, and the row stays pending. The context is
	// cancelled once the row is pending (not after a fixed time, which a loaded
	// machine can overrun before the row is marked).
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.Query(cctx, "vendor", []int{7})
		errc <- err
	}()
	pendingOnce(func(p []int) bool { return len(p) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("query of an unrecorded row: %v, want the context's cancellation", err)
	}
	if p, _ := PendingEvaluations(ctx, led, "d"); len(p) != 1 || p[0] != 7 {
		t.Errorf("pending = %v, want [7]", p)
	}
}

func TestProgramEvaluation(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "eval.sh")
	// Echo back the row index times 2 as the score: proves the input arrives.
	os.WriteFile(prog, []byte("#!/bin/sh\nread line\ni=$(echo \"$line\" | sed 's/.*\"index\":\\([0-9]*\\).*/\\1/')\necho $((i * 2))\n"), 0o755)
	c, _, _ := testCurator(t, Evaluation{Mode: EvaluateProgram, Command: []string{prog}, Timeout: 5 * time.Second})
	obs, _, err := c.Query(context.Background(), "vendor", []int{4, 9})
	if err != nil {
		t.Fatal(err)
	}
	if obs[0].Value != 8 || obs[1].Value != 18 {
		t.Errorf("program answers = %+v, want 8 and 18", obs)
	}
	bad := filepath.Join(dir, "bad.sh")
	os.WriteFile(bad, []byte("#!/bin/sh\necho nonsense\n"), 0o755)
	c2, _, _ := testCurator(t, Evaluation{Mode: EvaluateProgram, Command: []string{bad}, Timeout: 5 * time.Second})
	if _, _, err := c2.Query(context.Background(), "vendor", []int{1}); !errors.Is(err, ErrEvaluation) || strings.Contains(err.Error(), "nonsense") {
		t.Errorf("garbage from the program: %v, want ErrEvaluation without the output", err)
	}
	// With private outputs a failure is a release too: it is charged, once per failure,
	// on top of the identity's one charge for its answers (paid before the first
	// evaluation).
	c3, led3, _ := testCuratorOutput(t, Evaluation{Mode: EvaluateProgram, Command: []string{bad}, Timeout: 5 * time.Second},
		OutputPrivacy{Mechanism: "laplace", Epsilon: 0.1, Lower: 0, Upper: 100})
	for k := 1; k <= 2; k++ {
		if _, _, err := c3.Query(context.Background(), "vendor", []int{1}); !errors.Is(err, ErrEvaluation) {
			t.Fatalf("failing program with private outputs: %v, want ErrEvaluation", err)
		}
		bal, _ := led3.Balance(context.Background(), ledger.Account{Dataset: "d", Identity: "vendor"}, ledger.RelationRecord)
		if want := 0.1 + 0.1*float64(k); math.Abs(bal.Spent.Epsilon-want) > 1e-12 {
			t.Errorf("after %d failures spent ε = %g, want %g", k, bal.Spent.Epsilon, want)
		}
	}
	if _, err := New(Config{Dataset: c.ds, Ledger: c.ledger, StateDir: dir, Evaluation: Evaluation{Mode: "oracle"}}); err == nil {
		t.Error("unknown evaluation mode accepted")
	}
}
