package curator

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// scaledCurator serves n rows of two features and a target, scaled with sc (a private
// mode: clipped to norm 25 and divided by sc.Unit), with Laplace answers on [0, 400] at
// ε = 0.5 and seeded projection matrices, so that every figure is deterministic.
func scaledCurator(t *testing.T, n int, sc dataset.Scaling) (*Curator, *ledger.Ledger) {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*5)%7, 10*i)
	}
	raw, err := dataset.ParseRaw(strings.NewReader(b.String()), "d", dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Mode == dataset.ScalePrivate {
		if sc, err = raw.EstimateScaling(sc, 0.05, dp.CryptoSource()); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := raw.Scale(sc)
	if err != nil {
		t.Fatal(err)
	}
	ds.Unit = "UNIT."
	dir := t.TempDir()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-3}}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir, DatasetID: "ds-1",
		Output:                     OutputPrivacy{Mechanism: "laplace", Epsilon: 0.5, Lower: 0, Upper: 400},
		SimulationProjectionSource: func() projection.Source { return projection.SeededSource(7) }})
	if err != nil {
		t.Fatal(err)
	}
	return c, led
}

const testHead = "(ε=1, δ=1e-05)-DP under the feature-unit neighbour relation (one record's feature vector changes by at most one protected unit): " +
	"mechanism gaussian, the JL projection plus Gaussian noise calibrated to its sensitivity (Kenthapadi et al. 2013). One protected unit: UNIT. "

// The whole-patient statement at (ε, δ) = (1, 1e-5) with the default clip norm 25 and
// unit 1: a whole patient is 50 units. The figures are the discrete vector Gaussian's
// (dp.VectorGaussian.EpsilonAtDistance), rounded up to three digits.
const testWhole50 = "Whole patient: replacing one patient's record by any other moves its scaled row by at most 50 units (the clip diameter), " +
	"so this release is (ε=134, δ=1e-05)-DP under the record neighbour relation (the Gaussian mechanism's guarantee at that distance, Canonne, Kamath & Steinke 2020, Theorem 14); " +
	"at δ=1e-05 by public distance, 1 unit: ε=1; 2: ε=2.14; 5: ε=6.05; 10: ε=14; whole record (50 units): ε=134"

// TestWholePatientTexts pins the whole-patient statement for public scalings: before a
// release (nominal figures), in a release (its own sensitivity), on replay, in the
// dataset statement and in the ledger's description of the charge.
func TestWholePatientTexts(t *testing.T) {
	ctx := context.Background()
	c, led := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScaleNone})
	if !c.ds.Private || c.ds.ClipDiameterUnits() != 50 {
		t.Fatalf("scaling none: Private %v, clip diameter %g; want true, 50", c.ds.Private, c.ds.ClipDiameterUnits())
	}
	want := testHead + testWhole50 + "."
	if got := c.ProjectionGuarantee(1, 1e-5); got != want {
		t.Errorf("projection guarantee\n got: %s\nwant: %s", got, want)
	}
	p, err := c.ReleaseProjection(ctx, "alice", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if p.Guarantee != want {
		t.Errorf("release guarantee\n got: %s\nwant: %s", p.Guarantee, want)
	}
	again, err := c.ReleaseProjection(ctx, "alice", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Guarantee != want {
		t.Errorf("replay: Replayed %v, guarantee\n got: %s\nwant: %s", again.Replayed, again.Guarantee, want)
	}

	// The release's figures are its own mechanism's: the recorded sensitivity, n·r values.
	rec, ok, err := led.Get(ctx, c.account("alice"), "projection/"+p.ID)
	if err != nil || !ok {
		t.Fatalf("ledger record: %v %v", ok, err)
	}
	var pr projectionRecord
	if err := json.Unmarshal(rec.Result, &pr); err != nil {
		t.Fatal(err)
	}
	if !(pr.Sensitivity > 0) {
		t.Fatalf("recorded sensitivity %g, want > 0", pr.Sensitivity)
	}
	g, err := dp.NewVectorGaussian(1, 1e-5, pr.Sensitivity, 20*2)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dp.WholeRecordTable(g, 1e-5, []float64{1, 2, 5, 10, 50})
	if err != nil {
		t.Fatal(err)
	}
	if table := dp.FormatWholeRecordTable(rows, 50); !strings.HasSuffix(p.Guarantee, "by public distance, "+table+".") {
		t.Errorf("release guarantee %q does not end with its mechanism's table %q", p.Guarantee, table)
	}
	wantDesc := `private projection r=2 ε=1 δ=1e-05 label=""; relation feature-unit (one protected unit of one record's scaled features); whole patient (50 units): ε=134 at δ=1e-05`
	if rec.Description != wantDesc {
		t.Errorf("ledger description\n got: %s\nwant: %s", rec.Description, wantDesc)
	}

	stmt := "Projection releases: mechanism gaussian, (ε, δ)-DP at the (ε, δ) of each request under the feature-unit neighbour relation, one protected unit being: UNIT. " +
		"Whole patient: replacing one patient's record by any other moves its scaled row by at most 50 units (the clip diameter); each release states the ε this gives at its own δ, " +
		"for example a release at (ε=1, δ=1e-05) is (ε=134, δ=1e-05)-DP for it (1 unit: ε=1; 2: ε=2.14; 5: ε=6.05; 10: ε=14; whole record (50 units): ε=134). " +
		"Query answers: " + c.OutputGuarantee() + "."
	if got := c.GuaranteeStatement(); got != stmt {
		t.Errorf("guarantee statement\n got: %s\nwant: %s", got, stmt)
	}
}

// TestWholePatientUnitAndPrivateScaling: a unit as large as the clip diameter makes the
// release's (ε, δ) the whole-patient one; a private-estimated scaling states its own ε.
func TestWholePatientUnitAndPrivateScaling(t *testing.T) {
	c, _ := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScaleNone, Unit: 50})
	want := testHead + "Whole patient: replacing one patient's record by any other moves its scaled row by at most 1 unit (the clip diameter), " +
		"so this release is (ε=1, δ=1e-05)-DP under the record neighbour relation (the Gaussian mechanism's guarantee at that distance, Canonne, Kamath & Steinke 2020, Theorem 14); " +
		"at δ=1e-05 by public distance, whole record (1 unit): ε=1."
	if got := c.ProjectionGuarantee(1, 1e-5); got != want {
		t.Errorf("unit 50\n got: %s\nwant: %s", got, want)
	}

	c, led := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScalePrivate, Epsilon: 0.1})
	note := "; the scaling's feature bounds were estimated from the data with ε=0.1 (and the target's range with ε=0.05) " +
		"under the record neighbour relation, once for the dataset, which adds to any whole-patient ε"
	want = testHead + testWhole50 + note + "."
	if got := c.ProjectionGuarantee(1, 1e-5); got != want {
		t.Errorf("private scaling\n got: %s\nwant: %s", got, want)
	}
	if got := c.GuaranteeStatement(); !strings.Contains(got, "whole record (50 units): ε=134)"+note+". Query answers: ") {
		t.Errorf("guarantee statement of a private scaling lacks the scaling's ε: %s", got)
	}
	p, err := c.ReleaseProjection(context.Background(), "alice", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if p.Guarantee != want {
		t.Errorf("private scaling release\n got: %s\nwant: %s", p.Guarantee, want)
	}
	rec, _, err := led.Get(context.Background(), c.account("alice"), "projection/"+p.ID)
	if err != nil || !strings.HasSuffix(rec.Description, "whole patient (50 units): ε=134 at δ=1e-05, plus the private scaling's ε") {
		t.Errorf("ledger description %q (%v) lacks the whole patient and the scaling's ε", rec.Description, err)
	}
}

// TestWholePatientNoGuarantee: the lifted mechanism and data-dependent scalings state no
// whole-patient figure, and say why; nor does the ledger.
func TestWholePatientNoGuarantee(t *testing.T) {
	c, _ := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScaleNone})
	c.cfg.ProjectionMechanism, c.proj = projection.MechanismLifted, projection.Lifted{} // the mechanism is parsed once, in New
	if got := c.ProjectionGuarantee(1, 1e-5); !strings.HasSuffix(got, "Whole patient: no guarantee (the lifted mechanism's claimed guarantee does not hold even for one unit, so it holds for no larger distance).") ||
		strings.Contains(got, "ε=134") {
		t.Errorf("lifted: %s", got)
	}
	c, led := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScaleMaxNormNonprivate})
	want := testHead + "Whole patient: no guarantee (the scaling maxnorm-nonprivate uses the data's own statistics, so one patient's change moves every scaled row and no distance covers it)."
	if got := c.ProjectionGuarantee(1, 1e-5); got != want {
		t.Errorf("maxnorm-nonprivate\n got: %s\nwant: %s", got, want)
	}
	p, err := c.ReleaseProjection(context.Background(), "alice", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := led.Get(context.Background(), c.account("alice"), "projection/"+p.ID)
	if err != nil || !strings.HasSuffix(rec.Description, "; whole patient: no guarantee") || p.Guarantee != want {
		t.Errorf("nonprivate release: description %q (%v), guarantee %q", rec.Description, err, p.Guarantee)
	}
}

// TestNominalFiguresBoundEveryRelease: the figures stated before a release (nominal
// sensitivity and dimension, nominalMargin) are at least those of every release's own
// mechanism, whatever its sensitivity Δ and number of values m.
func TestNominalFiguresBoundEveryRelease(t *testing.T) {
	dists := 50.0
	for _, ed := range [][2]float64{{1, 1e-5}, {math.Exp(2), 1e-4}, {0.3, 1e-6}, {20, 1e-3}} {
		nominal, nomRho, err := wholePatientTable(ed[0], ed[1], dists, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if nominal[0].Epsilon != ed[0] {
			t.Errorf("(%g, %g): nominal ε at one unit = %g, want the release's ε", ed[0], ed[1], nominal[0].Epsilon)
		}
		for _, m := range []int{1, 7, 40, 884, 1 << 20} {
			for _, sens := range []float64{0.01, 0.7, 1, 1.3, 1.999999, 2.000001, 3.7, 1234.5} {
				own, ownRho, err := wholePatientTable(ed[0], ed[1], dists, m, sens)
				if err != nil {
					t.Fatal(err)
				}
				if ownRho > nomRho || ownRho < nomRho/(1+nominalMargin)/(1+nominalMargin) {
					t.Errorf("(%g, %g), m=%d, Δ=%g: ρ at the clip diameter %g, nominal %g: want at most the nominal and above its lower bound", ed[0], ed[1], m, sens, ownRho, nomRho)
				}
				for i := range own {
					if own[i].Units != nominal[i].Units || own[i].Epsilon > nominal[i].Epsilon {
						t.Errorf("(%g, %g) m=%d Δ=%g at %g units: own ε %.12g above the nominal %.12g",
							ed[0], ed[1], m, sens, own[i].Units, own[i].Epsilon, nominal[i].Epsilon)
					}
					// The margin is small: the nominal figure is within 2e-5 of the own one.
					if own[i].Epsilon*(1+2e-5) < nominal[i].Epsilon {
						t.Errorf("(%g, %g) m=%d Δ=%g at %g units: nominal %.12g far above own %.12g",
							ed[0], ed[1], m, sens, own[i].Units, nominal[i].Epsilon, own[i].Epsilon)
					}
				}
			}
		}
	}
}

// TestEstimateParts: the parts of the private scaling estimate are stated as their
// shares of its zCDP budget ρ, each with the ε that share converts to at the
// estimate's δ — not as linear shares of ε, which understate them (the audit's
// "ε = 0.091" for a target's range that is ε = 0.283 at the same δ). Expected figures
// are computed from the parameters: diabetes' 10 features and target at ε_s = 1,
// δ_s = 1e-7, split 10:1; with δ = 0 the parts are ε shares; a lone part is the whole.
func TestEstimateParts(t *testing.T) {
	const eps, delta, d = 1.0, 1e-7, 10.0
	rho := dp.ZCDPRho(eps, delta)
	rf, rt := rho*d/(d+1), rho/(d+1)
	f, tg := estimateParts(eps*d/(d+1), eps/(d+1), delta)
	wantF := "ρ=" + figure.Up(rf) + " of zCDP, ε=" + figure.Up(dp.ZCDPEpsilon(rf, delta)) + " at δ=1e-07"
	wantT := "ρ=" + figure.Up(rt) + " of zCDP, ε=" + figure.Up(dp.ZCDPEpsilon(rt, delta)) + " at δ=1e-07"
	if f != wantF || tg != wantT {
		t.Errorf("estimateParts(%g, %g, %g) = %q, %q; want %q, %q", eps*d/(d+1), eps/(d+1), delta, f, tg, wantF, wantT)
	}
	if linear := eps / (d + 1); !(dp.ZCDPEpsilon(rt, delta) > 2*linear) || strings.Contains(tg, "ε="+figure.Up(linear)) {
		t.Errorf("the target's part %q states its linear share ε=%s, or its converted ε is not above twice it", tg, figure.Up(linear))
	}
	if f, tg := estimateParts(2*d/(d+1), 2/(d+1), 0); f != "ε="+figure.Up(2*d/(d+1)) || tg != "ε="+figure.Up(2/(d+1)) {
		t.Errorf("pure ε-DP parts = %q, %q; want ε shares", f, tg)
	}
	if f, _ := estimateParts(eps, 0, delta); f != "ε=1" {
		t.Errorf("a lone part = %q, want the whole estimate's ε=1", f)
	}
}
