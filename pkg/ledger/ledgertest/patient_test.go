package ledgertest

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// RunPatient runs, as subtests of t, the whole-patient account every Ledger must
// keep: totals over every relation (exact, and consistent with the records), the
// caps enforced across relations, alone and with ChargeAll, under concurrent
// charges from one and from two Ledgers.
func RunPatient(t *testing.T, loc Location) {
	tests := []struct {
		name string
		fn   func(t *testing.T, loc Location)
	}{
		{"Totals", testPatientTotals},
		{"CapAcrossRelations", testPatientCap},
		{"CapDataset", testPatientCapDataset},
		{"Unbounded", testPatientUnbounded},
		{"ChargeAll", testPatientChargeAll},
		{"RaceOneStore", func(t *testing.T, loc Location) { testPatientRace(t, loc, 1) }},
		{"RaceTwoStores", func(t *testing.T, loc Location) { testPatientRace(t, loc, 2) }},
		{"Consistency", testConsistency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, loc) })
	}
}

// PatientLimits are StdLimits' budgets per relation, large enough for the tests
// below, and a whole-patient cap of ε 10 per identity and 15 for the dataset,
// δ 1e-4 both.
var PatientLimits = ledger.Limits{
	PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-4}, Dataset: ledger.Cost{Epsilon: 100, Delta: 1e-3},
	Patient: ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-4}, Dataset: ledger.Cost{Epsilon: 15, Delta: 1e-4}},
}

func mustPatient(t *testing.T, s *ledger.Ledger, a ledger.Account) ledger.PatientBalance {
	t.Helper()
	b, err := s.PatientBalance(ctx, a)
	if err != nil {
		t.Fatalf("PatientBalance(%v): %v", a, err)
	}
	return b
}

func mustVerify(t *testing.T, s *ledger.Ledger, dataset string) {
	t.Helper()
	inc, err := s.Verify(ctx, dataset)
	if err != nil || len(inc) != 0 {
		t.Errorf("Verify(%s) = %v, %v; want the totals consistent with the records", dataset, inc, err)
	}
}

func testPatientTotals(t *testing.T, loc Location) {
	s := loc(t)(t, bigLimits)
	globex := ledger.Account{Dataset: "diabetes", Identity: "globex"}
	charges := []ledger.Charge{
		// A projection at unit 1 states its figure at the clip diameter, with ρ.
		{Account: acme, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-5},
			Patient: &ledger.PatientCost{Epsilon: 134, Delta: 1e-5, Rho: 50.8}},
		// Answers: the record relation, as they are (the default).
		{Account: acme, Key: "a", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1}},
		// DP-HyPO: two add/remove steps, (2ε, (1 + e^ε)δ) by default.
		{Account: acme, Key: "h", Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}},
		// A job that states its own figure.
		{Account: globex, Key: "k", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 0.25, Delta: 1e-7},
			Patient: &ledger.PatientCost{Epsilon: 0.25, Delta: 1e-7}},
		{Account: globex, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-5},
			Patient: &ledger.PatientCost{Epsilon: 134, Delta: 1e-5, Rho: 50.8}},
	}
	for _, c := range charges {
		MustCharge(t, s, c)
	}
	hypo := ledger.DefaultPatientCost(ledger.RelationTrainingAddRemove, ledger.Cost{Epsilon: 0.5, Delta: 1e-6})
	if hypo.Epsilon != 1 || math.Abs(hypo.Delta-(1+math.Exp(0.5))*1e-6) > 1e-21 || hypo.Delta < (1+math.Exp(0.5))*1e-6 {
		t.Errorf("DefaultPatientCost(training-add-remove, 0.5, 1e-6) = %+v, want (1, (1 + e^0.5)·1e-6) rounded up", hypo)
	}
	// A replay spends nothing and keeps the stored figure.
	again := charges[0]
	again.Patient = &ledger.PatientCost{Epsilon: 1}
	if r := MustCharge(t, s, again); !r.Replayed || r.Patient != (ledger.PatientCost{Epsilon: 134, Delta: 1e-5, Rho: 50.8}) {
		t.Errorf("replay = %+v (replayed %v), want the stored whole-patient cost", r.Patient, r.Replayed)
	}
	b := mustPatient(t, s, acme)
	if b.IdentityTotal.Epsilon.Cmp(ratSum(134, 1, 1)) != 0 || b.IdentityTotal.Delta.Cmp(ratSum(1e-5, hypo.Delta)) != 0 || b.IdentityTotal.Charges != 3 ||
		!b.IdentityTotal.Bounded() || b.IdentityTotal.Rho.Cmp(ratSum(50.8)) != 0 || b.IdentityTotal.RhoDelta.Cmp(ratSum(1e-5)) != 0 {
		t.Errorf("acme whole patient = ε %s δ %s ρ %s over %d; want 136, 1e-5 + (1+e^0.5)e-6, 50.8 over 3", b.IdentityTotal.Epsilon.RatString(),
			b.IdentityTotal.Delta.RatString(), b.IdentityTotal.Rho.RatString(), b.IdentityTotal.Charges)
	}
	if b.DatasetTotal.Epsilon.Cmp(ratSum(134, 1, 1, 0.25, 134)) != 0 || b.DatasetTotal.Charges != 5 || b.DatasetTotal.Rho.Cmp(ratSum(50.8, 50.8)) != 0 {
		t.Errorf("dataset whole patient = ε %s over %d, ρ %s; want 270.25 over 5, ρ 101.6", b.DatasetTotal.Epsilon.RatString(), b.DatasetTotal.Charges, b.DatasetTotal.Rho.RatString())
	}
	// The two projections alone compose in zCDP to less than their sum.
	if e, d, ok := b.DatasetTotal.ZCDP(); !ok || d != 2e-5 || !(e > 134 && e < 268) {
		t.Errorf("dataset ZCDP = %g at δ %g (%v), want between 134 and 268 at δ 2e-5", e, d, ok)
	}
	if b.Limits.Enabled() || b.Remaining != (ledger.Cost{}) {
		t.Errorf("PatientBalance without caps: limits %+v, remaining %+v; want none", b.Limits, b.Remaining)
	}
	es := mustEntries(t, s, "diabetes")
	if len(es) != len(charges) || es[2].Patient != hypo || es[1].Patient != (ledger.PatientCost{Epsilon: 1}) {
		t.Errorf("Entries whole-patient costs = %+v, %+v; want the default conversions", es[1].Patient, es[2].Patient)
	}
	mustVerify(t, s, "diabetes")
	rep, err := s.Report(ctx, "diabetes", bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Patient.Identities) != 2 || rep.Patient.Identities[0].Identity != "acme" || !samePatient(rep.Patient.Identities[0].Total, b.IdentityTotal) ||
		!samePatient(rep.Patient.Dataset.Total, b.DatasetTotal) || rep.Patient.Dataset.OverLimit {
		t.Errorf("Report.Patient = %+v, want acme's and globex's totals and the dataset's", rep.Patient)
	}
}

// testPatientCap is the audit's case: an identity with ε 10 in each relation spent
// 10 + 10 + 9.99 under three relations; under a whole-patient cap of 10 the first
// fills the cap and the others are refused, whatever their relation.
func testPatientCap(t *testing.T, loc Location) {
	s := loc(t)(t, PatientLimits)
	// A projection stated for a unit as wide as the clip diameter: its (ε, δ) is
	// the whole-patient one.
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Patient: &ledger.PatientCost{Epsilon: 10, Delta: 1e-6}})
	for _, c := range []ledger.Charge{
		{Account: acme, Key: "k", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 10, Delta: 1e-6},
			Patient: &ledger.PatientCost{Epsilon: 10, Delta: 1e-6}},
		{Account: acme, Key: "h", Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 9.99, Delta: 1e-6}},
		{Account: acme, Key: "h2", Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 0.001}},
	} {
		_, err := s.Charge(ctx, c)
		var be *ledger.BudgetError
		if !errors.As(err, &be) || !be.WholePatient || be.Scope != ledger.ScopeIdentity || be.Relation != ledger.RelationRecord || be.Remaining.Epsilon != 0 {
			t.Errorf("Charge(%s, %s ε=%g) error = %v, want a whole-patient *BudgetError of the identity with nothing left", c.Key, c.Relation, c.Cost.Epsilon, err)
		}
	}
	// Each relation on its own had room: only the whole-patient cap refused.
	for _, rel := range []ledger.Relation{ledger.RelationValidationRecord, ledger.RelationTrainingAddRemove} {
		if b := MustBalance(t, s, acme, rel); b.Spent != (ledger.Cost{}) || b.Remaining.Epsilon != 10 {
			t.Errorf("%s balance after the refusals = spent %+v, remaining %+v; want nothing spent, 10 left", rel, b.Spent, b.Remaining)
		}
	}
	pb := mustPatient(t, s, acme)
	if pb.IdentityTotal.Cost() != (ledger.Cost{Epsilon: 10, Delta: 1e-6}) || pb.Remaining.Epsilon != 0 || pb.Limits != PatientLimits.Patient {
		t.Errorf("acme whole patient = %+v, remaining %+v; want (10, 1e-6), nothing left", pb.IdentityTotal.Cost(), pb.Remaining)
	}
	if n := len(mustEntries(t, s, "diabetes")); n != 1 {
		t.Errorf("%d records after the refusals, want 1", n)
	}
	// A zero-cost record still fits (it spends nothing).
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "query/1", Kind: "query", Relation: ledger.RelationRecord})
	mustVerify(t, s, "diabetes")
}

// testPatientCapDataset: identities that each fit their own cap are refused once
// the dataset's whole-patient total would pass its cap.
func testPatientCapDataset(t *testing.T, loc Location) {
	s := loc(t)(t, PatientLimits)
	globex := ledger.Account{Dataset: "diabetes", Identity: "globex"}
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "a", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 8}})
	MustCharge(t, s, ledger.Charge{Account: globex, Key: "a", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 7}})
	_, err := s.Charge(ctx, ledger.Charge{Account: globex, Key: "h", Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 0.01}})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !be.WholePatient || be.Scope != ledger.ScopeDataset || be.Requested.Epsilon != 0.02 || be.Remaining.Epsilon != 0 {
		t.Errorf("Charge past the dataset's whole-patient cap: error = %v, want a whole-patient dataset *BudgetError requesting ε 0.02", err)
	}
	if pb := mustPatient(t, s, globex); pb.DatasetTotal.Cost().Epsilon != 15 || pb.DatasetRemaining.Epsilon != 0 || pb.Remaining.Epsilon != 3 {
		t.Errorf("globex: dataset whole patient %+v, dataset left %+v, own left %+v; want 15, 0, 3", pb.DatasetTotal.Cost(), pb.DatasetRemaining, pb.Remaining)
	}
}

// testPatientUnbounded: a release with no finite whole-patient figure is recorded
// without a cap (the totals say "not bounded"), and refused under one.
func testPatientUnbounded(t *testing.T, loc Location) {
	open := loc(t)
	free := open(t, bigLimits)
	r := MustCharge(t, free, ledger.Charge{Account: acme, Key: "k", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-6}})
	if !r.Patient.Unbounded {
		t.Errorf("validation-record charge without a stated figure: whole patient %+v, want unbounded", r.Patient)
	}
	pb := mustPatient(t, free, acme)
	if pb.IdentityTotal.Bounded() || pb.IdentityTotal.Unbounded != 1 || !math.IsInf(pb.IdentityTotal.Cost().Epsilon, 1) || pb.DatasetTotal.Bounded() {
		t.Errorf("whole patient after an unbounded charge = %+v (%d unbounded), want not bounded", pb.IdentityTotal.Cost(), pb.IdentityTotal.Unbounded)
	}
	capped := loc(t)(t, PatientLimits)
	for _, c := range []ledger.Charge{
		{Account: acme, Key: "k", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-6}},
		{Account: acme, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-6}, Patient: &ledger.Unbounded},
		{Account: acme, Key: "query/1", Kind: "query", Relation: ledger.RelationRecord, Patient: &ledger.Unbounded},
	} {
		_, err := capped.Charge(ctx, c)
		var be *ledger.BudgetError
		if !errors.As(err, &be) || !be.WholePatient || !be.Unbounded {
			t.Errorf("Charge(%s) of an unbounded release under a cap: error = %v, want an unbounded whole-patient *BudgetError", c.Key, err)
		}
	}
	if _, err := capped.Charge(ctx, ledger.Charge{Account: acme, Key: "x", Kind: "query", Relation: ledger.RelationRecord,
		Patient: &ledger.PatientCost{Epsilon: math.NaN()}}); err == nil {
		t.Errorf("Charge with a NaN whole-patient ε: error = nil, want a validation error")
	}
	if _, err := capped.Charge(ctx, ledger.Charge{Account: acme, Key: "x", Kind: "query", Relation: ledger.RelationRecord,
		Patient: &ledger.PatientCost{Epsilon: 1, Unbounded: true}}); err == nil {
		t.Errorf("Charge with an unbounded whole-patient cost that has an ε: error = nil, want a validation error")
	}
	mustVerify(t, free, "diabetes")
	mustVerify(t, capped, "diabetes")
}

// testPatientChargeAll: a study whose projection and answers each fit the
// whole-patient cap but not together is refused whole, nothing written.
func testPatientChargeAll(t *testing.T, loc Location) {
	s := loc(t)(t, PatientLimits)
	proj := ledger.Charge{Account: acme, Key: "projection/p", Kind: "projection", Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 1, Delta: 1e-6}, Patient: &ledger.PatientCost{Epsilon: 9.5, Delta: 1e-6}}
	answers := ledger.Charge{Account: acme, Key: "query-answers/laplace", Kind: "query-answers", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1}}
	_, err := s.ChargeAll(ctx, []ledger.Charge{proj, answers})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !be.WholePatient || be.Requested != (ledger.Cost{Epsilon: 10.5, Delta: 1e-6}) {
		t.Errorf("ChargeAll(projection 9.5 + answers 1, cap 10) error = %v, want a whole-patient *BudgetError requesting (10.5, 1e-6)", err)
	}
	if n := len(mustEntries(t, s, "diabetes")); n != 0 {
		t.Errorf("%d records after the refused study, want 0", n)
	}
	answers.Cost.Epsilon = 0.5
	if rs, err := s.ChargeAll(ctx, []ledger.Charge{proj, answers}); err != nil || len(rs) != 2 {
		t.Fatalf("ChargeAll(9.5 + 0.5) = %v, want both charged", err)
	}
	if pb := mustPatient(t, s, acme); pb.IdentityTotal.Cost() != (ledger.Cost{Epsilon: 10, Delta: 1e-6}) || pb.IdentityTotal.Charges != 2 {
		t.Errorf("whole patient after the study = %+v over %d, want (10, 1e-6) over 2", pb.IdentityTotal.Cost(), pb.IdentityTotal.Charges)
	}
	mustVerify(t, s, "diabetes")
}

// testPatientRace: charges racing from goroutines and Ledgers never take the
// whole-patient totals past the caps: exactly as many win as fit.
func testPatientRace(t *testing.T, loc Location, nStores int) {
	const (
		identities = 8
		tries      = 12 // per identity
		unit       = 1.0 / 8
	)
	// Each charge is a training-add-remove one of ε unit/2: whole patient ε unit.
	// Per identity the cap holds 6 units; the dataset's 40: 40 of 96 win.
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 100, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 100, Delta: 0.5},
		Patient: ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 6 * unit}, Dataset: ledger.Cost{Epsilon: 40 * unit}}}
	open := loc(t)
	stores := make([]*ledger.Ledger, nStores)
	for i := range stores {
		stores[i] = open(t, limits)
	}
	n := identities * tries
	errs := make([]error, n)
	together(n, func(i int) {
		_, errs[i] = stores[i%nStores].Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: fmt.Sprintf("id%d", i%identities)},
			Key: fmt.Sprint("k", i), Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: unit / 2}})
	})
	wins := 0
	for _, err := range errs {
		var be *ledger.BudgetError
		switch {
		case err == nil:
			wins++
		case !errors.As(err, &be) || !be.WholePatient:
			t.Errorf("racing charge error = %v, want nil or a whole-patient *BudgetError", err)
		}
	}
	if wins != 40 {
		t.Errorf("%d racing charges won, want 40 (the dataset's whole-patient cap)", wins)
	}
	pb := mustPatient(t, stores[0], ledger.Account{Dataset: "diabetes", Identity: "id0"})
	if pb.DatasetTotal.Epsilon.Cmp(ratSum(40*unit)) != 0 {
		t.Errorf("dataset whole patient after the race = %s, want 5", pb.DatasetTotal.Epsilon.RatString())
	}
	rep, err := stores[0].Report(ctx, "diabetes", limits)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Patient.Identities {
		if r.OverLimit || r.Total.Epsilon.Cmp(ratSum(6*unit)) > 0 {
			t.Errorf("identity %s whole patient %s after the race, over its cap of 0.75", r.Identity, r.Total.Epsilon.RatString())
		}
	}
	mustVerify(t, stores[0], "diabetes")
}

// testConsistency charges a mix of relations, identities, zero costs, replays and
// refusals, and checks that every total kept by the charges equals the sum of the
// records (Verify), and that the maintained dataset totals give the same balances
// as summing the identities'.
func testConsistency(t *testing.T, loc Location) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-4}, Dataset: ledger.Cost{Epsilon: 5, Delta: 1e-3},
		Patient: ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 3, Delta: 1e-3}}}
	s := loc(t)(t, limits)
	rels := ledger.Relations
	refused, patient := 0, 0
	for i := range 120 {
		c := ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: fmt.Sprintf("id%d", i%7)}, Key: fmt.Sprint("k", i%97),
			Kind: "k", Relation: rels[i%len(rels)], Cost: ledger.Cost{Epsilon: float64(i%5) * 0.1, Delta: float64(i%3) * 1e-6}}
		if c.Relation == ledger.RelationFeatureUnit || c.Relation == ledger.RelationValidationRecord {
			c.Patient = &ledger.PatientCost{Epsilon: 3 * c.Cost.Epsilon, Delta: c.Cost.Delta, Rho: c.Cost.Epsilon}
		}
		var be *ledger.BudgetError
		if _, err := s.Charge(ctx, c); errors.As(err, &be) {
			refused++
			if be.WholePatient {
				patient++
			}
		} else if err != nil && !errors.Is(err, ledger.ErrKeyConflict) {
			t.Fatalf("Charge %d: %v", i, err)
		}
	}
	if refused == patient || patient == 0 {
		t.Errorf("%d charges refused, %d by the whole-patient cap: the fixture does not reach both kinds of limits", refused, patient)
	}
	mustVerify(t, s, "diabetes")
	// The dataset's balance, kept in its own rows, equals the sum over identities.
	accts, err := s.Accounts(ctx, "diabetes")
	if err != nil {
		t.Fatal(err)
	}
	es := mustEntries(t, s, "diabetes")
	for _, rel := range rels {
		want := new(big.Rat)
		for _, e := range es {
			if e.Relation.Implies(rel) {
				want.Add(want, new(big.Rat).SetFloat64(e.Cost.Epsilon))
			}
		}
		for _, b := range accts {
			if b.Relation == rel {
				if got := new(big.Rat).SetFloat64(b.DatasetSpent.Epsilon); got.Cmp(ratSum(floatOf(want))) != 0 {
					t.Errorf("%s dataset spent = %g, want %s", rel, b.DatasetSpent.Epsilon, want.FloatString(12))
				}
			}
		}
	}
}

func samePatient(a, b ledger.PatientTotal) bool {
	return a.Charges == b.Charges && a.Unbounded == b.Unbounded && a.Epsilon.Cmp(b.Epsilon) == 0 && a.Delta.Cmp(b.Delta) == 0 &&
		a.Rho.Cmp(b.Rho) == 0 && a.RhoDelta.Cmp(b.RhoDelta) == 0
}

func floatOf(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}
