package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const diabetesCSV = "../../examples/data/diabetes.csv"

// TestSimulateOutputPrivacyFlags runs `modeler simulate` with Laplace answers on a
// public range and checks that the output says so and names the default noise rule.
func TestSimulateOutputPrivacyFlags(t *testing.T) {
	out := t.TempDir()
	var stdout bytes.Buffer
	err := run([]string{"simulate", "--data", diabetesCSV, "--target", "progression", "--methods", "po-gp-ucb,random",
		"--r", "3", "--runs", "2", "--iterations", "4", "--epsilon", "7.38905609893065", "--delta", "1e-4", "--quiet",
		"--output-privacy", "laplace", "--output-epsilon", "2", "--output-lower", "0", "--output-upper", "400", "--out", out},
		&stdout, io.Discard)
	if err != nil {
		t.Fatalf("simulate: %v", err)
	}
	for _, want := range []string{"laplace answers (ε_out = 2", "range [0, 400]", "noise rule ratio", "top-1% hit rate"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "regret.csv")); err != nil {
		t.Error(err)
	}
}

// TestSimulateOutputPrivacyFlagErrors checks that bad output-privacy flags are refused
// before anything runs, with a message naming the problem.
func TestSimulateOutputPrivacyFlagErrors(t *testing.T) {
	base := []string{"simulate", "--data", diabetesCSV, "--target", "progression", "--runs", "1", "--iterations", "2", "--quiet", "--out", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1"}, "--output-lower and --output-upper"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "0"}, "--output-lower and --output-upper"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "400", "--output-upper", "0"}, "lower < upper"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "5", "--output-upper", "5"}, "lower < upper"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "-Inf", "--output-upper", "5"}, "finite"},
		{[]string{"--output-privacy", "laplace", "--output-lower", "0", "--output-upper", "400"}, "--output-epsilon > 0"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-delta", "1e-6", "--output-lower", "0", "--output-upper", "400"}, "must be 0"},
		{[]string{"--output-privacy", "gaussian", "--output-epsilon", "1", "--output-lower", "0", "--output-upper", "400"}, "--output-delta in (0, 1)"},
		{[]string{"--output-privacy", "uniform"}, "want none, laplace or gaussian"},
		{[]string{"--output-lower", "0", "--output-upper", "400"}, "need --output-privacy"},
		{[]string{"--noise-rule", "ratio"}, "--noise-rule needs"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "0", "--output-upper", "400", "--noise-rule", "x"}, "unknown noise rule"},
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "0", "--output-upper", "400", "--log-outputs"}, "--log-outputs needs a positive output range"},
	} {
		err := run(append(append([]string{}, base...), c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("simulate %v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestSimulateBatchFlag runs `modeler simulate --batch 5` and checks that every run of
// the GP method queried all its iterations, each a distinct row; and that a negative
// --batch is refused.
func TestSimulateBatchFlag(t *testing.T) {
	out := t.TempDir()
	err := run([]string{"simulate", "--data", diabetesCSV, "--target", "progression", "--methods", "po-gp-ucb,random",
		"--r", "3", "--runs", "2", "--iterations", "11", "--batch", "5", "--epsilon", "2", "--delta", "1e-4", "--quiet", "--out", out},
		io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("simulate --batch 5: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "regret.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]bool{} // method/run → rows queried
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		f := strings.Split(line, ",")
		if !strings.HasPrefix(f[0], "po-gp-ucb") {
			continue
		}
		key := f[0] + "/" + f[1]
		if rows[key] == nil {
			rows[key] = map[string]bool{}
		}
		if rows[key][f[3]] {
			t.Errorf("%s queried row %s twice", key, f[3])
		}
		rows[key][f[3]] = true
	}
	if len(rows) != 2 {
		t.Fatalf("po-gp-ucb runs in regret.csv: %d, want 2", len(rows))
	}
	for key, r := range rows {
		if len(r) != 11 {
			t.Errorf("%s queried %d rows, want 11", key, len(r))
		}
	}
	if err := run([]string{"simulate", "--data", diabetesCSV, "--target", "progression", "--batch", "-1", "--quiet", "--out", t.TempDir()}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("simulate --batch -1: error %v, want one naming the batch", err)
	}
}
