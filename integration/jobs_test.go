package integration

import (
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/tuning"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

var breastCancerPath = filepath.Join("..", "examples", "data", "breast_cancer.csv")

func breastCancerConfig(t *testing.T, state string) config.Config {
	t.Helper()
	// The shipped schema's public bounds scale the data and DP-HyPO's learner.
	sc, err := dataset.ParseScaling("schema:" + filepath.Join("..", "examples", "data", "breast_cancer.schema.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return config.Config{
		Listen:   "127.0.0.1:0",
		DataPath: breastCancerPath,
		Data:     dataset.Options{Target: "benign", Scaling: sc},
		StateDir: state,
		// Jobs are charged under the dataset id; answers are private (0/1 target).
		DatasetID: "breast-cancer",
		Output:    curator.OutputPrivacy{Lower: 0, Upper: 1},
		Budget:    ledger.Cost{Epsilon: 100, Delta: 0.5},
		Jobs: config.JobsConfig{Enabled: true, ValidationFraction: 0.3, SplitSeed: 1,
			Kusner: tuning.KusnerAssumptions{K1: 0.5, NoiseVariance: 0.01}},
	}
}

func lambdaGrid() []*curatorv1.HyperparameterRange {
	return []*curatorv1.HyperparameterRange{{Name: "lambda", Scale: curatorv1.HyperparameterRange_SCALE_LOG, Low: 1e-4, High: 10, Count: 16}}
}

// kusnerJob is a Kusner job with force set: at these ε its forecast finds the releases no
// better than a uniform pick, which TestKusnerForecastRefusesAtNoCost tests; the other
// tests are about what happens once a job runs.
func kusnerJob(alg curatorv1.KusnerSpec_Algorithm, eps float64) *curatorv1.JobSpec {
	return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{
		Algorithm: alg, Space: lambdaGrid(), Iterations: 10, Epsilon: eps, Delta: 1e-3, Force: true}}}
}

// waitJob watches a job to its end and returns it.
// relationBudget returns identity's budget under the neighbour relation rel from
// GetBudget's per-relation list (a job spends its own relation's budget, which the
// Budget's own, feature-unit, fields do not hold).
func relationBudget(t *testing.T, client curatorv1.CuratorServiceClient, rel ledger.Relation) *curatorv1.RelationBudget {
	t.Helper()
	b, err := client.GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range b.GetBudget().GetRelations() {
		if r.GetRelation() == string(rel) {
			return r
		}
	}
	t.Fatalf("GetBudget lists no %s budget: %v", rel, b.GetBudget().GetRelations())
	return nil
}

func waitJob(t *testing.T, client curatorv1.CuratorServiceClient, id string) (*curatorv1.Job, []*curatorv1.JobEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream, err := client.WatchJob(ctx, &curatorv1.WatchJobRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	var events []*curatorv1.JobEvent
	for {
		e, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("WatchJob: %v", err)
		}
		events = append(events, e)
	}
	j, err := client.GetJob(ctx, &curatorv1.GetJobRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	return j, events
}

func TestKusnerJobsEndToEnd(t *testing.T) {
	cfg := breastCancerConfig(t, t.TempDir())
	cfg.MetricsListen = "127.0.0.1:0"
	cur := startCurator(t, cfg)
	client := cur.client(t, "tuner")
	ctx := context.Background()

	// Algorithm 1 releases λ̃ and ṽ at (2ε, 2δ).
	j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "alg1", Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if j.GetEpsilonCharged() != 2 || j.GetDeltaCharged() != 2e-3 {
		t.Errorf("Algorithm 1 charged (%g, %g), want (2ε, 2δ) = (2, 0.002)", j.GetEpsilonCharged(), j.GetDeltaCharged())
	}
	done, events := waitJob(t, client, j.GetId())
	if done.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("Algorithm 1 job: %s %q", done.GetState(), done.GetError())
	}
	r := done.GetResult()
	lambda, ok := r.GetHyperparameters()["lambda"]
	if !r.GetHasHyperparameters() || !ok || lambda < 1e-4 || lambda > 10 {
		t.Errorf("Algorithm 1 released λ̃ = %v, want one grid value", r.GetHyperparameters())
	}
	if r.GetEpsilon() != 2 || !strings.Contains(r.GetGuarantee(), "(2") || math.IsNaN(r.GetScore()) {
		t.Errorf("Algorithm 1 result: ε=%g guarantee %q score %g", r.GetEpsilon(), r.GetGuarantee(), r.GetScore())
	}
	if len(events) < 3 || events[len(events)-1].GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("events: %d, last %v; want progress ending in succeeded", len(events), events[len(events)-1])
	}
	// Resubmitting with the same key returns the same finished job at no cost.
	again, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "alg1", Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)})
	if err != nil || again.GetId() != j.GetId() || again.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("resubmit = %v %v, want the finished job", again.GetState(), err)
	}
	_, err = client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "alg1", Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 2)})
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("same key, other spec: %v, want AlreadyExists", err)
	}

	// Algorithm 3 releases only f̃_L at ε.
	j3, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_LIPSCHITZ, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done3, _ := waitJob(t, client, j3.GetId())
	if done3.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED || done3.GetResult().GetHasHyperparameters() || done3.GetEpsilonCharged() != 1 || done3.GetDeltaCharged() != 0 {
		t.Errorf("Algorithm 3 job: %s, hyperparameters %v, charged (%g, %g); want succeeded, none, (1, 0)",
			done3.GetState(), done3.GetResult().GetHasHyperparameters(), done3.GetEpsilonCharged(), done3.GetDeltaCharged())
	}
	if c := done3.GetResult().GetConstants(); c["laplace_scale"] <= 0 && c["laplace_sensitivity"] <= 0 {
		t.Errorf("Algorithm 3 constants %v: want its Laplace scale", c)
	}
	// Kusner et al.'s jobs are stated for one validation record replaced: they spend that
	// relation's budget and no other.
	if got := relationBudget(t, client, ledger.RelationValidationRecord); got.GetEpsilonSpent() != 3 || got.GetEpsilonRemaining() != 97 {
		t.Errorf("validation-record budget: spent ε = %g, remaining %g; want 2 + 1 and 97", got.GetEpsilonSpent(), got.GetEpsilonRemaining())
	}
	if b, _ := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); b.GetBudget().GetEpsilonSpent() != 0 {
		t.Errorf("feature-unit spent ε = %g, want 0 (the jobs' relation is another)", b.GetBudget().GetEpsilonSpent())
	}
	list, err := client.ListJobs(ctx, &curatorv1.ListJobsRequest{})
	if err != nil || len(list.GetJobs()) != 2 {
		t.Errorf("ListJobs = %d jobs, %v; want 2", len(list.GetJobs()), err)
	}
	// Another identity sees none of them.
	if _, err := cur.client(t, "other").GetJob(ctx, &curatorv1.GetJobRequest{Id: j.GetId()}); status.Code(err) != codes.NotFound {
		t.Errorf("another identity's GetJob: %v, want NotFound", err)
	}

	// The metrics listener reports requests, budgets and jobs.
	resp, err := http.Get("http://" + cur.srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="SubmitJob",grpc_service="privbo.curator.v1.CuratorService",grpc_type="unary"} 3`,
		`grpc_server_handled_total{grpc_code="AlreadyExists",grpc_method="SubmitJob",grpc_service="privbo.curator.v1.CuratorService",grpc_type="unary"} 1`,
		`grpc_server_handling_seconds_count{grpc_method="GetBudget",grpc_service="privbo.curator.v1.CuratorService",grpc_type="unary"} 2`,
		`privbo_budget_spent_epsilon{dataset="breast-cancer",identity="tuner",relation="validation-record"} 3`,
		`privbo_budget_remaining_epsilon{dataset="breast-cancer",identity="tuner",relation="validation-record"} 97`,
		`privbo_jobs{state="succeeded"} 2`,
		`privbo_jobs{state="running"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

func TestBadJobSpecsCostNothing(t *testing.T) {
	evalDir := t.TempDir()
	garbage := filepath.Join(evalDir, "garbage.sh")
	slow := filepath.Join(evalDir, "slow.sh")
	os.WriteFile(garbage, []byte("#!/bin/sh\ncat >/dev/null\necho 'not json'\n"), 0o755)
	os.WriteFile(slow, []byte("#!/bin/sh\nsleep 5\necho 1\n"), 0o755)
	cfg := breastCancerConfig(t, t.TempDir())
	cfg.Jobs.Evaluators = []tuning.Evaluator{
		{Name: "garbage", Command: []string{garbage}, Timeout: 2 * time.Second},
		{Name: "slow", Command: []string{slow}, Timeout: 200 * time.Millisecond},
	}
	cur := startCurator(t, cfg)
	client := cur.client(t, "tuner")
	ctx := context.Background()
	mk := func(f func(*curatorv1.KusnerSpec)) *curatorv1.JobSpec {
		s := kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)
		f(s.GetKusner())
		return s
	}
	for _, tc := range []struct {
		name string
		spec *curatorv1.JobSpec
		want string
	}{
		{"empty grid", mk(func(s *curatorv1.KusnerSpec) { s.Space = nil }), "empty"},
		{"T = 0", mk(func(s *curatorv1.KusnerSpec) { s.Iterations = 0 }), "iteration"},
		{"ε = 0", mk(func(s *curatorv1.KusnerSpec) { s.Epsilon = 0 }), "psilon"},
		{"δ = 1", mk(func(s *curatorv1.KusnerSpec) { s.Delta = 1 }), "elta"},
		{"unknown hyperparameter", mk(func(s *curatorv1.KusnerSpec) { s.Space[0].Name = "depth" }), "lambda"},
		{"unknown evaluator", mk(func(s *curatorv1.KusnerSpec) { s.Evaluator = "nope" }), "nope"},
		{"modeler's k1", mk(func(s *curatorv1.KusnerSpec) { s.K1 = 0.999999 }), "operator"},
		{"modeler's A", mk(func(s *curatorv1.KusnerSpec) { s.Algorithm, s.A, s.Tau = 2, 1e-300, 1 }), "operator"},
		{"no kind", &curatorv1.JobSpec{}, "kusner or dphypo"},
	} {
		_, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: tc.spec})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: %v, want InvalidArgument mentioning %q", tc.name, err, tc.want)
		}
	}
	// Evaluators that misbehave fail the job with a clear, data-free error.
	for name, want := range map[string]string{"garbage": "did not print a valid score", "slow": "timed out"} {
		j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: mk(func(s *curatorv1.KusnerSpec) {
			s.Evaluator = name
			s.Space = []*curatorv1.HyperparameterRange{{Name: "depth", Scale: curatorv1.HyperparameterRange_SCALE_LIST, Values: []float64{1, 2, 3}}}
		})})
		if err != nil {
			t.Fatal(err)
		}
		done, _ := waitJob(t, client, j.GetId())
		if done.GetState() != curatorv1.JobState_JOB_STATE_FAILED || !strings.Contains(done.GetError(), want) {
			t.Errorf("evaluator %s: %s %q, want failed with %q", name, done.GetState(), done.GetError(), want)
		}
	}
	// The refused specs cost nothing; the two evaluator jobs were accepted, so they did.
	if got := relationBudget(t, client, ledger.RelationValidationRecord).GetEpsilonSpent(); got != 4 {
		t.Errorf("validation-record spent ε = %g, want 4 (two accepted jobs at 2ε, refused specs free)", got)
	}
}

func TestJobInterruptedByRestart(t *testing.T) {
	evalDir := t.TempDir()
	prog := filepath.Join(evalDir, "slowish.sh")
	os.WriteFile(prog, []byte("#!/bin/sh\ncat >/dev/null\nsleep 0.2\necho '{\"score\": 0.5}'\n"), 0o755)
	state := t.TempDir()
	cfg := breastCancerConfig(t, state)
	cfg.Jobs.Evaluators = []tuning.Evaluator{{Name: "slowish", Command: []string{prog}, Timeout: 5 * time.Second}}
	first := startCurator(t, cfg)
	client := first.client(t, "tuner")
	ctx := context.Background()
	spec := kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)
	spec.GetKusner().Evaluator = "slowish"
	spec.GetKusner().Iterations = 30
	spec.GetKusner().Space = []*curatorv1.HyperparameterRange{{Name: "depth", Scale: curatorv1.HyperparameterRange_SCALE_LINEAR, Low: 1, High: 10, Count: 10}}
	j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "long", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the job to be running, then restart the curator under it.
	stream, err := client.WatchJob(ctx, &curatorv1.WatchJobRequest{Id: j.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	for {
		e, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e.GetStep() >= 2 {
			break
		}
	}
	first.stop(t)

	second := startCurator(t, cfg)
	c2 := second.client(t, "tuner")
	got, err := c2.GetJob(ctx, &curatorv1.GetJobRequest{Id: j.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetState() != curatorv1.JobState_JOB_STATE_FAILED || !strings.Contains(got.GetError(), "interrupted") {
		t.Errorf("after restart: %s %q, want failed (interrupted)", got.GetState(), got.GetError())
	}
	if got := relationBudget(t, c2, ledger.RelationValidationRecord).GetEpsilonSpent(); got != 2 {
		t.Errorf("validation-record spent ε after an interrupted job = %g, want its 2 (the charge stays)", got)
	}
	// The finished jobs list survives too, and a new job runs to completion.
	j2, err := c2.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := waitJob(t, c2, j2.GetId()); done.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("job after restart: %s %q", done.GetState(), done.GetError())
	}
	if l, _ := c2.ListJobs(ctx, &curatorv1.ListJobsRequest{}); len(l.GetJobs()) != 2 {
		t.Errorf("ListJobs after restart: %d jobs, want 2", len(l.GetJobs()))
	}
}

func dphypoJob(uniform bool) *curatorv1.JobSpec {
	return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{
		Space: []*curatorv1.HyperparameterRange{
			{Name: "learning_rate", Scale: curatorv1.HyperparameterRange_SCALE_LOG, Low: 0.05, High: 2, Count: 8},
			{Name: "clip_norm", Scale: curatorv1.HyperparameterRange_SCALE_LINEAR, Low: 0.3, High: 3, Count: 10},
		},
		Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Tau: 0.1, Beta: 1, Uniform: uniform, Delta: 1e-5,
		Dpsgd: &curatorv1.DPSGDSettings{NoiseMultiplier: 1, Epochs: 3, BatchSize: 64, L2: 1e-3, LearningRate: 0.5, ClipNorm: 1, ScoreNoiseMultiplier: 2},
	}}}
}

func TestDPHyPOJobsEndToEnd(t *testing.T) {
	cur := startCurator(t, breastCancerConfig(t, t.TempDir()))
	client := cur.client(t, "tuner")
	ctx := context.Background()
	spent := 0.0
	for _, uniform := range []bool{false, true} {
		j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: dphypoJob(uniform)})
		if err != nil {
			t.Fatal(err)
		}
		done, events := waitJob(t, client, j.GetId())
		if done.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("DP-HyPO (uniform=%v): %s %q", uniform, done.GetState(), done.GetError())
		}
		r := done.GetResult()
		if !r.GetHasHyperparameters() || len(r.GetHyperparameters()) != 2 || r.GetRuns() != 0 {
			t.Errorf("DP-HyPO result %v: want both hyperparameters and no run count", r)
		}
		for _, e := range events {
			if e.GetTotal() != 0 || e.GetStep() != 0 {
				t.Errorf("event %v reveals run counts", e)
			}
		}
		t.Logf("DP-HyPO uniform=%v: charged ε=%.3f δ=%g, released %v with noisy accuracy %.3f", uniform, done.GetEpsilonCharged(), done.GetDeltaCharged(), r.GetHyperparameters(), r.GetScore())
		spent += done.GetEpsilonCharged()
	}
	// DP-HyPO's DP-SGD runs are stated for one training record added or removed.
	if got := relationBudget(t, client, ledger.RelationTrainingAddRemove).GetEpsilonSpent(); math.Abs(got-spent) > 1e-9 {
		t.Errorf("training-add-remove spent ε = %g, want the two jobs' charges %g", got, spent)
	}
	if got := relationBudget(t, client, ledger.RelationValidationRecord).GetEpsilonSpent(); got != 0 {
		t.Errorf("validation-record spent ε = %g, want 0 (DP-HyPO spends its own relation)", got)
	}
	bad := dphypoJob(false)
	bad.GetDphypo().CMin = 1.5
	if _, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: bad}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("c > 1: %v, want InvalidArgument", err)
	}
}
