package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
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
		Jobs:     server.JobsConfig{Enabled: true},
		// The jobs' budget is kept under the dataset id; answers are not asked for.
		DatasetID: "breast-cancer",
		Output:    curator.OutputPrivacy{Lower: 0, Upper: 1},
	})
	cmd := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(append(args, "--curator", cur.Addr, "--identity", "cli-jobs"), &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := cmd("job", "kusner", "--algorithm", "1", "--grid", "lambda=log:1e-4:10:8", "--iterations", "5",
		"--epsilon", "1", "--delta", "1e-3", "--idempotency-key", "k1", "--json")
	if err != nil {
		t.Fatalf("job kusner: %v\n%s", err, errOut)
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
	again, _, err := cmd("job", "kusner", "--algorithm", "1", "--grid", "lambda=log:1e-4:10:8", "--iterations", "5",
		"--epsilon", "1", "--delta", "1e-3", "--idempotency-key", "k1", "--detach")
	if err != nil || !strings.Contains(again, job.ID) {
		t.Errorf("resubmission with the same key: %v\n%s; want job %s", err, again, job.ID)
	}
	// DP-HyPO with the modeler's defaults: the curator calibrates the noise to ε = 2 at
	// δ = 1e-6 and charges just that.
	spent := func() float64 {
		t.Helper()
		client, closeConn, err := (&connFlags{addr: cur.Addr, identity: "cli-jobs"}).client()
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn()
		b, err := client.GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.GetBudget().GetRelations() {
			if r.GetRelation() == string(ledger.RelationTrainingAddRemove) {
				return r.GetEpsilonSpent()
			}
		}
		return 0
	}
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
	// A target the paper's density bounds cannot meet is refused, naming the field,
	// and costs nothing.
	before := spent()
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
