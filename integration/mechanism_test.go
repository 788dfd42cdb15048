package integration

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestGaussianProjectionMechanism runs the curator with its default projection
// mechanism, gaussian: the release is charged once, replayed byte for byte at no cost, says
// which guarantee it carries, has another release id than the lifted mechanism's
// for the same parameters, and the operator log records the noise σ.
func TestGaussianProjectionMechanism(t *testing.T) {
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 5, Epsilon: 7.389, Delta: 1e-4}
	ctx := context.Background()

	lcfg := diabetesConfig(t, t.TempDir())
	lcfg.ProjectionMechanism = projection.MechanismLifted
	lifted := startCurator(t, lcfg)
	pl, err := curatorclient.FetchProjection(ctx, lifted.client(t, "acme"), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pl.Guarantee, "use the gaussian projection mechanism") || strings.Contains(pl.Guarantee, "--") {
		t.Errorf("lifted release's guarantee %q does not point to the Gaussian mechanism, or names a curator flag", pl.Guarantee)
	}

	cur := startCurator(t, diabetesConfig(t, t.TempDir())) // the default mechanism
	client := cur.client(t, "acme")
	p1, err := curatorclient.FetchProjection(ctx, client, req)
	if err != nil {
		t.Fatal(err)
	}
	if p1.Replayed || p1.Rows != 442 || p1.Cols != 5 || len(p1.Z) != 442*5 {
		t.Fatalf("release: replayed %v, %d×%d, %d values", p1.Replayed, p1.Rows, p1.Cols, len(p1.Z))
	}
	if !strings.Contains(p1.Guarantee, "Gaussian noise") {
		t.Errorf("guarantee = %q, want the Gaussian mechanism's", p1.Guarantee)
	}
	if p1.ReleaseID == pl.ReleaseID {
		t.Errorf("both mechanisms named their release %s", p1.ReleaseID)
	}
	if got := p1.Budget.GetEpsilonSpent(); got != 7.389 {
		t.Errorf("ε spent = %g, want 7.389", got)
	}
	p2, err := curatorclient.FetchProjection(ctx, client, req)
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Replayed || !slices.Equal(p1.Z, p2.Z) || p2.Budget.GetEpsilonSpent() != 7.389 {
		t.Errorf("replay: replayed %v, same bytes %v, ε spent %g", p2.Replayed, slices.Equal(p1.Z, p2.Z), p2.Budget.GetEpsilonSpent())
	}
	if logs := string(cur.logs.Bytes()); !strings.Contains(logs, `"mechanism":"gaussian"`) || !strings.Contains(logs, `"noise_sd"`) {
		t.Errorf("operator log lacks the mechanism and its noise σ")
	}

	bad := diabetesConfig(t, t.TempDir())
	bad.ProjectionMechanism = "laplace"
	if _, err := startCuratorErr(bad); err == nil || !strings.Contains(err.Error(), "projection mechanism") {
		t.Errorf("unknown mechanism: Start error = %v", err)
	}
}

// TestBudgetSchedulesAndRemainders checks the curator's early budget check against
// the ledger's rule: ten releases of ε = 0.1 fit a budget of 1 (the ledger's
// relative slack absorbs float rounding), the eleventh is refused; and a refusal
// names the scope that binds, with the remainder that can still be spent.
func TestBudgetSchedulesAndRemainders(t *testing.T) {
	ctx := context.Background()
	cfg := diabetesConfig(t, t.TempDir())
	cfg.Budget = ledger.Cost{Epsilon: 1, Delta: 1e-3}
	cfg.DatasetBudget = ledger.Cost{Epsilon: 1.5} // δ cap defaults to the identity's
	cur := startCurator(t, cfg)
	a := cur.client(t, "acme")
	for i := range 10 {
		req := &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 0.1, Delta: 1e-6, Label: fmt.Sprint(i)}
		if _, err := curatorclient.FetchProjection(ctx, a, req); err != nil {
			t.Fatalf("release %d of 10 at ε = 0.1 under a budget of 1: %v", i+1, err)
		}
	}
	_, err := curatorclient.FetchProjection(ctx, a, &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 0.1, Delta: 1e-6, Label: "10"})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "identity") {
		t.Errorf("eleventh release: %v, want ResourceExhausted for the identity", err)
	}

	// The dataset cap (1.5, 1.0 spent) now binds before bob's own budget (1).
	b := cur.client(t, "bob")
	_, err = curatorclient.FetchProjection(ctx, b, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 0.9, Delta: 1e-5})
	if msg := status.Convert(err).Message(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(msg, "dataset") || !strings.Contains(msg, "remaining ε=0.4999999") {
		t.Errorf("release over the dataset cap: %v, want ResourceExhausted naming the dataset and ε≈0.5 remaining", err)
	}
	if _, err := curatorclient.FetchProjection(ctx, b, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 0.5, Delta: 1e-5}); err != nil {
		t.Errorf("release of exactly the dataset's remainder: %v", err)
	}
}

// TestOutputMechanismChargedOncePerIdentity: a curator with the default output
// privacy (Laplace, ε = 1, declared range) answers a whole column in one query with
// noised values and charges the identity ε_out once (parallel composition under the
// record relation); a second identity pays again; GetDatasetInfo states all of it.
func TestOutputMechanismChargedOncePerIdentity(t *testing.T) {
	ctx := context.Background()
	cfg := diabetesConfig(t, t.TempDir())
	cfg.Output = curator.OutputPrivacy{Lower: 0, Upper: 400} // the default mechanism and ε
	cur := startCurator(t, cfg)
	a := cur.client(t, "reader")
	info, err := a.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	op := info.GetOutputPrivacy()
	if op.GetMechanism() != "laplace" || op.GetEpsilonPerIndex() != 1 || op.GetRelation() != "record" || info.GetDatasetId() != "diabetes" ||
		!strings.HasPrefix(op.GetGuarantee(), "each answer (ε=1, δ=0)-DP under the record neighbour relation") ||
		!strings.Contains(info.GetGuarantee(), "Projection releases: mechanism gaussian") {
		t.Fatalf("dataset info = %v", info)
	}
	all := make([]uint64, 442)
	for i := range all {
		all[i] = uint64(i)
	}
	resp, err := a.Query(ctx, &curatorv1.QueryRequest{Indices: all})
	if err != nil {
		t.Fatal(err)
	}
	ds := loadDiabetes(t)
	exact := 0
	for k, o := range resp.GetObservations() {
		if o.GetValue() == ds.Y[k] {
			exact++
		}
	}
	if exact > 4 {
		t.Errorf("%d of 442 private answers equal the target exactly; the column leaked", exact)
	}
	if got := resp.GetBudget().GetEpsilonSpent(); got != 1 {
		t.Errorf("the whole column cost ε = %g, want one ε_out = 1", got)
	}
	b := cur.client(t, "second")
	resp, err = b.Query(ctx, &curatorv1.QueryRequest{Indices: all[:10]})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetBudget().GetEpsilonSpent(); got != 1 {
		t.Errorf("a second identity spent ε = %g, want its own ε_out = 1", got)
	}
	if math.Abs(resp.GetBudget().GetEpsilonLimit()-1000) > 0 {
		t.Errorf("budget limit = %g", resp.GetBudget().GetEpsilonLimit())
	}
}

// TestExactOutputMechanismNeedsProjection: with exact answers (output privacy none) a
// caller without a projection release cannot read the column, and one with a projection
// reads at most 200 distinct rows, all identities together.
func TestExactOutputMechanismNeedsProjection(t *testing.T) {
	ctx := context.Background()
	cur := startCurator(t, diabetesConfig(t, t.TempDir()))
	a := cur.client(t, "reader")
	all := make([]uint64, 442)
	for i := range all {
		all[i] = uint64(i)
	}
	_, err := a.Query(ctx, &curatorv1.QueryRequest{Indices: all})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "request the projection first") {
		t.Fatalf("exact column read without a projection: %v, want FailedPrecondition", err)
	}
	if _, err := curatorclient.FetchProjection(ctx, a, &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	_, err = a.Query(ctx, &curatorv1.QueryRequest{Indices: all})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "at most 200 distinct rows of the dataset") {
		t.Fatalf("exact column read past the cap: %v, want ResourceExhausted naming the cap", err)
	}
	resp, err := a.Query(ctx, &curatorv1.QueryRequest{Indices: all[:200]})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetBudget().GetEpsilonSpent(); got != 1 {
		t.Errorf("exact answers cost ε = %g beyond the projection", got-1)
	}
	// The cap is the dataset's: two more identities with ε = 0.001 projections read the
	// 200 rows already revealed, and none of the other 242.
	for _, id := range []string{"reader2", "reader3"} {
		b := cur.client(t, id)
		if _, err := curatorclient.FetchProjection(ctx, b, &curatorv1.ReleaseProjectionRequest{Dimension: 1, Epsilon: 0.001, Delta: 1e-5}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Query(ctx, &curatorv1.QueryRequest{Indices: all[200:201]}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("%s reading a 201st row of the dataset: %v, want ResourceExhausted", id, err)
		}
		if _, err := b.Query(ctx, &curatorv1.QueryRequest{Indices: all[:200]}); err != nil {
			t.Errorf("%s reading the rows already revealed: %v", id, err)
		}
	}
	info, err := a.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if g := info.GetOutputPrivacy().GetGuarantee(); !strings.HasPrefix(g, "no guarantee (ε = ∞): exact answers") {
		t.Errorf("exact answers' guarantee = %q", g)
	}
	if !strings.Contains(string(cur.logs.Bytes()), "WARNING: --output-privacy none: query answers are EXACT and UNPROTECTED") {
		t.Error("the curator did not log a warning about exact answers")
	}
}
