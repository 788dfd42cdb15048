package curator

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// sharedCurator is a curator over the same 30 rows, ledger and state directory as every
// other one made by the same maker, scaled with spec ("none", "none;unit=50", ...): a
// curator restarted with other settings.
func sharedCurators(t *testing.T, limits ledger.Limits) func(spec string) *Curator {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range 30 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*5)%7, 10*i)
	}
	raw, err := dataset.ParseRaw(strings.NewReader(b.String()), "d", dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	return func(spec string) *Curator {
		sc, err := dataset.ParseScaling(spec)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := raw.Scale(sc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir, DatasetID: "ds-1",
			Output:                     OutputPrivacy{Mechanism: "laplace", Epsilon: 0.5, Lower: 0, Upper: 400},
			SimulationProjectionSource: func() projection.Source { return projection.SeededSource(7) }})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

var bigCuratorLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-3}}

// TestReleaseIdentityCoversTheScaling is the restart with ;unit=50 of docs/PRIVACY.md
// §4: the unit-1 projection requested again from the restarted curator is a new release
// with the guarantee of unit 50, never the unit-1 bytes with the new text; and the
// unit-1 curator replays its release with the guarantee it was made with, word for word.
func TestReleaseIdentityCoversTheScaling(t *testing.T) {
	ctx := context.Background()
	curators := sharedCurators(t, bigCuratorLimits)
	req := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5}
	unit1 := curators("none")
	p1, err := unit1.ReleaseProjection(ctx, "acme", req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p1.Guarantee, "at most 50 units (the clip diameter)") {
		t.Fatalf("unit-1 guarantee = %q, want the 50-unit clip diameter", p1.Guarantee)
	}
	// The figure recorded with the charge is the release's own ρ at 50 units, at its δ.
	if p1.WholePatient.Unbounded || p1.WholePatient.Delta != 1e-5 || p1.WholePatient.Rho <= 0 ||
		p1.WholePatient.Epsilon != dp.ZCDPEpsilon(p1.WholePatient.Rho, 1e-5) || p1.WholePatient.Epsilon < 100 {
		t.Errorf("unit-1 whole-patient cost = %+v, want ZCDPEpsilon(ρ at 50 units, 1e-5) ≈ 134", p1.WholePatient)
	}

	unit50 := curators("none;unit=50")
	p50, err := unit50.ReleaseProjection(ctx, "acme", req)
	if err != nil {
		t.Fatal(err)
	}
	if p50.Replayed || p50.ID == p1.ID || p50.Guarantee == p1.Guarantee || !strings.Contains(p50.Guarantee, "at most 1 unit (the clip diameter)") ||
		strings.Contains(p50.Guarantee, "50 units") || string(p50.SHA256) == string(p1.SHA256) {
		t.Errorf("after the restart with unit=50: replayed %v, id %s (was %s), guarantee %q; want a new release with the guarantee of unit 50",
			p50.Replayed, p50.ID, p1.ID, p50.Guarantee)
	}
	if p50.WholePatient.Epsilon > req.Epsilon || p50.WholePatient.Delta != req.Delta {
		t.Errorf("unit-50 whole-patient cost = %+v, want at most the release's (1, 1e-5)", p50.WholePatient)
	}
	// Each curator replays its own release with its stored text, word for word.
	again := curators("none")
	r1, err := again.ReleaseProjection(ctx, "acme", req)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Replayed || r1.ID != p1.ID || r1.Guarantee != p1.Guarantee || string(r1.SHA256) != string(p1.SHA256) || r1.WholePatient != p1.WholePatient {
		t.Errorf("replay at unit 1 = id %s, replayed %v, guarantee equal %v; want %s replayed with its original guarantee", r1.ID, r1.Replayed, r1.Guarantee == p1.Guarantee, p1.ID)
	}
	r50, err := curators("none;unit=50").ReleaseProjection(ctx, "acme", req)
	if err != nil || !r50.Replayed || r50.ID != p50.ID || r50.Guarantee != p50.Guarantee {
		t.Errorf("replay at unit 50 = %v, replayed %v, guarantee equal %v; want the unit-50 release", err, r50.Replayed, r50.Guarantee == p50.Guarantee)
	}
	// Two releases charged, each with its own whole-patient figure.
	es, err := unit1.ledger.Entries(ctx, "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	var projections []ledger.Receipt
	for _, e := range es {
		if e.Kind == ledger.KindProjection {
			projections = append(projections, e)
		}
	}
	if len(projections) != 2 || projections[0].Patient != p1.WholePatient || projections[1].Patient != p50.WholePatient {
		t.Errorf("projection records = %+v, want the two releases with their whole-patient costs", projections)
	}
}

// TestLegacyReleasesReplayed: a release recorded before its identity covered the scaling
// is replayed under its old id when the whole-patient clause it recorded is what this
// curator states, and is not when the curator's clip diameter differs.
func TestLegacyReleasesReplayed(t *testing.T) {
	ctx := context.Background()
	curators := sharedCurators(t, bigCuratorLimits)
	unit1 := curators("none")
	req := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5}
	lid := unit1.legacyReleaseID("acme", req)
	const sens = 1.75
	pr := projectionRecord{File: lid + "-0000.f64", SHA256: hex.EncodeToString(make([]byte, 32)), Rows: 30, Cols: 2, Sensitivity: sens}
	result, _ := json.Marshal(pr)
	legacy := ledger.Charge{Account: unit1.account("acme"), Key: "projection/" + lid, Kind: ledger.KindProjection, Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Result: result,
		Description: `private projection r=2 ε=1 δ=1e-05 label=""; relation feature-unit (one protected unit of one record's scaled features); ` +
			unit1.wholePatient(1, 1e-5, 60, sens).short()}
	if _, err := unit1.ledger.Charge(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	p, err := unit1.ReleaseProjection(ctx, "acme", req)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Replayed || p.ID != lid || p.Guarantee != unit1.projectionGuarantee(1, 1e-5, 60, sens) {
		t.Errorf("legacy release at the same settings: id %s, replayed %v; want %s replayed with its statement", p.ID, p.Replayed, lid)
	}
	q, err := unit1.Quote(ctx, "acme", QuoteRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if err != nil || !q.ProjectionPaid {
		t.Errorf("Quote of the legacy release: paid %v, %v; want paid", q != nil && q.ProjectionPaid, err)
	}
	p50, err := curators("none;unit=50").ReleaseProjection(ctx, "acme", req)
	if err != nil {
		t.Fatal(err)
	}
	if p50.Replayed || p50.ID == lid {
		t.Errorf("legacy release after a change of unit: id %s, replayed %v; want a new release", p50.ID, p50.Replayed)
	}
}

// TestPatientCapRefusesBeforeComputing: under a whole-patient cap of 10 a projection at
// ε = 1 with unit 1 (ε ≈ 134 for a whole patient) is refused before any matrix is
// computed or stored, and the same request with unit 50 fits.
func TestPatientCapRefusesBeforeComputing(t *testing.T) {
	ctx := context.Background()
	limits := bigCuratorLimits
	limits.Patient = ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}}
	curators := sharedCurators(t, limits)
	c := curators("none")
	req := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5, WithAnswers: true}
	_, err := c.ReleaseProjection(ctx, "acme", req)
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !be.WholePatient || be.Requested.Epsilon < 130 {
		t.Fatalf("ReleaseProjection at unit 1 under a whole-patient cap of 10: error = %v, want a whole-patient *BudgetError", err)
	}
	if n := releaseFiles(t, c.cfg); n != 0 {
		t.Errorf("%d release files after the refusal, want 0", n)
	}
	q, err := c.Quote(ctx, "acme", QuoteRequest{R: 2, Epsilon: 1, Delta: 1e-5, WithAnswers: true})
	if err != nil || q.Fits || q.Patient.Fits || q.Patient.Available.Epsilon != 10 || q.Patient.Charge.Epsilon < 130 {
		t.Errorf("Quote under the cap = %+v, %v; want a whole-patient charge above 130 that does not fit the 10 available", q, err)
	}
	c50 := curators("none;unit=50")
	p, err := c50.ReleaseProjection(ctx, "acme", req)
	if err != nil {
		t.Fatalf("ReleaseProjection at unit 50 under the cap: %v", err)
	}
	pb, err := c50.ledger.PatientBalance(ctx, c50.account("acme"))
	if err != nil {
		t.Fatal(err)
	}
	// The projection's figure plus the answers' 0.5, charged together.
	if want := p.WholePatient.Epsilon + 0.5; pb.IdentityTotal.Cost().Epsilon != want || pb.IdentityTotal.Charges != 2 {
		t.Errorf("whole patient after the unit-50 study = %+v over %d charges, want ε %g over 2", pb.IdentityTotal.Cost(), pb.IdentityTotal.Charges, want)
	}
}
