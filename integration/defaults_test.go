package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/testlog"
)

// curatorBinary is a `curator serve` process whose standard error a test reads.
type curatorBinary struct {
	cmd    *exec.Cmd
	addr   string
	stderr *testlog.Buffer
}

// startCuratorBinary starts `curator serve` with args (and a loopback port of its
// choosing) and waits until it serves; it is killed when the test ends.
func startCuratorBinary(t *testing.T, bin string, args ...string) *curatorBinary {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	c := &curatorBinary{stderr: &testlog.Buffer{}}
	c.cmd = exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			c.addr = strings.TrimSpace(string(b))
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("curator did not start within 60 s; stderr:\n%s", c.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runModeler runs `modeler run` and returns its stdout, stderr and error.
func runModeler(bin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run"}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// ledgerEntries reads the charges of dataset id from the curator's state with
// `curator ledger --json`, per identity: the kinds charged at a cost, in order (the
// answers' zero-cost records, covered by their one charge, left out).
func ledgerEntries(t *testing.T, bin, state, id string) map[string][]string {
	t.Helper()
	out, err := exec.Command(bin, "ledger", "--state", state, "--dataset-id", id, "--json").Output()
	if err != nil {
		t.Fatalf("curator ledger --json: %v", err)
	}
	var doc struct {
		Entries []struct {
			Identity, Kind string
			Epsilon, Delta float64
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("curator ledger --json: %v\n%s", err, out)
	}
	got := map[string][]string{}
	for _, e := range doc.Entries {
		if e.Epsilon > 0 || e.Delta > 0 {
			got[e.Identity] = append(got[e.Identity], e.Kind)
		}
	}
	return got
}

// studyLine is the curator's start-up statement of how many default studies fit.
var studyLine = regexp.MustCompile(`one identity's budget holds (\d+) default stud(?:y|ies), the dataset cap (\d+) default stud`)

// TestDefaultsTwoVendors starts a real curator with the required flags only (the data,
// its target, the dataset id, the state directory and the ε budget) and has two vendors
// run `modeler run` with nothing but the curator's address and their identity, at the
// same time: both complete a study — the modeler takes r, ε and δ from the curator's
// quote — and each pays one projection and one answers' charge. The curator states at
// start how many default studies its budgets hold.
func TestDefaultsTwoVendors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	curBin, modBin := buildBinary(t, "./cmd/curator"), buildBinary(t, "./cmd/modeler")
	state := t.TempDir()
	cur := startCuratorBinary(t, curBin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--state", state, "--budget-epsilon", "10")
	m := studyLine.FindStringSubmatch(cur.stderr.String())
	if m == nil {
		t.Fatalf("the curator's start-up does not say how many default studies fit:\n%s", cur.stderr.String())
	}
	perID, inCap := atoi(t, m[1]), atoi(t, m[2])
	// ε 10 per identity and in the cap (less the private scaling estimate's ε 1), a
	// default study costing ε 1 + 1 (answers), δ shared out so as not to bind first.
	if perID != 5 || inCap < 2 {
		t.Errorf("start-up states %d default studies per identity and %d in the dataset cap, want 5 and at least 2:\n%s", perID, inCap, cur.stderr.String())
	}

	type result struct {
		stdout, stderr string
		err            error
	}
	res := map[string]*result{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, vendor := range []string{"vendor-a", "vendor-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, errOut, err := runModeler(modBin, "--curator", cur.addr, "--identity", vendor, "--json", "--quiet")
			mu.Lock()
			res[vendor] = &result{out, errOut, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for vendor, r := range res {
		if r.err != nil {
			t.Errorf("%s: modeler run with default flags: %v\nstderr:\n%s", vendor, r.err, r.stderr)
			continue
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		var got struct {
			Iterations   int     `json:"iterations"`
			R            int     `json:"r"`
			EpsilonSpent float64 `json:"epsilon_spent"`
			Quote        struct {
				RChosen        bool    `json:"r_chosen"`
				Epsilon        float64 `json:"epsilon"`
				Delta          float64 `json:"delta"`
				DefaultEpsilon bool    `json:"default_epsilon"`
				DefaultDelta   bool    `json:"default_delta"`
				Fits           bool    `json:"fits"`
				Answers        struct {
					Included bool    `json:"included"`
					Epsilon  float64 `json:"epsilon"`
				} `json:"answers"`
			} `json:"quote"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
			t.Fatalf("%s: last line is not JSON: %v\n%s", vendor, err, r.stdout)
		}
		q := got.Quote
		if got.Iterations != 50 || !q.RChosen || got.R < 1 || got.R > 10 || !q.DefaultEpsilon || !q.DefaultDelta || !q.Fits || !q.Answers.Included {
			t.Errorf("%s: %d iterations, r=%d, quote %+v; want 50 iterations of a default study with r chosen ≤ 10 and the answers paid with it", vendor, got.Iterations, got.R, q)
		}
		if want := q.Epsilon + q.Answers.Epsilon; math.Abs(got.EpsilonSpent-want) > 1e-9 {
			t.Errorf("%s spent ε=%g, want the projection's and the answers' %g", vendor, got.EpsilonSpent, want)
		}
		// The modeler says, before anything is spent, what the answers' noise is worth,
		// never calling the curator's privately estimated range public.
		if !strings.Contains(r.stderr, "study quoted by the curator (nothing is charged yet)") || strings.Contains(r.stderr, "public range") ||
			!regexp.MustCompile(`noise sd [0-9.e+-]+ on the target's range \[`).MatchString(r.stderr) {
			t.Errorf("%s: no quote before the study:\n%s", vendor, r.stderr)
		}
	}
	entries := ledgerEntries(t, curBin, state, "diabetes")
	for _, vendor := range []string{"vendor-a", "vendor-b"} {
		if got := strings.Join(entries[vendor], ","); got != "projection,query-answers" {
			t.Errorf("%s's ledger charges: %s, want projection,query-answers (in one transaction)", vendor, got)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStudyWithoutAnswersRefused: a curator whose dataset cap holds one default study
// (ε 3, a study ε 1 + 1) says so at start; a study whose answers the identity's budget
// could not also pay is refused before anything is charged; and of two vendors starting
// default studies at once, exactly one completes and the other is refused with nothing
// charged — whether its quote or the curator's joint charge refuses it. The ledger is
// read with `curator ledger --json`.
func TestStudyWithoutAnswersRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	curBin, modBin := buildBinary(t, "./cmd/curator"), buildBinary(t, "./cmd/modeler")
	state := t.TempDir()
	cur := startCuratorBinary(t, curBin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--schema", diabetesSchema, "--state", state, "--budget-epsilon", "3")
	if m := studyLine.FindStringSubmatch(cur.stderr.String()); m == nil || m[2] != "1" ||
		!strings.Contains(cur.stderr.String(), "WARNING: the dataset cap holds 1 default study") ||
		!strings.Contains(cur.stderr.String(), "--dataset-budget-epsilon") {
		t.Errorf("start-up does not state, with a warning naming the flags, that the cap holds one default study:\n%s", cur.stderr.String())
	}

	// Laplace answers at the default ε_out = 1 carry noise √2 times the range's width:
	// the start warns, naming the flag, and check-config says the same unless ε_out is
	// raised.
	const noisy = "WARNING: answer noise sd is 1.414× the range's width: expect a recommendation little better than a random row; ε_out = 2 would make it 0.71× (--output-epsilon"
	if !strings.Contains(cur.stderr.String(), noisy) {
		t.Errorf("start-up does not warn that the answers' noise exceeds the range's width:\n%s", cur.stderr.String())
	}
	for eps, warned := range map[string]bool{"1": true, "10": false} {
		out, _ := exec.Command(curBin, "check-config", "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
			"--schema", diabetesSchema, "--state", t.TempDir(), "--budget-epsilon", "30", "--output-epsilon", eps).CombinedOutput()
		if strings.Contains(string(out), noisy) != warned {
			t.Errorf("check-config --output-epsilon %s: warned %v, want %v:\n%s", eps, !warned, warned, out)
		}
	}

	// A dry run prints the quote, with what the study is worth, and charges nothing.
	out, errOut, err := runModeler(modBin, "--curator", cur.addr, "--identity", "careful", "--dry-run", "--json")
	if err != nil || !strings.Contains(errOut, "worth: answer noise sd 565.7 is 1.414× the range's width") ||
		!strings.Contains(errOut, "dry run: nothing was charged") || !strings.Contains(out, `"fits":true`) {
		t.Errorf("modeler run --dry-run: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	_, errOut, err = runModeler(modBin, "--curator", cur.addr, "--identity", "greedy", "--epsilon", "2.5", "--dry-run")
	if err == nil || !strings.Contains(errOut, "nothing was charged") {
		t.Errorf("a dry run of a study the budget cannot pay: %v\n%s", err, errOut)
	}
	if e := ledgerEntries(t, curBin, state, "diabetes"); len(e) != 0 {
		t.Errorf("dry runs left charges %v", e)
	}

	// ε 2.5 for the projection fits the budget of 3; with the answers' 1 it does not.
	_, errOut, err = runModeler(modBin, "--curator", cur.addr, "--identity", "greedy", "--epsilon", "2.5", "--iterations", "5")
	if err == nil || !strings.Contains(errOut, "the budget cannot pay the study's projection and its answers") || !strings.Contains(errOut, "nothing was charged") {
		t.Errorf("a study that cannot pay its answers: %v\n%s", err, errOut)
	}
	if e := ledgerEntries(t, curBin, state, "diabetes"); len(e) != 0 {
		t.Errorf("the refused study left charges %v", e)
	}

	// Two default studies at once, room for one.
	errs := make([]string, 2)
	ok := make([]bool, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, stderr, err := runModeler(modBin, "--curator", cur.addr, "--identity", fmt.Sprintf("racer-%d", i), "--iterations", "5", "--quiet")
			ok[i], errs[i] = err == nil, stderr
		}()
	}
	wg.Wait()
	if ok[0] == ok[1] {
		t.Fatalf("two studies racing for room for one: completed %v; stderr:\n%s\n---\n%s", ok, errs[0], errs[1])
	}
	winner, loser := 0, 1
	if !ok[0] {
		winner, loser = 1, 0
	}
	if !strings.Contains(errs[loser], "budget") {
		t.Errorf("the loser was not refused by the budget:\n%s", errs[loser])
	}
	entries := ledgerEntries(t, curBin, state, "diabetes")
	if got := strings.Join(entries[fmt.Sprintf("racer-%d", winner)], ","); got != "projection,query-answers" {
		t.Errorf("the winner's charges: %s, want projection,query-answers", got)
	}
	if got := entries[fmt.Sprintf("racer-%d", loser)]; len(got) != 0 {
		t.Errorf("the loser's charges: %v, want none", got)
	}
}
