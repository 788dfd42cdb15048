package integration

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/learner"
	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestKusnerJobGuaranteeOnTheWire: row (e) of the privacy path table (docs/PRIVACY.md
// §6b) on the wire. A Kusner Algorithm 3 job at ε = 2 on the breast-cancer data: the
// quote, the submitted job and the finished job state the guarantee built here from the
// job's parameters — the grid's λ range [1e-4, 10], the sigmoid score's L = 1/4 and
// g* = 1, the validation size m = round(0.3 · 569) = 171 — under the validation-record
// relation, and (no training part declared consented) a whole patient NOT BOUNDED; the
// quote charges nothing, the job is charged (2, 0) under validation-record, and the
// ledger's whole-patient figure is unbounded.
func TestKusnerJobGuaranteeOnTheWire(t *testing.T) {
	cur := startCurator(t, breastCancerConfig(t, t.TempDir()))
	client := cur.client(t, "tuner")
	ctx := context.Background()
	spec := kusnerJob(curatorv1.KusnerSpec_ALGORITHM_LIPSCHITZ, 2)

	m := int(math.Round(0.3 * 569))
	const wholePatient = "Whole patient: NOT BOUNDED — a patient of the training part is used by the learner with no mechanism."
	want := fmt.Sprintf("(%g, 0)-differentially private for the validation set (neighbours: one validation record replaced): "+
		"the best validation score by the Laplace mechanism (Kusner et al. 2015, Algorithm 3, Corollary 4), with no "+
		"Gaussian process assumption. Rests on Assumption 2: the model minimises λ/2‖w‖² + (1/n)Σℓ with ℓ convex and "+
		"1-Lipschitz in w on the non-sensitive training set, every λ of the grid in [%g, %g], the validation score is "+
		"−(1/m)Σg with g %g-Lipschitz in w and 0 ≤ g ≤ %g, m = %d."+
		" Neighbour relation validation-record: one record of the validation set is replaced by any "+
		"other record (the validation size is public). The training records are NOT protected: the learner is trained on "+
		"them without any privacy mechanism (Kusner et al.'s setting, in which the training set is not sensitive), so a "+
		"change of one training record is not covered by this guarantee."+
		" "+wholePatient,
		2.0, 1e-4, 10.0, learner.SigmoidLipschitz, learner.SigmoidBound, m)

	q, err := client.QuoteJob(ctx, &curatorv1.QuoteJobRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetGuarantee() != want || q.GetRelation() != string(ledger.RelationValidationRecord) || q.GetEpsilon() != 2 || q.GetDelta() != 0 {
		t.Errorf("quote: (%g, %g) under %s, guarantee\n got: %s\nwant: %s", q.GetEpsilon(), q.GetDelta(), q.GetRelation(), q.GetGuarantee(), want)
	}
	if b := relationBudget(t, client, ledger.RelationValidationRecord); b.GetEpsilonSpent() != 0 {
		t.Errorf("a quote spent ε %g, want 0", b.GetEpsilonSpent())
	}
	j, err := client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: "paths", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if j.GetGuarantee() != want || j.GetEpsilonCharged() != 2 || j.GetDeltaCharged() != 0 {
		t.Errorf("submitted job: (%g, %g), guarantee\n got: %s\nwant: %s", j.GetEpsilonCharged(), j.GetDeltaCharged(), j.GetGuarantee(), want)
	}
	done, _ := waitJob(t, client, j.GetId())
	if done.GetState() != curatorv1.JobState_JOB_STATE_SUCCEEDED || done.GetGuarantee() != want {
		t.Errorf("finished job: %s %q, guarantee\n got: %s\nwant: %s", done.GetState(), done.GetError(), done.GetGuarantee(), want)
	}
	// The result's own text is the mechanism's (kusner.Config.Guarantee): the job's text
	// without its whole-patient sentence, which the job states.
	if g, head := done.GetResult().GetGuarantee(), strings.TrimSuffix(want, " "+wholePatient); g != head || done.GetResult().GetEpsilon() != 2 {
		t.Errorf("result: ε %g, guarantee\n got: %s\nwant: %s", done.GetResult().GetEpsilon(), g, head)
	}
	if b := relationBudget(t, client, ledger.RelationValidationRecord); b.GetEpsilonSpent() != 2 {
		t.Errorf("the job spent ε %g under validation-record, want 2", b.GetEpsilonSpent())
	}
	b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if wp := b.GetBudget().GetWholePatient(); wp.GetBounded() {
		t.Errorf("whole patient after a Kusner job without consent: %v, want not bounded", wp)
	}
}
