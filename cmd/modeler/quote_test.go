package main

import (
	"strings"
	"testing"
)

// TestRunDefaultStudyStoredAndResumed runs a stored study with nothing but the curator's
// address and an identity: the curator's quote is printed before anything is charged, the
// study keeps the r, ε and δ it was quoted, and `modeler run --study NAME` alone resumes
// it without a new quote or charge.
func TestRunDefaultStudyStoredAndResumed(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	out, errOut, err := cmd("run", "--curator", srv.Addr(), "--identity", "defaults", "--study", "d", "--studies-dir", dir,
		"--iterations", "4", "--quiet", "--json")
	if err != nil {
		t.Fatalf("run with the defaults: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "study quoted by the curator (nothing is charged yet)") || !strings.Contains(errOut, "(the curator's default study)") ||
		!strings.Contains(errOut, "on the target's range [0, 400]") {
		t.Errorf("no quote of the default study on stderr:\n%s", errOut)
	}
	first := lastJSON(t, out)
	q := first["quote"].(map[string]any)
	if q["default_epsilon"] != true || q["r_chosen"] != true || first["r"] != q["r"] || first["epsilon_spent"] != q["epsilon"].(float64)+q["answers"].(map[string]any)["epsilon"].(float64) {
		t.Errorf("first run: r %v, spent %v, quote %v", first["r"], first["epsilon_spent"], q)
	}
	out, errOut, err = cmd("run", "--study", "d", "--studies-dir", dir, "--iterations", "6", "--quiet", "--json")
	if err != nil {
		t.Fatalf("resume by name: %v\n%s", err, errOut)
	}
	again := lastJSON(t, out)
	if again["r"] != first["r"] || again["iterations"] != float64(6) || again["epsilon_spent"] != first["epsilon_spent"] || strings.Contains(errOut, "study quoted") {
		t.Errorf("resume: r %v, %v iterations, spent %v (first spent %v), stderr:\n%s", again["r"], again["iterations"], again["epsilon_spent"], first["epsilon_spent"], errOut)
	}
}
