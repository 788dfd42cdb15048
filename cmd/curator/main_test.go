package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "curator.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var diabetes = filepath.Join("..", "..", "examples", "data", "diabetes.csv")

func TestCheckConfig(t *testing.T) {
	good := writeConfig(t, `# a hospital's curator
data = "`+diabetes+`"
target = "progression"
state = "`+t.TempDir()+`"
budget-epsilon = 10
budget-delta = 1e-3
dataset-id = "diabetes-2024"
output-lower = 0
output-upper = 400
`)
	if err := run([]string{"check-config", "--config", good}); err != nil {
		t.Fatalf("check-config of a good file: %v", err)
	}
	// Exact answers are an explicit choice; the default ε of private answers does not
	// stand in their way, an explicit one does.
	if err := run([]string{"check-config", "--config", good, "--output-privacy", "none"}); err != nil {
		t.Errorf("check-config with exact answers: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown setting", []string{"check-config", "--config", writeConfig(t, "colour = 'red'\n")}, nil, `unknown setting "colour"`},
		{"flag overrides file", []string{"check-config", "--config", good, "--target", "nope"}, nil, `"nope"`},
		{"environment overrides file", []string{"check-config", "--config", good}, map[string]string{"PRIVBO_CURATOR_BUDGET_EPSILON": "-1"}, "epsilon"},
		{"missing file", []string{"check-config", "--config", good, "--data", "/nonexistent.csv"}, nil, "nonexistent.csv"},
		{"plaintext off loopback", []string{"check-config", "--config", good, "--listen", "0.0.0.0:7070"}, nil, "plaintext"},
		{"private outputs without a range", []string{"check-config", "--config", good, "--output-privacy", "laplace", "--output-upper", "0"}, nil, "--output-lower and --output-upper"},
		{"no dataset id", []string{"check-config", "--data", diabetes, "--target", "progression", "--state", t.TempDir(), "--budget-epsilon", "1"}, nil, "--dataset-id is required: budgets are kept per dataset id"},
		{"exact answers with an epsilon", []string{"check-config", "--config", good, "--output-privacy", "none", "--output-epsilon", "1"}, nil, "none takes no epsilon"},
		{"exact program answers", []string{"check-config", "--config", good, "--output-privacy", "none", "--evaluate", "program", "--evaluate-program", "/bin/true"}, nil, "--allow-exact-program-answers"},
		{"bad evaluator curve", []string{"check-config", "--config", good, "--evaluators", "x=/bin/true", "--evaluator-rdp", "x=2:abc"}, nil, "ALPHA:EPS"},
		{"curve of an unknown evaluator", []string{"check-config", "--config", good, "--evaluator-rdp", "y=2:0.1"}, nil, `"y"`},
		{"no state", []string{"check-config", "--data", diabetes, "--target", "progression", "--dataset-id", "d", "--budget-epsilon", "1"}, nil, "state"},
		{"unknown evaluation mode", []string{"check-config", "--config", good, "--evaluate", "bogus"}, nil, "evaluation mode"},
		{"negative noise", []string{"check-config", "--config", good, "--noise-sd", "-1"}, nil, "noise sd"},
		{"missing evaluation program", []string{"check-config", "--config", good, "--evaluate", "program", "--evaluate-program", "/nonexistent/prog"}, nil, "/nonexistent/prog"},
		{"jobs on a non-binary target", []string{"check-config", "--config", good, "--jobs"}, nil, "0/1"},
		{"unknown projection mechanism", []string{"check-config", "--config", good, "--projection-mechanism", "magic"}, nil, "projection mechanism"},
		{"certificate without key", []string{"check-config", "--config", good, "--tls-cert", "x.pem"}, nil, "--tls-key"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}

func TestDevCAAndHashToken(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"dev-ca", "--out", dir, "--clients", "vendor-a,vendor-b"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.pem", "server.pem", "server-key.pem", "vendor-a.pem", "vendor-b-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("dev-ca did not write %s: %v", f, err)
		}
	}
	if err := run([]string{"dev-ca", "--out", t.TempDir(), "--clients", "bad identity"}); err == nil {
		t.Error("dev-ca accepted an invalid identity")
	}
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err := run([]string{"dev-ca", "--out", dir, "--clients", "vendor-c"}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("dev-ca over an existing CA: %v, want a refusal naming --force", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); string(again) != string(ca) {
		t.Error("a refused dev-ca replaced the CA")
	}
	if err := run([]string{"dev-ca", "--out", dir, "--clients", "vendor-c", "--force"}); err != nil {
		t.Errorf("dev-ca --force: %v", err)
	}
}
