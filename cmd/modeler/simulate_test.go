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
		{[]string{"--output-privacy", "laplace", "--output-epsilon", "1", "--output-lower", "0", "--output-upper", "400", "--log-outputs"}, "positive output range"},
	} {
		err := run(append(append([]string{}, base...), c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("simulate %v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
