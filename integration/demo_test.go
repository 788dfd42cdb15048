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
	binDir := filepath.Dir(buildBinary(t, "./cmd/curator"))
	modeler := buildBinary(t, "./cmd/modeler")
	if err := os.Rename(modeler, filepath.Join(binDir, "modeler")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "scripts/demo.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PRIVBO_BIN="+binDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`best row (\d+) with value (\d+(?:\.\d+)?) after 40 queries`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("demo printed no study result:\n%s", out)
	}
	// The best value is one of the 442 patients' progressions, which range over 25–346.
	if v, _ := strconv.ParseFloat(string(m[2]), 64); v < 25 || v > 346 {
		t.Errorf("demo's best value = %v, want a progression in [25, 346]", v)
	}
	for _, want := range []string{
		`the highest progression in the data is 346; the top 1% is ≥ 321`,
		`privacy spent by this identity: ε=7.38905609893065 δ=0.0001`,
		`== the curator's privacy ledger`,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).Match(out) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
