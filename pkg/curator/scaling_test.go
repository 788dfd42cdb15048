package curator

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestPrivateScalingDescription pins the guarantee text the private scaling estimate's
// ledger record states: the mechanism, the neighbour relation (record replacement), the
// share of the budget, each part's share of ρ with its ε (TestEstimateParts computes
// them) and the (ε, δ) of the one release.
func TestPrivateScalingDescription(t *testing.T) {
	raw := &dataset.Raw{D: 10, Target: "progression"}
	for _, tc := range []struct {
		p    ScalingPlan
		want string
	}{
		{ScalingPlan{Features: true, Target: true, EpsilonFeatures: 5 * 10.0 / 11, EpsilonTarget: 5.0 / 11, Delta: 2.5e-6, Share: 0.25},
			"private scaling estimate (noisy log-histograms, discrete Gaussian noise, zCDP, record replacement; share 0.25 of the budget): " +
				"bounds of 10 feature columns (ρ=0.4496 of zCDP, ε=4.737 at δ=2.5e-06 of it) and the range of target progression (ρ=0.04496 of zCDP, ε=1.33 at δ=2.5e-06 of it), one release of ε = 5, δ = 2.5e-06"},
		{ScalingPlan{Features: true, EpsilonFeatures: 2, Delta: 1e-7, Share: 0.1},
			"private scaling estimate (noisy log-histograms, discrete Gaussian noise, zCDP, record replacement; share 0.1 of the budget): " +
				"bounds of 10 feature columns (ε=2 of it), one release of ε = 2, δ = 1e-07"},
		{ScalingPlan{Target: true, EpsilonTarget: 0.5, Share: 0.1},
			"private scaling estimate (noisy log-histograms, discrete Laplace noise, record replacement; share 0.1 of the budget): " +
				"the range of target progression (ε=0.5 of it), one release of ε = 0.5"},
	} {
		if got := tc.p.describe(raw); got != tc.want {
			t.Errorf("describe(%+v)\n got: %s\nwant: %s", tc.p, got, tc.want)
		}
	}
}

// TestScalingKeyNamesEstimator: the ledger key of the estimate depends on the
// estimator, so that an estimate stored by another algorithm (the exponential
// mechanism before this one) is never reused as this one's; the settings that do not
// change the release leave it alone.
func TestScalingKeyNamesEstimator(t *testing.T) {
	raw := &dataset.Raw{Features: []string{"a", "b"}, Target: "y", D: 2}
	p := ScalingPlan{Features: true, Target: true, EpsilonFeatures: 1, EpsilonTarget: 0.5, Delta: 1e-7, Share: 0.1}
	sc := dataset.Scaling{Mode: dataset.ScalePrivate}
	k := scalingKey(p, sc, raw)
	if k != scalingKeyOf(p, sc, raw, dataset.BoundsEstimator) || k == scalingKeyOf(p, sc, raw, "exponential-grid-457") {
		t.Errorf("scalingKey does not depend on the estimator's name")
	}
	q := p
	q.Delta = 2e-7
	if scalingKey(q, sc, raw) == k {
		t.Errorf("scalingKey does not depend on the estimate's δ")
	}
	if scalingKey(p, sc, raw) != k || !strings.HasPrefix(k, ledger.KindScalingEstimate+"/") {
		t.Errorf("scalingKey is not a stable %s/... key: %q", ledger.KindScalingEstimate, k)
	}
}

// TestAnswerRange pins the rounding of a privately estimated answers' range: outward to
// four significant digits of its width, a bound within half a step of zero being zero.
// The first case is the estimator's zero-bin edge −2⁻²⁰, which the answers' guarantee
// printed as "-9.5367431640625e-07" before.
func TestAnswerRange(t *testing.T) {
	for _, tc := range []struct{ lo, hi, wantLo, wantHi float64 }{
		// width 376.67…: step 0.1; −2⁻²⁰ is within 0.05 of zero.
		{-math.Ldexp(1, -20), 376.67288266236324, 0, 376.7},
		// width 333.66…: step 0.1, both bounds outward.
		{12.345678, 346.01, 12.3, 346.1},
		// width 0.0056786: step 1e-6; 3e-7 is within 5e-7 of zero.
		{3e-7, 0.0056789, 0, 0.005679},
		// width 0.0044444: step 1e-6.
		{0.0012345, 0.0056789, 0.001234, 0.005679},
		// a non-positive Target: step 0.01, the upper bound −2⁻²⁰ is zero.
		{-50.0456, -math.Ldexp(1, -20), -50.05, 0},
		// width 12345.6: step 10.
		{-1234.5, 11111.1, -1240, 11120},
		// not a range: as it is.
		{3, 3, 3, 3},
		{math.Inf(-1), 1, math.Inf(-1), 1},
	} {
		lo, hi := answerRange(tc.lo, tc.hi)
		if lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("answerRange(%v, %v) = [%v, %v], want [%v, %v]", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

// TestScalingChargeFails: row (c) of the path table, charge before use. The estimate is
// charged, in one transaction with the bounds as its result, before anything uses
// them: a charge the ledger fails returns no bounds and records nothing, so Start stops
// before it serves; and the estimate's record states the record relation, its (ε, δ) and
// that same whole-patient figure.
func TestScalingChargeFails(t *testing.T) {
	ctx := context.Background()
	budget := ledger.Cost{Epsilon: 20, Delta: 1e-5}
	raw, err := dataset.LoadRaw(filepath.Join("..", "..", "examples", "data", "diabetes.csv"), dataset.Options{Target: "progression"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"), ledger.Limits{PerIdentity: budget, Dataset: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sc := dataset.Scaling{Mode: dataset.ScalePrivate}
	p := PlanScaling(raw, sc, OutputPrivacy{Mechanism: answer.Default, Epsilon: DefaultOutputEpsilon}, 0.1, budget, budget)
	gate := &failingCharges{Ledger: store, fail: ledger.ErrUnavailable}
	est, err := privateScaling(ctx, gate, "diabetes", sc, raw, p, zap.NewNop())
	if !errors.Is(err, ledger.ErrUnavailable) || est.Target != nil || len(est.Features) != 0 {
		t.Errorf("estimate whose charge fails: %+v, %v; want no bounds and the ledger's error", est, err)
	}
	entries := func() []ledger.Receipt {
		all, err := store.Entries(ctx, "diabetes")
		if err != nil {
			t.Fatal(err)
		}
		var out []ledger.Receipt
		for _, e := range all {
			if e.Kind == ledger.KindScalingEstimate {
				out = append(out, e)
			}
		}
		return out
	}
	if es := entries(); len(es) != 0 {
		t.Errorf("%d scaling records after a failed charge, want none", len(es))
	}
	gate.fail = nil
	if _, err := privateScaling(ctx, gate, "diabetes", sc, raw, p, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	// ε_s = 0.1 · 20 = 2 and δ_s = 0.1 · 1e-5, under record: the whole-patient figure is
	// the same (ε, δ).
	es := entries()
	want := ledger.Cost{Epsilon: 0.1 * budget.Epsilon, Delta: 0.1 * budget.Delta}
	if len(es) != 1 || es[0].Relation != ledger.RelationRecord || math.Abs(es[0].Cost.Epsilon-want.Epsilon) > 1e-12 || math.Abs(es[0].Cost.Delta-want.Delta) > 1e-20 ||
		es[0].Patient != (ledger.PatientCost{Epsilon: es[0].Cost.Epsilon, Delta: es[0].Cost.Delta}) {
		t.Errorf("scaling records %+v; want one under record at %+v, its whole-patient figure the same", es, want)
	}
}

// failingCharges fails every Charge with fail while it is set, recording nothing.
type failingCharges struct {
	*ledger.Ledger
	fail error
}

func (g *failingCharges) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	if g.fail != nil {
		return ledger.Receipt{}, g.fail
	}
	return g.Ledger.Charge(ctx, c)
}
