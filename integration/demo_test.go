package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestDemoScript runs scripts/demo.sh — what `make demo`, the README's first command,
// runs — against freshly built binaries, and checks that it exits cleanly and prints a
// sensible study result and the ledger.
func TestDemoScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries and runs the demo")
	}
	// Both commands are built into one directory, as scripts/demo.sh expects.
	dir := filepath.Dir(buildBinary(t, "./cmd/curator"))
	if got := filepath.Dir(buildBinary(t, "./cmd/modeler")); got != dir {
		t.Fatalf("curator and modeler built into %s and %s; scripts/demo.sh wants one directory", dir, got)
	}
	cmd := exec.Command("bash", "scripts/demo.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PRIVBO_BIN="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`best row (\d+) with value (\S+) after 40 queries`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("demo printed no study result:\n%s", out)
	}
	// The answers are noised, so the best value is any number; the row it names is one of
	// the 442 patients, whose true progression (printed for reference) is in [25, 346].
	if row, err := strconv.Atoi(string(m[1])); err != nil || row < 0 || row >= 442 {
		t.Errorf("demo's best row = %s, want a row of the 442 patients", m[1])
	}
	tm := regexp.MustCompile(`the row with the highest noisy answer, ` + string(m[1]) + `, has the true progression (\d+);`).FindSubmatch(out)
	if tm == nil {
		t.Errorf("demo does not print the best row's true progression:\n%s", out)
	} else if v, _ := strconv.ParseFloat(string(tm[1]), 64); v < 25 || v > 346 {
		t.Errorf("true progression of the best row = %v, want one in [25, 346]", v)
	}
	// The recommended row (highest posterior mean), with its true progression.
	rm := regexp.MustCompile(`recommended row (\d+): highest posterior mean`).FindSubmatch(out)
	if rm == nil {
		t.Errorf("demo prints no recommended row:\n%s", out)
	} else if tr := regexp.MustCompile(`the recommended row, ` + string(rm[1]) + `, has (\d+)\)`).FindSubmatch(out); tr == nil {
		t.Errorf("demo does not print the recommended row's true progression:\n%s", out)
	} else if v, _ := strconv.ParseFloat(string(tr[1]), 64); v < 25 || v > 346 {
		t.Errorf("true progression of the recommended row = %v, want one in [25, 346]", v)
	}
	for _, want := range []string{
		`the highest progression in the data is 346; the top 1% is ≥ 321`,
		// e² for the projection and ε_out = 2.5 once for all 40 answers.
		`privacy spent by this identity: ε=9.88905609893065 δ=0.0001`,
		`projection (mechanism gaussian): (ε=7.38905609893065, δ=0.0001)-DP under the feature-unit neighbour relation`,
		`answers (mechanism laplace): each answer (ε=2.5, δ=0)-DP under the record neighbour relation`,
		`== the curator's privacy ledger`,
		`query-answers`,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).Match(out) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
