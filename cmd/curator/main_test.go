package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/server"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "curator.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	diabetes       = filepath.Join("..", "..", "examples", "data", "diabetes.csv")
	diabetesSchema = filepath.Join("..", "..", "examples", "data", "diabetes.schema.csv")
)

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
		{"identity header off loopback", []string{"check-config", "--config", good, "--listen", "0.0.0.0:7070", "--allow-plaintext"}, nil,
			"or set --trust-identity-header-from-network only if"},
		{"identity header off loopback, serving", []string{"serve", "--config", good, "--listen", "0.0.0.0:0", "--allow-plaintext"}, nil,
			"refusing to serve on 0.0.0.0:0 (--listen), which is not a loopback address, without authenticating callers"},
		{"negative header bound", []string{"check-config", "--config", good, "--max-header-bytes", "-1"}, nil, "--max-header-bytes -1: must be ≥ 1024"},
		{"negative failure burst", []string{"check-config", "--config", good, "--auth-failure-burst", "-1"}, nil, "--auth-failure-burst -1: must be ≥ 1"},
		{"share out of range", []string{"check-config", "--config", good, "--private-scaling-share", "1"}, nil, "--private-scaling-share 1: must lie in (0, 1)"},
		{"schema and another scaling", []string{"check-config", "--config", good, "--schema", diabetesSchema, "--scaling", "none"}, nil, "--schema " + diabetesSchema + " conflicts with --scaling none"},
		{"schema file missing", []string{"check-config", "--config", good, "--schema", "/nonexistent.schema.csv"}, nil, "nonexistent.schema.csv"},
		{"old standardise name", []string{"check-config", "--config", good, "--scaling", "standardise"}, nil, "no longer accepted"},
		{"no dataset id", []string{"check-config", "--data", diabetes, "--target", "progression", "--state", t.TempDir(), "--budget-epsilon", "1"}, nil, "--dataset-id is required: budgets are kept per dataset id"},
		{"exact answers with an epsilon", []string{"check-config", "--config", good, "--output-privacy", "none", "--output-epsilon", "1"}, nil, "none takes no epsilon"},
		{"exact program answers", []string{"check-config", "--config", good, "--output-privacy", "none", "--evaluate", "program", "--evaluate-program", "/bin/true"}, nil, "--allow-exact-program-answers"},
		{"bad evaluator curve", []string{"check-config", "--config", good, "--evaluators", "x=/bin/true", "--evaluator-rdp", "x=2:abc"}, nil, "ALPHA:EPS"},
		{"curve of an unknown evaluator", []string{"check-config", "--config", good, "--evaluator-rdp", "y=2:0.1"}, nil, `"y"`},
		{"no state", []string{"check-config", "--data", diabetes, "--target", "progression", "--dataset-id", "d", "--budget-epsilon", "1"}, nil, "state"},
		{"unknown evaluation mode", []string{"check-config", "--config", good, "--evaluate", "bogus"}, nil, "evaluation mode"},
		{"negative noise", []string{"check-config", "--config", good, "--noise-sd", "-1"}, nil, "--noise-sd -1: must be ≥ 0"},
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
		if err != nil && strings.Contains(err.Error(), "Config.") {
			t.Errorf("%s: error %q names a Config field, not the flag to type", tc.name, err)
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
	if err := run([]string{"dev-ca", "--out", dir, "--add-client", "vendor-d"}); err != nil {
		t.Errorf("dev-ca --add-client: %v", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.pem")); string(again) != string(ca) {
		t.Error("dev-ca --add-client replaced the CA")
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "vendor-d.pem"), filepath.Join(dir, "vendor-d-key.pem")); err != nil {
		t.Errorf("dev-ca --add-client wrote no usable key pair: %v", err)
	}
	if err := run([]string{"dev-ca", "--out", dir, "--add-client", "vendor-e", "--force"}); err == nil {
		t.Error("dev-ca --add-client --force was accepted")
	}
	if err := run([]string{"dev-ca", "--out", dir, "--clients", "vendor-c", "--force"}); err != nil {
		t.Errorf("dev-ca --force: %v", err)
	}
}

// TestScalingSelection: without --scaling the features are scaled with the --schema
// file when one is given (in flags or the configuration file), else privately; the
// data-dependent scalings only when named, and then the operator is warned; --schema
// with another scaling is refused.
func TestScalingSelection(t *testing.T) {
	base := []string{"--data", diabetes, "--target", "progression", "--dataset-id", "d", "--state", t.TempDir(), "--budget-epsilon", "1"}
	build := func(args ...string) (config.Config, error) {
		t.Helper()
		f, err := parseServe("curator serve", append(slices.Clone(base), args...))
		if err != nil {
			return config.Config{}, err
		}
		return f.build()
	}
	for _, tc := range []struct {
		name string
		args []string
		mode dataset.ScalingMode
		warn bool
	}{
		{"default", nil, dataset.ScalePrivate, false},
		{"schema flag", []string{"--schema", diabetesSchema}, dataset.ScaleSchema, false},
		{"schema in the configuration file", []string{"--config", writeConfig(t, "schema = \""+diabetesSchema+"\"\n")}, dataset.ScaleSchema, false},
		{"schema named twice alike", []string{"--schema", diabetesSchema, "--scaling", "schema:" + diabetesSchema}, dataset.ScaleSchema, false},
		{"private with an epsilon", []string{"--scaling", "private:2"}, dataset.ScalePrivate, false},
		{"standardise-nonprivate named", []string{"--scaling", "standardise-nonprivate"}, dataset.ScaleStandardiseNonprivate, true},
		{"maxnorm-nonprivate named", []string{"--scaling", "maxnorm-nonprivate"}, dataset.ScaleMaxNormNonprivate, true},
	} {
		cfg, err := build(tc.args...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if cfg.Data.Scaling.Mode != tc.mode {
			t.Errorf("%s: scaling %q, want %q", tc.name, cfg.Data.Scaling.Mode, tc.mode)
		}
		if tc.mode == dataset.ScaleSchema && (cfg.Data.Scaling.Schema == nil || len(cfg.Data.Scaling.Schema.Columns) != 11) {
			t.Errorf("%s: schema not loaded: %+v", tc.name, cfg.Data.Scaling.Schema)
		}
		if cfg.PrivateScalingShare != config.DefaultPrivateScalingShare {
			t.Errorf("%s: share %g, want the default %g", tc.name, cfg.PrivateScalingShare, config.DefaultPrivateScalingShare)
		}
		w := strings.Join(config.Warnings(cfg), "\n")
		if got := strings.Contains(w, "DOES NOT HOLD"); got != tc.warn {
			t.Errorf("%s: warned %v (%q), want %v", tc.name, got, w, tc.warn)
		}
	}
	for _, args := range [][]string{
		{"--schema", diabetesSchema, "--scaling", "standardise-nonprivate"},
		{"--schema", diabetesSchema, "--scaling", "private"},
		{"--schema", diabetesSchema, "--scaling", "schema:" + filepath.Join("..", "..", "examples", "data", "breast_cancer.schema.csv")},
	} {
		if _, err := build(args...); err == nil || !strings.Contains(err.Error(), "conflicts with --scaling") {
			t.Errorf("%q: %v, want a conflict", args, err)
		}
	}
}

// TestTextLabelColumn loads the shipped CSV with a text label column (diagnosis) in the
// two ways a hospital has: leaving it out with --exclude, or as a categorical feature
// whose public categories its --schema line lists; without either, the error names the
// column and both ways.
func TestTextLabelColumn(t *testing.T) {
	data := filepath.Join("..", "..", "examples", "data", "breast_cancer_labelled.csv")
	schema := filepath.Join("..", "..", "examples", "data", "breast_cancer_labelled.schema.csv")
	base := []string{"check-config", "--data", data, "--target", "worst_area", "--dataset-id", "bc", "--state", t.TempDir(),
		"--budget-epsilon", "10", "--output-lower", "0", "--output-upper", "10000"}
	err := run(base)
	if err == nil || !strings.Contains(err.Error(), `"diagnosis"`) || !strings.Contains(err.Error(), "exclude it") || !strings.Contains(err.Error(), "categories") {
		t.Errorf("text column, neither excluded nor categorical: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"excluded", []string{"--exclude", "diagnosis"}, "569 rows × 10 features"},
		{"categorical", []string{"--schema", schema}, "569 rows × 12 features"},
	} {
		rep, err := server.CheckReport(mustBuild(t, append(append([]string{}, base[1:]...), tc.args...)))
		if err != nil || !strings.Contains(rep.Summary, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, rep.Summary, err, tc.want)
		}
	}
}

// mustBuild is the server configuration serve would build from args.
func mustBuild(t *testing.T, args []string) config.Config {
	t.Helper()
	f, err := parseServe("curator check-config", args)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.build()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCheckConfigScalingForecast: check-config says what serve would about the private
// scaling estimate, in flag names: a coarse forecast (diabetes, no schema, ε = 10) is a
// WARNING on standard error with the schema lines to write, and the check passes; a
// poor one (ε = 2) fails with the same lines; a schema without the target's line fails
// naming --estimate-target-range, which accepts it.
func TestCheckConfigScalingForecast(t *testing.T) {
	base := []string{"check-config", "--data", diabetes, "--target", "progression", "--dataset-id", "d", "--state", t.TempDir()}
	out, errOut, err := captureOutput(t, func() error { return run(append(base, "--budget-epsilon", "10")) })
	if err != nil {
		t.Fatalf("check-config at ε = 10: %v", err)
	}
	for _, want := range []string{"curator: WARNING: the private estimate of the feature bounds and the target's range will be coarse",
		"  column,lower,upper\n  age,LOWER,UPPER\n", "  progression,LOWER,UPPER\n", "--schema", "--private-scaling-share ≥ 0.4 of --budget-epsilon 10"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check-config at ε = 10: standard error lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "Config.") || !strings.Contains(out, "configuration OK") || !strings.Contains(out, "forecast coarse") {
		t.Errorf("check-config at ε = 10: stdout %q, stderr %q", out, errOut)
	}
	err = run(append(base, "--budget-epsilon", "2"))
	for _, want := range []string{"would be poor, so it is not made", "progression,LOWER,UPPER", "--private-scaling-share ≥ 0.34 of --budget-epsilon 2"} {
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Config.") {
			t.Errorf("check-config at ε = 2: %v, want an error in flag names containing %q", err, want)
		}
	}
	features := filepath.Join(t.TempDir(), "features.schema.csv")
	if err := os.WriteFile(features, []byte("column,lower,upper\nage,18,90\nsex,1,2\nbmi,15,50\nbp,60,140\ns1,80,400\ns2,20,300\ns3,15,120\ns4,1,12\ns5,3,7\ns6,50,250\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withSchema := append(base, "--budget-epsilon", "10", "--schema", features)
	err = run(withSchema)
	for _, want := range []string{features + " has no line for it", "progression,LOWER,UPPER", "--output-lower and --output-upper", "--estimate-target-range"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check-config with a schema lacking the target: %v, want an error containing %q", err, want)
		}
	}
	if err := run(append(withSchema, "--estimate-target-range")); err != nil {
		t.Errorf("check-config with --estimate-target-range: %v", err)
	}
}

// TestMissingMarkers: airquality's NA cells are missing by default (the rows without an
// Ozone reading dropped, Solar.R's taking the schema's value); --missing-markers "" leaves
// only empty cells missing, so the first NA (Solar.R on line 6) is refused as not a number.
func TestMissingMarkers(t *testing.T) {
	args := []string{"--data", filepath.Join("..", "..", "examples", "data", "airquality.csv"), "--target", "Ozone",
		"--schema", filepath.Join("..", "..", "examples", "data", "airquality.schema.csv"), "--dataset-id", "aq",
		"--state", t.TempDir(), "--budget-epsilon", "10"}
	if rep, err := server.CheckReport(mustBuild(t, args)); err != nil || !strings.Contains(rep.Summary, "116 rows (37 more with a missing target: dropped) × 11 features") {
		t.Errorf("default markers: %q, %v", rep.Summary, err)
	}
	_, err := server.CheckReport(mustBuild(t, append(args, "--missing-markers", "")))
	if err == nil || !strings.Contains(err.Error(), `airquality.csv:6: column "Solar.R": not a number`) {
		t.Errorf(`--missing-markers "": %v, want the NA of Solar.R on line 6 refused as not a number`, err)
	}
}
