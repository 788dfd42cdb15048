package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestDigitsDPHyPOThroughModeler runs a multi-class DP-HyPO job end to end: a real curator
// process serves the shipped digits (10 classes, declared by the schema's target line)
// with jobs on; `modeler job dphypo` submits a GP-guided search over a small learning
// rate × clipping norm grid (the paper's C, c, τ, β; 1 epoch and E[T] = 2, a size CI
// affords) with its noise calibrated to ε = 8, waits, and prints the released candidate.
// The charge is checked under training-add-remove, the modeler's report shows no run
// count, and the operator's report (read from the curator's state while it serves)
// shows the path.
func TestDigitsDPHyPOThroughModeler(t *testing.T) {
	curBin, modBin := buildBinary(t, "./cmd/curator"), buildBinary(t, "./cmd/modeler")
	state := t.TempDir()
	data := filepath.Join("..", "examples", "data")
	cur := startRealCurator(t, curBin, "--data", filepath.Join(data, "digits.csv"), "--target", "digit",
		"--schema", filepath.Join(data, "digits.schema.csv"), "--dataset-id", "digits", "--state", state,
		"--budget-epsilon", "20", "--budget-delta", "1e-4", "--jobs")
	t.Cleanup(cur.kill)
	modeler := func(args ...string) (string, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, modBin, append(args, "--curator", cur.addr, "--identity", "vendor")...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := modeler("job", "dphypo", "--grid", "learning_rate=log:0.1:2:3", "--grid", "clip_norm=linear:1:3:3",
		"--c-max", "2", "--c-min", "0.75", "--tau", "0.1", "--beta", "1", "--gamma", "0.5", "--epochs", "1",
		"--epsilon", "8", "--delta", "1e-5", "--json")
	if err != nil {
		t.Fatalf("modeler job dphypo: %v\n%s%s", err, out, errOut)
	}
	t.Logf("modeler job dphypo:\n%s%s", errOut, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var job struct {
		ID             string  `json:"id"`
		State          string  `json:"state"`
		EpsilonCharged float64 `json:"epsilon_charged"`
		DeltaCharged   float64 `json:"delta_charged"`
		Guarantee      string  `json:"guarantee"`
		Result         struct {
			Hyperparameters map[string]float64 `json:"hyperparameters"`
			Score           float64            `json:"score"`
			Runs            int                `json:"runs"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &job); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	h := job.Result.Hyperparameters
	if job.State != "JOB_STATE_SUCCEEDED" || !oneOf(h["learning_rate"], 0.1, 0.4472135954999579, 2) || !oneOf(h["clip_norm"], 1, 2, 3) {
		t.Errorf("job = %+v, want succeeded with a released grid point", job)
	}
	if job.Result.Runs != 0 || strings.Contains(out, "runs =") {
		t.Errorf("the job released a run count (%d):\n%s", job.Result.Runs, out)
	}
	if !(job.EpsilonCharged <= 8 && job.EpsilonCharged > 7.5) || job.DeltaCharged != 1e-5 {
		t.Errorf("charged (%g, %g), want ε just below the target 8 at δ = 1e-5", job.EpsilonCharged, job.DeltaCharged)
	}
	if !strings.Contains(job.Guarantee, "softmax regression over the 10 public classes") || !strings.Contains(job.Guarantee, "training-add-remove") {
		t.Errorf("guarantee %q does not state the 10-class learner and its relation", job.Guarantee)
	}
	conn := dial(t, cur.addr, "vendor")
	client := curatorv1.NewCuratorServiceClient(conn)
	if got := relationBudget(t, client, ledger.RelationTrainingAddRemove).GetEpsilonSpent(); got != job.EpsilonCharged {
		t.Errorf("training-add-remove spent ε = %g, want the job's %g", got, job.EpsilonCharged)
	}

	// The modeler's report: the release and the envelope, no path.
	mdir := t.TempDir()
	if _, errOut, err := modeler("job", "report", job.ID, "--out", mdir); err != nil {
		t.Fatalf("modeler job report: %v\n%s", err, errOut)
	}
	page, err := os.ReadFile(filepath.Join(mdir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "between 0.75× and 2× the uniform density") || strings.Contains(string(page), "operator only") {
		t.Errorf("the modeler's report lacks the density envelope or shows the operator's path")
	}
	// The operator's report, from the serving curator's state: every run.
	odir := t.TempDir()
	rep := exec.Command(curBin, "job-report", "--state", state, "--job", job.ID, "--out", odir)
	if b, err := rep.CombinedOutput(); err != nil {
		t.Fatalf("curator job-report: %v\n%s", err, b)
	}
	page, err = os.ReadFile(filepath.Join(odir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "Runs (operator only)") || !strings.Contains(string(page), "<td>1</td><td>clip_norm = ") {
		t.Errorf("the operator's report lacks the runs table")
	}
}

func oneOf(x float64, vals ...float64) bool {
	for _, v := range vals {
		if x == v || (v != 0 && (x-v)/v < 1e-12 && (v-x)/v < 1e-12) {
			return true
		}
	}
	return false
}
