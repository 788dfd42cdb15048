package integration

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestKusnerForecastRefusesAtNoCost: a Kusner job whose forecast finds its releases no
// better than a uniform pick (Algorithm 1 at ε = 1 on the 16-point λ grid) is quoted for
// free, refused with FAILED_PRECONDITION carrying the forecast and the ε at which it
// would help as status details, and nothing reaches the ledger — no charge record, no
// spend; with force it runs and is charged 2ε. A job the forecast finds informative
// (ε = 8) is accepted without force.
func TestKusnerForecastRefusesAtNoCost(t *testing.T) {
	state := t.TempDir()
	cur := startCurator(t, breastCancerConfig(t, state))
	client := cur.client(t, "tuner")
	ctx := context.Background()
	spec := kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 1)
	spec.GetKusner().Force = false

	q, err := client.QuoteJob(ctx, &curatorv1.QuoteJobRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	f := q.GetKusnerForecast()
	if !q.GetRefused() || f.GetInformative() || q.GetEpsilon() != 2 || q.GetDelta() != 2e-3 || q.GetRelation() != string(ledger.RelationValidationRecord) {
		t.Fatalf("QuoteJob = %v, want refused, not informative, (2, 0.002) under validation-record", q)
	}
	if f.GetCandidates() != 16 || f.GetObjectiveRange() != 1 || f.GetGap() != 0.05 || f.GetMargin() != 0.1 ||
		!(f.GetSelectionLift() > 1 && f.GetSelectionLift() < 1.1) || !(f.GetEpsilonNeeded() > 1) || math.IsInf(f.GetEpsilonNeeded(), 1) {
		t.Errorf("forecast %v: want 16 candidates, range 1, gap 0.05, margin 0.1, a lift in (1, 1.1) and a finite ε needed above 1", f)
	}

	_, err = client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "uniform", Spec: spec})
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		t.Fatalf("SubmitJob at ε = 1: %v, want FailedPrecondition", err)
	}
	var info *errdetails.ErrorInfo
	var detail *curatorv1.KusnerForecast
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *curatorv1.KusnerForecast:
			detail = d
		}
	}
	if info.GetReason() != "KUSNER_RELEASE_UNINFORMATIVE" || info.GetMetadata()["epsilon_needed"] == "" {
		t.Errorf("refusal ErrorInfo = %v, want reason KUSNER_RELEASE_UNINFORMATIVE with epsilon_needed", info)
	}
	if detail.GetEpsilonNeeded() != f.GetEpsilonNeeded() || detail.GetSelectionLift() != f.GetSelectionLift() {
		t.Errorf("refusal's forecast %v differs from the quote's %v", detail, f)
	}
	if got := relationBudget(t, client, ledger.RelationValidationRecord).GetEpsilonSpent(); got != 0 {
		t.Errorf("after the quote and the refusal, validation-record spent ε = %g, want 0", got)
	}
	if l, _ := client.ListJobs(ctx, &curatorv1.ListJobsRequest{}); len(l.GetJobs()) != 0 {
		t.Errorf("the refused job was recorded: %d jobs", len(l.GetJobs()))
	}

	// Forced, the same spec runs and pays 2ε.
	spec.GetKusner().Force = true
	j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "forced", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := waitJob(t, client, j.GetId()); done.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("forced job: %s %q", done.GetState(), done.GetError())
	}
	// At ε = 8 a release beats a uniform pick by the margin: accepted without force.
	informative := kusnerJob(curatorv1.KusnerSpec_ALGORITHM_NOISY_GP, 8)
	informative.GetKusner().Force = false
	j8, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "eps8", Spec: informative})
	if err != nil {
		t.Fatalf("SubmitJob at ε = 8: %v, want accepted", err)
	}
	waitJob(t, client, j8.GetId())
	if got := relationBudget(t, client, ledger.RelationValidationRecord).GetEpsilonSpent(); got != 2+16 {
		t.Errorf("validation-record spent ε = %g, want 2 (forced) + 16 (ε = 8)", got)
	}
	cur.stop(t)

	// The ledger itself: the two accepted jobs' charges, and nothing for the refused key.
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 100, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 100, Delta: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	entries, err := store.Entries(ctx, "breast-cancer")
	if err != nil {
		t.Fatal(err)
	}
	jobCharges := 0
	for _, e := range entries {
		if e.Kind == ledger.KindJobPrefix+"kusner" {
			jobCharges++
		}
	}
	if jobCharges != 2 {
		t.Errorf("the ledger holds %d Kusner job charges, want 2 (the forced job and ε = 8; none for the refused one): %+v", jobCharges, entries)
	}
}
