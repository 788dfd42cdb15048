package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/study"
)

// TestSettingFlags checks that every stored setting and connection field has a flag of
// `modeler run` in settingFlags, and that every flag named there exists.
func TestSettingFlags(t *testing.T) {
	vals, err := storedValues(&study.Study{Settings: study.Settings{R: 1},
		Connection: study.Connection{Curator: "a", Identity: "b", CA: "c", Cert: "d", Key: "e", TokenFile: "f", ServerName: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range vals {
		if _, ok := settingFlags[k]; !ok {
			t.Errorf("stored setting %q has no flag in settingFlags", k)
		}
	}
	if len(vals) != len(settingFlags) {
		t.Errorf("%d stored names, %d in settingFlags: the table names settings that are not stored", len(vals), len(settingFlags))
	}
	var help bytes.Buffer
	if err := run([]string{"run", "-h"}, &help, &help); err == nil || !strings.Contains(help.String(), "Usage of modeler run") {
		t.Fatalf("run -h: %v\n%s", err, help.String())
	}
	for k, fl := range settingFlags {
		if !strings.Contains(help.String(), "  -"+fl+" ") && !strings.Contains(help.String(), "  -"+fl+"\n") {
			t.Errorf("setting %s maps to --%s, which modeler run does not have", k, fl)
		}
	}
}

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
	if !strings.Contains(out, "lowest posterior mean") {
		t.Errorf("no recommendation by the lowest posterior mean:\n%s", out)
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

// TestInterruptedSaysHowToGoOn checks the line a Ctrl-C leaves: with a study, how to
// resume it; without, that nothing was kept and how to keep one; other errors unchanged.
func TestInterruptedSaysHowToGoOn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := fmt.Errorf("modeler: query of rows [3]: %w", context.Canceled)
	if err := interrupted(ctx, stopped, "s7"); !strings.Contains(err.Error(), "`modeler run --study s7` resumes it") {
		t.Errorf("with a study: %v", err)
	}
	if err := interrupted(ctx, stopped, ""); !strings.Contains(err.Error(), "nothing was kept") || !strings.Contains(err.Error(), "--study NAME") {
		t.Errorf("without a study: %v", err)
	}
	other := errors.New("modeler: budget exhausted")
	if err := interrupted(ctx, other, "s7"); err != other {
		t.Errorf("another error was rewritten: %v", err)
	}
	if err := interrupted(context.Background(), stopped, "s7"); err != stopped {
		t.Errorf("a cancellation that is not ours was rewritten: %v", err)
	}
}
