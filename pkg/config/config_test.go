package config

import (
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestConfigDefaultsAndRefusals: outputs are private by default (Laplace, ε = 1) and
// need a declared range; the dataset id is required; exact program answers need the
// explicit flag; exact answers are warned about.
func TestConfigDefaultsAndRefusals(t *testing.T) {
	base := Config{Listen: "127.0.0.1:0", DataPath: "d.csv", Data: dataset.Options{Target: "y"}, StateDir: t.TempDir(),
		Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // substring of the error; "" for success
	}{
		{"no dataset id", func(c *Config) { c.DatasetID = "" }, "--dataset-id is required: budgets are kept per dataset id"},
		// Without a declared range the target's range comes from the schema or the
		// private estimate at Start (TestOutputRangePrecedence).
		{"default output without a range", func(c *Config) {}, ""},
		{"gaussian without a delta", func(c *Config) { c.Output = curator.OutputPrivacy{Mechanism: "gaussian"} }, "delta"},
		{"inverted range", func(c *Config) { c.Output = curator.OutputPrivacy{Lower: 5, Upper: 1} }, "lower < upper"},
		{"default output with a range", func(c *Config) { c.Output = curator.OutputPrivacy{Lower: 0, Upper: 5} }, ""},
		{"exact answers", func(c *Config) { c.Output = curator.OutputPrivacy{Mechanism: "none"} }, ""},
		{"exact program answers", func(c *Config) {
			c.Output = curator.OutputPrivacy{Mechanism: "none"}
			c.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{"/bin/true"}}
		}, "set --allow-exact-program-answers"},
		{"exact program answers allowed", func(c *Config) {
			c.Output = curator.OutputPrivacy{Mechanism: "none"}
			c.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{"/bin/true"}}
			c.AllowExactProgramAnswers = true
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			got, _, err := cfg.Resolve()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Resolve: %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "default output with a range" && (got.Output.Mechanism != "laplace" || got.Output.Epsilon != curator.DefaultOutputEpsilon) {
				t.Errorf("default output = %+v, want laplace with ε = %g", got.Output, curator.DefaultOutputEpsilon)
			}
			if got.ExactAnswersMaxRows != DefaultExactAnswersMaxRows {
				t.Errorf("exact-answer cap = %d, want the default %d", got.ExactAnswersMaxRows, DefaultExactAnswersMaxRows)
			}
			w := strings.Join(Warnings(got), "\n")
			// Laplace answers at ε_out = 1 carry noise √2 times the range's width.
			noisy := "WARNING: answer noise sd is 1.414× the range's width: expect a recommendation little better than a random row; ε_out = 2 would make it 0.71× (--output-epsilon"
			if got.Output.Mechanism == "laplace" && got.Output.Epsilon == 1 {
				if !strings.HasPrefix(w, noisy) {
					t.Errorf("default answers not warned about: %q", w)
				}
				w = ""
			}
			switch {
			case got.Output.Mechanism != "none" && w != "":
				t.Errorf("private outputs warned: %s", w)
			case got.Output.Mechanism == "none" && !strings.Contains(w, "WARNING: --output-privacy none: query answers are EXACT and UNPROTECTED"):
				t.Errorf("exact answers not warned about: %q", w)
			case got.AllowExactProgramAnswers && !strings.Contains(w, "exact function of one record's features"):
				t.Errorf("exact program answers not warned about: %q", w)
			}
		})
	}
}

// TestWarningsShort: every warning a start can give is at most 300 characters and
// names flags, never Go fields.
func TestWarningsShort(t *testing.T) {
	cfg := NewConfig()
	cfg.Budget = ledger.Cost{Epsilon: 1}
	cfg.TrustIdentityHeaderFromNetwork, cfg.Listen = true, "0.0.0.0:7070"
	cfg.Data.Scaling.Mode = dataset.ScaleStandardiseNonprivate
	cfg.Jobs.Enabled, cfg.PatientBudget = true, ledger.Cost{Epsilon: 10}
	cfg.Output.Mechanism, cfg.Evaluation.Mode = "none", curator.EvaluateProgram
	ws := Warnings(cfg)
	if len(ws) != 6 {
		t.Errorf("Warnings gave %d warnings, want 6: %q", len(ws), ws)
	}
	for _, w := range ws {
		if n := len([]rune(w)); n > 300 || strings.Contains(w, "Config.") || !strings.Contains(w, "--") {
			t.Errorf("a warning of %d characters (want at most 300, naming flags): %s", n, w)
		}
	}
}
