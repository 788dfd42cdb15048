package main

import (
	"regexp"
	"strings"
	"testing"
)

// longDecimal is a figure with 10 or more decimals: float noise.
var longDecimal = regexp.MustCompile(`\d\.\d{10,}`)

// TestDefaultLinesShort: every line `modeler run` and `modeler run --dry-run` print by
// default (the quote, the result, the guarantees) is at most 300 characters and shows
// no figure with 10 or more decimals, at an ε whose float form is noise (e², as the
// paper's setting); --explain prints the curator's full guarantees, which are longer.
func TestDefaultLinesShort(t *testing.T) {
	srv := startDiabetesCurator(t)
	check := func(what, text string) {
		t.Helper()
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			if n := len([]rune(l)); n > 300 || longDecimal.MatchString(l) {
				t.Errorf("%s: a line of %d characters (want at most 300) or with float noise:\n%s", what, n, l)
			}
		}
	}
	args := []string{"run", "--curator", srv.Addr(), "--identity", "texts", "--r", "3", "--epsilon", "2.718281828459045", "--delta", "1e-4", "--iterations", "3", "--quiet"}
	out, errOut, err := cmd(append(args, "--dry-run")...)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, errOut)
	}
	check("modeler run --dry-run", out+errOut)
	if !strings.Contains(errOut, "ε=2.718,") || !strings.Contains(errOut, "which protects no whole record") {
		t.Errorf("the quote does not state ε=2.718 or that its whole-patient figure protects no record:\n%s", errOut)
	}
	out, errOut, err = cmd(args...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	check("modeler run", out+errOut)
	if !strings.Contains(out, "--explain") {
		t.Errorf("the short guarantees do not say where the full text is:\n%s", out)
	}
	full, _, err := cmd(append(args, "--identity", "texts-2", "--explain")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(full, "Whole patient: replacing one patient's record") || len(full) <= len(out) {
		t.Errorf("--explain does not print the full guarantees:\n%s", full)
	}
}
