package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStudyCommands runs a stored study through the command line, resumes it with only
// its name, refuses changed settings, lists it and writes its report.
func TestStudyCommands(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	out, errOut, err := cmd("run", "--curator", srv.Addr(), "--identity", "cli-study", "--study", "s1", "--studies-dir", dir,
		"--r", "5", "--epsilon", "2", "--delta", "1e-4", "--iterations", "9", "--batch", "4", "--known-best", "346", "--json")
	if err != nil {
		t.Fatalf("run --study: %v\n%s", err, errOut)
	}
	first := lastJSON(t, out)
	if first["study"] != "s1" || first["iterations"] != 9.0 || first["batch"] != 4.0 || first["rounds"] != 3.0 {
		t.Errorf("run --study result = %v, want study s1, 9 iterations, batch 4, 3 rounds (1 + 4 + 4)", first)
	}
	// The name alone resumes the study with its stored settings and connection.
	out, errOut, err = cmd("run", "--study", "s1", "--studies-dir", dir, "--json")
	if err != nil {
		t.Fatalf("run --study s1 alone: %v\n%s", err, errOut)
	}
	if again := lastJSON(t, out); again["best_value"] != first["best_value"] || again["iterations"] != 9.0 {
		t.Errorf("resumed finished study = %v, want the stored result %v", again, first)
	}
	if !strings.Contains(errOut, "resuming study s1: 9 of 9 iterations recorded") {
		t.Errorf("no resume line on stderr:\n%s", errOut)
	}
	if _, _, err := cmd("run", "--study", "s1", "--studies-dir", dir, "--r", "6"); err == nil || !strings.Contains(err.Error(), "r: stored 5, given 6") {
		t.Errorf("run --study s1 --r 6: err = %v, want the settings difference", err)
	}
	out, _, err = cmd("studies", "--studies-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !hasLineWithFields(out, "s1", "diabetes", "9/9", "done") {
		t.Errorf("studies output lacks a line for s1 with diabetes, 9/9, done:\n%s", out)
	}
	// The list leads with the recommended row, the run's, with its posterior mean ± sd;
	// the best single answer comes last.
	recRow := fmt.Sprint(first["recommended_index"])
	recMean := fmt.Sprintf("%.4g ± %.3g", first["recommended_mean"], first["recommended_sd"])
	if header, line, _ := strings.Cut(out, "\n"); !strings.HasPrefix(strings.Join(strings.Fields(header), " "), "NAME RECOMMENDED ROW POSTERIOR MEAN ± SD") ||
		!strings.HasPrefix(strings.Join(strings.Fields(line), " "), "s1 "+recRow+" "+recMean+" diabetes") ||
		!strings.HasSuffix(strings.TrimSpace(header), "BEST SINGLE ANSWER (ROW)") {
		t.Errorf("studies output does not lead with the recommended row %s (%s):\n%s", recRow, recMean, out)
	}
	out, _, err = cmd("studies", "--studies-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		Name        string `json:"name"`
		Recommended *struct {
			Index int     `json:"index"`
			Mean  float64 `json:"posterior_mean"`
			SD    float64 `json:"posterior_sd"`
		} `json:"recommended"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0].Recommended == nil ||
		float64(listed[0].Recommended.Index) != first["recommended_index"] || listed[0].Recommended.Mean != first["recommended_mean"] {
		t.Errorf("studies --json = %s (%v), want s1 with the run's recommended row", out, err)
	}
	rep := filepath.Join(t.TempDir(), "rep")
	out, errOut, err = cmd("report", "--study", "s1", "--studies-dir", dir, "--out", rep)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, errOut)
	}
	if strings.TrimSpace(out) != filepath.Join(rep, "index.html") {
		t.Errorf("report printed %q, want the path of index.html", out)
	}
	// --known-best was recorded, so the report has a regret curve.
	if _, err := os.Stat(filepath.Join(rep, "regret.png")); err != nil {
		t.Errorf("report of a study with a known best: %v", err)
	}
	// --iterations on a stored study extends it; below what is recorded it is refused.
	if _, _, err := cmd("run", "--study", "s1", "--studies-dir", dir, "--iterations", "8"); err == nil ||
		!strings.Contains(err.Error(), "9 iterations are already recorded") {
		t.Errorf("run --study s1 --iterations 8: err = %v, want one saying 9 are recorded", err)
	}
	out, errOut, err = cmd("run", "--study", "s1", "--studies-dir", dir, "--iterations", "13", "--json")
	if err != nil {
		t.Fatalf("run --study s1 --iterations 13: %v\n%s", err, errOut)
	}
	if ext := lastJSON(t, out); ext["iterations"] != 13.0 || ext["rounds"] != 4.0 {
		t.Errorf("extended study = %v, want 13 iterations in 4 rounds (1 + 4 + 4 + 4)", ext)
	}
	if !strings.Contains(errOut, "resuming study s1: 9 of 13 iterations recorded (T changed from 9)") {
		t.Errorf("no resume line naming the change of T on stderr:\n%s", errOut)
	}
	out, _, err = cmd("studies", "--studies-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !hasLineWithFields(out, "s1", "13/13", "done") {
		t.Errorf("studies output lacks a line for s1 with 13/13, done:\n%s", out)
	}
}

// TestRunFitEvery checks the --fit-every flag: negative is refused, a positive period is
// stored with the study, reported, and filled in when the study is resumed by name.
func TestRunFitEvery(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	base := []string{"run", "--curator", srv.Addr(), "--identity", "cli-fit", "--r", "5", "--epsilon", "2", "--delta", "1e-4",
		"--iterations", "8", "--quiet"}
	if _, _, err := cmd(append(base, "--fit-every", "-1")...); err == nil || !strings.Contains(err.Error(), "--fit-every -1: must be ≥ 0") {
		t.Errorf("run --fit-every -1: err = %v, want it refused", err)
	}
	out, errOut, err := cmd(append(base, "--fit-every", "3", "--study", "f", "--studies-dir", dir)...)
	if err != nil {
		t.Fatalf("run --fit-every 3: %v\n%s", err, errOut)
	}
	// Refits after answers 3 and 6.
	if !strings.Contains(out, "hyperparameters (maximum likelihood every 3 observations, 2 fits)") {
		t.Errorf("run --fit-every 3 output lacks the fitted hyperparameters:\n%s", out)
	}
	store, err := openStudies(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := store.Get(t.Context(), "f")
	if err != nil {
		t.Fatal(err)
	}
	if st.Settings.FitEvery != 3 {
		t.Errorf("stored fit-every = %d, want 3", st.Settings.FitEvery)
	}
	if _, errOut, err := cmd("run", "--study", "f", "--studies-dir", dir, "--quiet"); err != nil {
		t.Errorf("run --study f alone: %v\n%s", err, errOut)
	}
	if _, _, err := cmd("run", "--study", "f", "--studies-dir", dir, "--fit-every", "0"); err == nil || !strings.Contains(err.Error(), "fit-every: stored 3, given 0") {
		t.Errorf("run --study f --fit-every 0: err = %v, want the settings difference", err)
	}
}

func hasLineWithFields(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		ok := len(f) >= len(fields)
		for _, want := range fields {
			found := false
			for _, g := range f {
				found = found || g == want
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}

// cmd runs the modeler command line with args, returning its stdout and stderr.
func cmd(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = run(args, &o, &e)
	return o.String(), e.String(), err
}

// lastJSON is the JSON object on the last line of out (--json).
func lastJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, out)
	}
	return m
}

// TestNewStudyGuard: a new study is named on the run's first line; a name within two
// edits of a stored study's is refused before anything is charged, unless --new-study
// confirms it; --new-study on a stored name is refused.
func TestNewStudyGuard(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	study := func(name string, extra ...string) (string, error) {
		_, errOut, err := cmd(append([]string{"run", "--curator", srv.Addr(), "--identity", "cli-guard", "--study", name, "--studies-dir", dir,
			"--r", "3", "--epsilon", "1", "--delta", "1e-4", "--iterations", "2"}, extra...)...)
		return errOut, err
	}
	errOut, err := study("diabetes-lasso")
	if err != nil {
		t.Fatalf("first study: %v\n%s", err, errOut)
	}
	if first, _, _ := strings.Cut(errOut, "\n"); first != `modeler: new study "diabetes-lasso", kept in `+dir+"." {
		t.Errorf("first line %q, want it to name the new study", first)
	}
	spent := func() string {
		out, _, err := cmd("run", "--curator", srv.Addr(), "--identity", "cli-guard", "--dry-run", "--r", "3", "--epsilon", "1", "--delta", "1e-4", "--json")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := spent()
	for _, typo := range []string{"diabetes-Lasso", "diabetes-laso", "diabetes-lass0x"} {
		if _, err := study(typo); err == nil || !strings.Contains(err.Error(), `no study is named "`+typo+`", but "diabetes-lasso" is`) ||
			!strings.Contains(err.Error(), "--new-study") {
			t.Errorf("--study %s: %v, want a refusal naming diabetes-lasso and --new-study", typo, err)
		}
	}
	if after := spent(); after != before {
		t.Errorf("a refused name charged the curator: quote before %s, after %s", before, after)
	}
	// Dry runs: the guard comes before the quote.
	if errOut, err := study("diabetes-laso", "--new-study", "--dry-run"); err != nil || !strings.HasPrefix(errOut, `modeler: no study is named "diabetes-laso" yet`) {
		t.Errorf("--new-study diabetes-laso: %v\n%s", err, errOut)
	}
	if _, err := study("diabetes-lasso", "--new-study", "--dry-run"); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("--new-study on a stored study: %v, want a refusal", err)
	}
	if errOut, err := study("ridge", "--dry-run"); err != nil {
		t.Errorf("a distinct new name: %v\n%s", err, errOut)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"lasso", "laso", 1}, {"étude", "etude", 1}, {"ab", "ba", 2},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
