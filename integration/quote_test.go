package integration

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/refusal"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// reason is the ErrorInfo reason of a status error ("" if none).
func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == refusal.Domain {
			return ei.GetReason()
		}
	}
	return ""
}

// TestQuoteAndJointChargeOverTheWire checks the study RPCs through the generated client
// against a curator whose identity budget holds one study: QuoteStudy resolves the
// default study and charges nothing; a release with with_answers that the budget
// cannot pay with its answers is RESOURCE_EXHAUSTED (BUDGET_EXCEEDED) with nothing
// charged, although the projection alone fits, as an old request without the field
// shows; r above d is INVALID_ARGUMENT (DIMENSION_ABOVE_FEATURES); and on a curator
// whose δ budget is 0 the quote and the release are FAILED_PRECONDITION
// (DELTA_BUDGET_ZERO). No refusal's text names a curator flag.
func TestQuoteAndJointChargeOverTheWire(t *testing.T) {
	ctx := context.Background()
	cur := curatortest.Start(t, curatortest.Options{
		Scaling: diabetesScaling(t),
		Budget:  ledger.Cost{Epsilon: 3, Delta: 1e-6}, DatasetBudget: ledger.Cost{Epsilon: 100, Delta: 1e-3},
		Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1},
	})
	c := cur.Client(t, "vendor")
	spent := func() float64 {
		t.Helper()
		b, err := c.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return b.GetBudget().GetEpsilonSpent()
	}
	q, err := c.QuoteStudy(ctx, &curatorv1.QuoteStudyRequest{WithAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	p, a := q.GetProjection(), q.GetAnswers()
	if !p.GetDimensionChosen() || p.GetDimension() < 1 || p.GetDimension() > 10 || p.GetEpsilon() != curator.DefaultStudyEpsilon ||
		!(p.GetNoiseSd() > 0) || !a.GetIncluded() || a.GetLower() != 0 || a.GetUpper() != 400 || !q.GetFits() ||
		q.GetDefaultStudy().GetPerIdentity() != 1 {
		t.Errorf("quote of the default study: %v", q)
	}
	if s := spent(); s != 0 {
		t.Errorf("a quote charged ε=%g", s)
	}

	// ε 2.5 with the answers' 1: refused by the curator (a client that did not quote).
	big := &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 2.5, Delta: 1e-7, WithAnswers: true}
	_, err = curatorclient.FetchProjection(ctx, c, big)
	if status.Code(err) != codes.ResourceExhausted || reason(err) != string(refusal.BudgetExceeded) || strings.Contains(err.Error(), "--") {
		t.Errorf("joint release beyond the budget: %v (reason %q), want RESOURCE_EXHAUSTED, BUDGET_EXCEEDED, no flag named", err, reason(err))
	}
	if s := spent(); s != 0 {
		t.Errorf("the refused joint release charged ε=%g", s)
	}
	big.WithAnswers = false
	if _, err := curatorclient.FetchProjection(ctx, c, big); err != nil {
		t.Fatalf("the projection alone (an old request): %v", err)
	}
	if s := spent(); s != 2.5 {
		t.Errorf("the projection alone charged ε=%g, want 2.5", s)
	}

	_, err = c.QuoteStudy(ctx, &curatorv1.QuoteStudyRequest{Dimension: 11, WithAnswers: true})
	if status.Code(err) != codes.InvalidArgument || reason(err) != string(refusal.DimensionAboveFeatures) || !strings.Contains(err.Error(), "r ≤ 10") {
		t.Errorf("quote of r = 11 on d = 10: %v, want INVALID_ARGUMENT, DIMENSION_ABOVE_FEATURES", err)
	}
	_, err = curatorclient.FetchProjection(ctx, c, &curatorv1.ReleaseProjectionRequest{Dimension: 11, Epsilon: 0.1, Delta: 1e-7})
	if status.Code(err) != codes.InvalidArgument || reason(err) != string(refusal.DimensionAboveFeatures) {
		t.Errorf("release of r = 11 on d = 10: %v, want INVALID_ARGUMENT, DIMENSION_ABOVE_FEATURES", err)
	}

	noDelta := curatortest.Start(t, curatortest.Options{Scaling: diabetesScaling(t), Budget: ledger.Cost{Epsilon: 3},
		Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}})
	nc := noDelta.Client(t, "vendor")
	for name, call := range map[string]func() error{
		"quote": func() error {
			_, err := nc.QuoteStudy(ctx, &curatorv1.QuoteStudyRequest{WithAnswers: true})
			return err
		},
		"release": func() error {
			_, err := curatorclient.FetchProjection(ctx, nc, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-7})
			return err
		},
	} {
		err := call()
		if status.Code(err) != codes.FailedPrecondition || reason(err) != string(refusal.DeltaBudgetZero) ||
			!strings.Contains(err.Error(), "δ budget is 0") || strings.Contains(err.Error(), "--") {
			t.Errorf("%s with a zero δ budget: %v (reason %q), want FAILED_PRECONDITION, DELTA_BUDGET_ZERO, no flag named", name, err, reason(err))
		}
	}
}
