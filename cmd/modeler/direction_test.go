package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// TestRunDirectionAndCLIErrors runs a minimising study through the command line and
// resumes it by name (the direction is a stored setting), and checks the command-line
// behaviour a person meets first: -h succeeds, an unknown flag is reported in one line,
// and r above the dataset's features is refused before anything is charged.
func TestRunDirectionAndCLIErrors(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	out, errOut, err := cmd("run", "--curator", srv.Addr(), "--identity", "cli-min", "--study", "m", "--studies-dir", dir,
		"--r", "5", "--epsilon", "2", "--delta", "1e-4", "--iterations", "8", "--direction", "minimize", "--json")
	if err != nil {
		t.Fatalf("run --direction minimize: %v\n%s", err, errOut)
	}
	res := lastJSON(t, out)
	if res["direction"] != "minimize" {
		t.Fatalf("result direction %v, want minimize", res["direction"])
	}
	vals := res["values"].([]any)
	lowest := vals[0].(float64)
	for _, v := range vals {
		lowest = min(lowest, v.(float64))
	}
	if res["best_value"] != lowest {
		t.Errorf("best value %v is not the lowest answer %v", res["best_value"], lowest)
	}
	if !strings.Contains(out, "lowest posterior mean") || !strings.Contains(out, "\nlowest noisy answer: ") || strings.Contains(out, "highest") {
		t.Errorf("no recommendation by the lowest posterior mean, or the lowest answer not labelled a noisy answer:\n%s", out)
	}
	// The name alone resumes it as a minimisation; asking to maximise it is refused.
	out, errOut, err = cmd("run", "--study", "m", "--studies-dir", dir, "--json")
	if err != nil || lastJSON(t, out)["direction"] != "minimize" {
		t.Fatalf("resume by name: %v, direction %v\n%s", err, lastJSON(t, out)["direction"], errOut)
	}
	if _, _, err := cmd("run", "--study", "m", "--studies-dir", dir, "--direction", "maximize"); err == nil || !strings.Contains(err.Error(), "direction") {
		t.Errorf("resume with the other direction: %v, want the settings difference", err)
	}
	if _, _, err := cmd("run", "--curator", srv.Addr(), "--direction", "up"); err == nil || !strings.Contains(err.Error(), "maximize or minimize") {
		t.Errorf("--direction up: %v", err)
	}

	// -h exits successfully (run returns flag.ErrHelp, which main maps to status 0);
	// an unknown flag comes first, in one line.
	if _, _, err := cmd("run", "--nope"); err == nil || !strings.HasPrefix(err.Error(), "flag provided but not defined: -nope") ||
		!strings.Contains(err.Error(), "'modeler run -h'") {
		t.Errorf("unknown flag: %v", err)
	}
	// The diabetes data has 10 features: r = 11 is refused before the projection is
	// charged (the identity's budget is untouched).
	_, _, err = cmd("run", "--curator", srv.Addr(), "--identity", "cli-wide", "--r", "11", "--epsilon", "2", "--delta", "1e-4", "--iterations", "3")
	if err == nil || !strings.Contains(err.Error(), "r = 11 exceeds the 10 features") || !strings.Contains(err.Error(), "--allow-r-above-d") {
		t.Errorf("--r 11 on 10 features: %v", err)
	}
	spent := map[string]float64{}
	for _, id := range []string{"cli-wide", "cli-fresh"} {
		out, _, err = cmd("run", "--curator", srv.Addr(), "--identity", id, "--r", "2", "--epsilon", "2", "--delta", "1e-4", "--iterations", "2", "--json")
		if err != nil {
			t.Fatal(err)
		}
		spent[id] = lastJSON(t, out)["epsilon_spent"].(float64)
	}
	if spent["cli-wide"] != spent["cli-fresh"] {
		t.Errorf("after the same run, the identity refused r = 11 spent ε = %v, a fresh one %v: the refusal was charged", spent["cli-wide"], spent["cli-fresh"])
	}
}

// TestInterruptedSaysHowToGoOn checks what a Ctrl-C leaves: with a study, how to resume
// it; without, that nothing was kept and how to keep one; exit status 130; with --json a
// final object marked interrupted; errors of runs no signal stopped unchanged.
// integration.TestModelerCtrlC sends the real signal to the real binary.
func TestInterruptedSaysHowToGoOn(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalCause{os.Interrupt})
	stopped := fmt.Errorf("modeler: query of rows [3]: %w", context.Canceled)
	store, err := study.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := modeler.Config{Iterations: 40}
	partial := &modeler.Result{Recommended: 12, RecommendedMean: 210, RecommendedSD: 31, BestIndex: 3, BestValue: 400,
		Iterations: 2, Queried: []int{3, 12}, Values: []float64{400, 250}}
	var out bytes.Buffer
	err = interrupted(ctx, stopped, partial, store, "s7", cfg, true, &out)
	if got := cli.ExitCode(err); got != 130 {
		t.Errorf("exit status after Ctrl-C = %d, want 130", got)
	}
	for _, want := range []string{"interrupted by Ctrl-C (SIGINT): study s7 is kept with its settings (no projection had arrived yet)",
		"`modeler run --study s7` resumes it", "recommended row so far: 12 (posterior mean 210 ± 31)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("with a study: %q lacks %q", err, want)
		}
	}
	var j struct {
		Interrupted bool  `json:"interrupted"`
		Recommended int   `json:"recommended_index"`
		Queried     []int `json:"queried"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &j); jerr != nil || !j.Interrupted || j.Recommended != 12 || len(j.Queried) != 2 {
		t.Errorf("JSON after Ctrl-C = %s (%v), want interrupted with row 12 recommended and 2 rows queried", out.String(), jerr)
	}
	out.Reset()
	err = interrupted(ctx, stopped, nil, store, "", cfg, true, &out)
	if msg := err.Error(); !strings.Contains(msg, "after 0 of 40 answers: nothing was kept") || !strings.Contains(msg, "--study NAME") || strings.Contains(msg, "so far") {
		t.Errorf("without a study: %v", err)
	}
	if !strings.Contains(out.String(), `"interrupted":true`) || !strings.Contains(out.String(), `"recommended_index":-1`) {
		t.Errorf("JSON of a run interrupted before its projection = %s", out.String())
	}
	term, cancelTerm := context.WithCancelCause(context.Background())
	cancelTerm(signalCause{syscall.SIGTERM})
	if got := cli.ExitCode(interrupted(term, stopped, nil, store, "", cfg, false, &out)); got != 143 {
		t.Errorf("exit status after SIGTERM = %d, want 143", got)
	}
	plain, cancelPlain := context.WithCancel(context.Background())
	cancelPlain()
	for _, c := range []context.Context{plain, context.Background()} {
		out.Reset()
		if err := interrupted(c, stopped, partial, store, "s7", cfg, true, &out); err != stopped || out.Len() > 0 {
			t.Errorf("a run no signal stopped: %v, printed %q; want its error unchanged and nothing printed", err, out.String())
		}
	}
}
