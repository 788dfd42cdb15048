package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestJobCommands drives 'modeler job' against an in-process curator with jobs enabled:
// a Kusner and a DP-HyPO submission wait for their results, a resubmission with the
// same idempotency key returns the same job, and list and get show them.
func TestJobCommands(t *testing.T) {
	// The shipped schema's public bounds scale the data and DP-HyPO's learner.
	sc, err := dataset.ParseScaling("schema:" + curatortest.ExampleData("breast_cancer.schema.csv"))
	if err != nil {
		t.Fatal(err)
	}
	cur := curatortest.Start(t, curatortest.Options{
		DataPath: curatortest.ExampleData("breast_cancer.csv"),
		Target:   "benign",
		Scaling:  sc,
		Budget:   ledger.Cost{Epsilon: 100, Delta: 0.1},
		Jobs:     config.JobsConfig{Enabled: true},
		// The jobs' budget is kept under the dataset id; answers are not asked for.
		DatasetID: "breast-cancer",
		Output:    curator.OutputPrivacy{Lower: 0, Upper: 1},
	})
	cmd := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(append(args, "--curator", cur.Addr, "--identity", "cli-jobs"), &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}
	spentUnder := func(rel ledger.Relation) float64 {
		t.Helper()
		client, closeConn, err := (&connFlags{addr: cur.Addr, identity: "cli-jobs"}).client(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn()
		b, err := client.GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.GetBudget().GetRelations() {
			if r.GetRelation() == string(rel) {
				return r.GetEpsilonSpent()
			}
		}
		return 0
	}
	spent := func() float64 { return spentUnder(ledger.RelationTrainingAddRemove) }
	kusnerArgs := []string{"job", "kusner", "--algorithm", "1", "--grid", "lambda=log:1e-4:10:8", "--iterations", "5",
		"--epsilon", "1", "--delta", "1e-3", "--idempotency-key", "k1"}
	// At ε = 1 Kusner's releases are no better than a uniform pick: the dry run says so
	// (and what it would cost), the submission is refused, and neither is charged.
	out, errOut, err := cmd(append(kusnerArgs, "--dry-run")...)
	if err != nil || !strings.Contains(out, "dry run, nothing charged: the job would cost ε=2 δ=0.002 under the relation validation-record") ||
		!strings.Contains(out, "at most 1.026× as likely") || !strings.Contains(out, "would REFUSE it") || !strings.Contains(out, "from ε = 3.696") {
		t.Errorf("job kusner --dry-run: %v\n%s%s; want the price, the forecast and the refusal", err, out, errOut)
	}
	_, errOut, err = cmd(kusnerArgs...)
	if err == nil || !strings.Contains(errOut, "refused before any charge") || !strings.Contains(errOut, "from ε = 3.696") || !strings.Contains(errOut, "--force") {
		t.Errorf("job kusner at ε = 1: %v\n%s; want refused with the ε needed and --force", err, errOut)
	}
	if got := spentUnder(ledger.RelationValidationRecord); got != 0 {
		t.Errorf("the dry run and the refused job spent ε %g under validation-record, want 0", got)
	}
	out, errOut, err = cmd(append(kusnerArgs, "--force", "--json")...)
	if err != nil {
		t.Fatalf("job kusner --force: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var job struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Result struct {
			Hyperparameters map[string]float64 `json:"hyperparameters"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &job); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	if job.State != "JOB_STATE_SUCCEEDED" || job.Result.Hyperparameters["lambda"] == 0 {
		t.Errorf("job = %+v, want succeeded with a released lambda", job)
	}
	if !strings.Contains(errOut, "accepted: charged ε=2") || !strings.Contains(out, "released lambda") {
		t.Errorf("output lacks the charge or the release:\n%s\n%s", errOut, out)
	}
	if got := spentUnder(ledger.RelationValidationRecord); got != 2 {
		t.Errorf("the forced job spent ε %g under validation-record, want 2", got)
	}
	again, _, err := cmd(append(kusnerArgs, "--force", "--detach")...)
	if err != nil || !strings.Contains(again, job.ID) {
		t.Errorf("resubmission with the same key: %v\n%s; want job %s", err, again, job.ID)
	}
	// The modeler's report: the release, the charge under its relation, the forecast.
	dir := t.TempDir()
	if out, errOut, err := cmd("job", "report", job.ID, "--out", dir); err != nil || !strings.Contains(out, "index.html") {
		t.Fatalf("job report: %v\n%s%s", err, out, errOut)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"validation-record", "lambda", "NOT informative", "iteration 5 of 5"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the Kusner job's report lacks %q", want)
		}
	}
	// DP-HyPO with the modeler's defaults: the curator calibrates the noise to ε = 2 at
	// δ = 1e-6 and charges just that.
	out, errOut, err = cmd("job", "dphypo", "--grid", "learning_rate=log:0.05:2:4", "--grid", "clip_norm=loglist:0.5,1,2", "--json")
	if err != nil || !strings.Contains(out, "released clip_norm") || strings.Contains(out, "runs =") {
		t.Errorf("job dphypo: %v\n%s\n%s; want a release without a run count", err, out, errOut)
	}
	var dphypoJob struct {
		EpsilonCharged float64 `json:"epsilon_charged"`
		DeltaCharged   float64 `json:"delta_charged"`
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &dphypoJob); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	if e := dphypoJob.EpsilonCharged; !(e <= 2 && e >= 0.98*2) || dphypoJob.DeltaCharged != 1e-6 || spent() != e {
		t.Errorf("default DP-HyPO job charged (%g, %g), spent ε %g; want ε in [1.96, 2] at δ = 1e-6, as spent", e, dphypoJob.DeltaCharged, spent())
	}
	t.Logf("default DP-HyPO job:\n%s%s", errOut, out)
	var dj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &dj); err != nil {
		t.Fatal(err)
	}
	// Its report shows the release and the public envelope of the sampling distributions,
	// and says that the number of runs is not released.
	ddir := t.TempDir()
	if _, errOut, err := cmd("job", "report", dj.ID, "--out", ddir); err != nil {
		t.Fatalf("job report: %v\n%s", err, errOut)
	}
	page, err = os.ReadFile(filepath.Join(ddir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"training-add-remove", "clip_norm", "between 0.9× and 1.1× the uniform density", "<th>runs</th><td>not released"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the DP-HyPO job's report lacks %q", want)
		}
	}
	if strings.Contains(string(page), "operator only") {
		t.Error("the modeler's DP-HyPO report shows an operator-only section")
	}

	if !strings.Contains(out, "noise calibrated to target ε=2: noise multiplier") || !strings.Contains(errOut, "Noise calibrated to target ε=2") {
		t.Errorf("the calibrated noise is not reported:\n%s\n%s", out, errOut)
	}
	// Explicit multipliers still work; with --epsilon they are refused.
	if _, errOut, err := cmd("job", "dphypo", "--grid", "learning_rate=log:0.05:2:4", "--noise-multiplier", "3", "--detach"); err != nil ||
		!strings.Contains(errOut, "accepted") || strings.Contains(errOut, "calibrated") {
		t.Errorf("job dphypo --noise-multiplier 3: %v\n%s; want accepted without calibration", err, errOut)
	}
	if _, _, err := cmd("job", "dphypo", "--grid", "learning_rate=log:0.05:2:4", "--noise-multiplier", "3", "--epsilon", "2"); err == nil ||
		!strings.Contains(err.Error(), "--epsilon") || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--epsilon with --noise-multiplier: %v, want refused", err)
	}
	// A DP-HyPO dry run states the calibrated price under its relation and, in one line,
	// whether the GP rule is expected to beat uniform search (the measured table read at
	// the defaults: ε=2 is below it), and spends nothing.
	before := spent()
	if out, errOut, err := cmd("job", "dphypo", "--grid", "learning_rate=log:0.05:2:4", "--dry-run"); err != nil ||
		!strings.Contains(out, "under the relation training-add-remove") || !strings.Contains(out, "Noise calibrated to target ε=2") ||
		!strings.Contains(out, "  forecast: the GP rule is not expected to beat uniform search at ε=2, E[T]=10 on 4 points (below the measurements") {
		t.Errorf("job dphypo --dry-run: %v\n%s%s; want the price, the relation, the calibration and the forecast", err, out, errOut)
	}
	if after := spent(); after != before {
		t.Errorf("the dry run spent ε %g", after-before)
	}
	// A target the paper's density bounds cannot meet is refused, naming the field,
	// and costs nothing.
	_, _, err = cmd("job", "dphypo", "--grid", "learning_rate=log:0.05:2:4", "--c-max", "2", "--c-min", "0.75")
	if err == nil || !strings.Contains(err.Error(), "target_epsilon 2 is out of reach") {
		t.Errorf("an unreachable target: %v, want refused naming target_epsilon", err)
	}
	if after := spent(); after != before {
		t.Errorf("the refused job spent ε %g", after-before)
	}
	list, _, err := cmd("job", "list")
	if err != nil || strings.Count(list, "dphypo") != 2 || strings.Count(list, "kusner") != 1 {
		t.Errorf("job list = %q, %v; want one kusner job and two dphypo jobs", list, err)
	}
	if _, _, err := cmd("job", "kusner", "--grid", "depth=list:1,2"); err == nil {
		t.Error("a grid the built-in learner cannot tune was accepted")
	}
}

// TestGridFlag checks that --grid keeps each axis in the form given and refuses a bad
// one with hparam's error, which names the spec and what is wrong with it.
func TestGridFlag(t *testing.T) {
	var g gridFlag
	for _, spec := range []string{"lambda=log:1e-4:10:16", "c=loglist:0.1,1"} {
		if err := g.Set(spec); err != nil {
			t.Fatalf("Set(%q): %v", spec, err)
		}
	}
	if len(g) != 2 || g[0].Kind != hparam.AxisLog || g[0].Count != 16 || g[1].Kind != hparam.AxisLogList {
		t.Errorf("grid = %+v, want a log range of 16 and a log list", g)
	}
	for spec, want := range map[string]string{
		"lambda=log:0:1:4":   `parameter spec "lambda=log:0:1:4": parameter "lambda": log range needs lo > 0`,
		"lambda=cubic:1:2:3": `unknown kind "cubic"`,
		"lambda=list:1,x":    `value 2 "x" is not a number`,
	} {
		if err := g.Set(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%q) error = %v, want one containing %q", spec, err, want)
		}
	}
	if len(g) != 2 {
		t.Errorf("refused axes were kept: %+v", g)
	}
}
