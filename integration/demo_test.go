package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// demoFigure is the sentence with the rates the README quotes for the demo's study, as
// docs/EXPERIMENTS.md ("Result") measured them over many runs of the demo and as the
// demo prints them; any run of white space may separate its words (line wraps).
var demoFigure = regexp.MustCompile(`over\s+(\d+)\s+runs\s+of\s+this\s+demo\s+the\s+recommended\s+row\s+was\s+in\s+the\s+top\s+1%\s+in\s+([0-9.]+)%\s+of\s+runs\s+` +
	`and\s+its\s+median\s+percentile\s+was\s+([0-9.]+)%;\s+a\s+top-1%\s+patient\s+was\s+among\s+the\s+40\s+rows\s+queried\s+in\s+([0-9.]+)%\s+of\s+runs`)

// TestDemoScript runs scripts/demo.sh — what `make demo`, the README's first command,
// runs — against freshly built binaries, and checks that it exits cleanly and prints the
// study's result with the recommended row first, the hospital's view of it (the true
// progression, rank and percentile of the recommended row and of the row with the
// highest noisy answer, checked against the data file), the figure the README quotes,
// and the ledger.
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
	raw, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, raw)
	}
	out := string(raw)
	// The result leads with the recommended row, then the answers' noise (Laplace at
	// ε = 2.5 on [0, 400]: sd √2·160 = 226), then the highest answer, labelled a noisy
	// answer.
	lead := regexp.MustCompile(`(?m)^dataset diabetes: recommended row (\d+): posterior mean \S+ ± \S+ \(1 sd\), the highest posterior mean among the \d+ queried rows \(maximize; 40 queries,.*\n` +
		`answer noise: sd 226 per answer \(laplace mechanism\) against the target's range \[0, 400\]: 0\.57 of its width; .*\n` +
		`highest noisy answer: \S+ at row (\d+) \(a noisy answer, not the row's value\)\n`).FindStringSubmatch(out)
	if lead == nil {
		t.Fatalf("demo does not lead with the recommended row, the answer noise and the highest noisy answer, in that order:\n%s", out)
	}
	y := loadDiabetes(t).Y
	for _, c := range []struct{ what, row string }{{"the vendor's recommended row " + lead[1], lead[1]}, {"the row of its highest noisy answer, " + lead[2], lead[2]}} {
		m := regexp.MustCompile(regexp.QuoteMeta(c.what) + `: true progression (\d+), rank (\d+) of 442, percentile ([0-9.]+)%, top 1%: (yes|no)\n`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("demo does not print the true progression of %s:\n%s", c.what, out)
			continue
		}
		i, _ := strconv.Atoi(c.row)
		better := 0
		for _, v := range y {
			if v > y[i] {
				better++
			}
		}
		pct := strconv.FormatFloat(100*float64(len(y)-better)/float64(len(y)), 'f', 1, 64)
		top := map[bool]string{true: "yes", false: "no"}[y[i] >= topOnePercentThreshold(y)]
		if m[1] != strconv.FormatFloat(y[i], 'g', -1, 64) || m[2] != strconv.Itoa(1+better) || m[3] != pct || m[4] != top {
			t.Errorf("%s: true progression %s, rank %s, percentile %s%%, top 1%% %s; the data file says %g, rank %d, %s%%, %s",
				c.what, m[1], m[2], m[3], m[4], y[i], 1+better, pct, top)
		}
	}
	// The figure the README quotes is the one docs/EXPERIMENTS.md measured, and the demo
	// prints it.
	figures := map[string][]string{}
	for _, src := range []struct{ name, text string }{{"the demo", out}, {"README.md", readRepoFile(t, "README.md")}, {"docs/EXPERIMENTS.md", readRepoFile(t, "docs/EXPERIMENTS.md")}} {
		m := demoFigure.FindStringSubmatch(src.text)
		if m == nil {
			t.Errorf("%s does not state the demo's figure (%s)", src.name, demoFigure)
			continue
		}
		figures[src.name] = m[1:]
	}
	if d, r, e := figures["the demo"], figures["README.md"], figures["docs/EXPERIMENTS.md"]; e != nil && (strings.Join(d, " ") != strings.Join(e, " ") || strings.Join(r, " ") != strings.Join(e, " ")) {
		t.Errorf("the demo's figure (runs, top-1%% rate, median percentile, queried top-1%% rate): demo %v, README %v, docs/EXPERIMENTS.md %v; want the measured one everywhere", d, r, e)
	}
	for _, want := range []string{
		`dataset diabetes: true outcome = column progression of examples/data/diabetes.csv; rank 1 = the highest outcome`,
		`top 1%: ≥ 319.36`,
		`identity vendor-demo: 40 rows answered`,
		// e² for the projection and ε_out = 2.5 once for all 40 answers.
		`privacy spent by this identity: ε=9.89, δ=0.0001`,
		`projection (mechanism gaussian): (ε=7.39, δ=0.0001)-DP under the feature-unit neighbour relation`,
		`answers (mechanism laplace): each answer (ε=2.5, δ=0)-DP under the record neighbour relation`,
		`== the curator's privacy ledger`,
		`query-answers`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// readRepoFile reads a file of the repository, from the integration directory.
func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDemoStatsScript runs scripts/demo-stats.sh — the command of the figures the README
// quotes — for two demos, and checks that it reads every figure from the demos' output
// and removes the demos' curator logs.
func TestDemoStatsScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries and runs the demo twice")
	}
	dir := filepath.Dir(buildBinary(t, "./cmd/curator"))
	buildBinary(t, "./cmd/modeler")
	file := filepath.Join(t.TempDir(), "runs.txt")
	cmd := exec.Command("bash", "scripts/demo-stats.sh", "2", file)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PRIVBO_BIN="+dir)
	raw, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo-stats.sh: %v\n%s", err, raw)
	}
	out := string(raw)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^runs: 2$`),
		regexp.MustCompile(`(?m)^recommended row in the top 1%: [012]/2 = `),
		regexp.MustCompile(`(?m)^recommended row's percentile: median [0-9.]+% \(95% CI `),
		regexp.MustCompile(`(?m)^row of the highest noisy answer in the top 1%: [012]/2 = `),
		regexp.MustCompile(`(?m)^a top-1% row among the 40 queried: [012]/2 = `),
		regexp.MustCompile(`(?m)^recommended row: true − posterior mean -?[0-9.]+ on average \(rms [0-9.]+\); mean posterior sd [0-9.]+; true value within 1 sd in `),
	} {
		if !want.MatchString(out) {
			t.Errorf("scripts/demo-stats.sh output lacks %s:\n%s", want, out)
		}
	}
	runs, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	logs := regexp.MustCompile(`; its log: (\S+)/curator\.log`).FindAllStringSubmatch(string(runs), -1)
	if len(logs) != 2 {
		t.Fatalf("the demos' output names %d curator logs, want 2", len(logs))
	}
	for _, l := range logs {
		if _, err := os.Stat(l[1]); err == nil {
			t.Errorf("scripts/demo-stats.sh left the demo's log directory %s", l[1])
		}
	}
}
