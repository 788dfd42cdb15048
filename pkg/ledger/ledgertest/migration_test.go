package ledgertest

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// v1Entry is a record of the version 1 fixture and the relation the
// upgrade must give it.
type v1Entry struct {
	dataset, identity, key, kind string
	cost                         ledger.Cost
	result                       []byte
	want                         ledger.Relation
}

var v1Entries = []v1Entry{
	{"d1", "acme", "p1", "projection", ledger.Cost{Epsilon: 0.5, Delta: 1e-6}, []byte("Z-bytes"), ledger.RelationFeatureUnit},
	{"d1", "_curator", "pending/0", "pending", ledger.Cost{}, nil, ledger.RelationRecord},
	{"d1", "_curator", "evaluation/0", "evaluation", ledger.Cost{}, []byte("1.5"), ledger.RelationRecord},
	{"d1", "acme", "q1", "query", ledger.Cost{Epsilon: 0.1, Delta: 0}, []byte("2.5"), ledger.RelationRecord},
	{"d1", "acme", "qf", "query-failure", ledger.Cost{Epsilon: 0.1, Delta: 0}, nil, ledger.RelationRecord},
	{"d1", "acme", "job/k", "job:kusner", ledger.Cost{Epsilon: 0.25, Delta: 1e-7}, []byte("{}"), ledger.RelationValidationRecord},
	{"d1", "globex", "job/d", "job:dphypo", ledger.Cost{Epsilon: 0.3, Delta: 1e-6}, nil, ledger.RelationTrainingAddRemove},
	{"d1", "acme", "m", "mystery", ledger.Cost{Epsilon: 0.05, Delta: 0}, nil, ledger.RelationRecord},
	{"d1", "globex", "p", "projection", ledger.Cost{Epsilon: 0.2, Delta: 0}, nil, ledger.RelationFeatureUnit},
	{"d2", "acme", "q", "query", ledger.Cost{Epsilon: 0.7, Delta: 0}, nil, ledger.RelationRecord},
}

// V1Records is the number of records FillV1 writes.
func V1Records() int { return len(v1Entries) }

// v1Created is the creation time of the i-th fixture record.
func v1Created(i int) int64 { return time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC).UnixNano() }

// FillV1 writes the version 1 fixture, with version 1's totals (summed
// across relations), through exec, into tables the engine's test created
// with version 1's DDL. q names tables with {t} and uses ? placeholders
// (ledger.Dialect.SQL turns them into the engine's).
func FillV1(t *testing.T, exec func(q string, args ...any) error) {
	t.Helper()
	type acct struct{ dataset, identity string }
	sums := map[acct]*counted{}
	var order []acct
	for i, e := range v1Entries {
		if err := exec(`INSERT INTO {t}entries (dataset, identity, entry_key, kind, description, epsilon, delta, result, created_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.dataset, e.identity, e.key, e.kind, "v1 "+e.key, e.cost.Epsilon, e.cost.Delta, e.result, v1Created(i)); err != nil {
			t.Fatalf("insert v1 entry %s: %v", e.key, err)
		}
		a := acct{e.dataset, e.identity}
		if sums[a] == nil {
			sums[a] = new(counted)
			order = append(order, a)
		}
		sums[a].t.add(e.cost)
		sums[a].n++
	}
	for _, a := range order {
		if err := exec(`INSERT INTO {t}totals (dataset, identity, epsilon, delta, charges) VALUES (?, ?, ?, ?, ?)`,
			a.dataset, a.identity, sums[a].t.eps.RatString(), sums[a].t.delta.RatString(), sums[a].n); err != nil {
			t.Fatalf("insert v1 total: %v", err)
		}
	}
	if err := exec(`INSERT INTO {t}schema_version (id, version) VALUES (1, 1)`); err != nil {
		t.Fatalf("insert v1 version: %v", err)
	}
}

// wantV1Balances are the balances the upgraded fixture must report: for
// each account and relation with a record counting towards it, the exact
// sums of the fixture records whose relation implies it.
func wantV1Balances(dataset string, limits ledger.Limits) []ledger.Balance {
	type key struct {
		identity string
		rel      ledger.Relation
	}
	id := map[key]*counted{}
	ds := map[ledger.Relation]*total{}
	var identities []string
	seen := map[string]bool{}
	for _, e := range v1Entries {
		if e.dataset != dataset {
			continue
		}
		if !seen[e.identity] {
			seen[e.identity] = true
			identities = append(identities, e.identity)
		}
		for _, rel := range ledger.Relations {
			if !e.want.Implies(rel) {
				continue
			}
			k := key{e.identity, rel}
			if id[k] == nil {
				id[k] = new(counted)
			}
			id[k].t.add(e.cost)
			id[k].n++
			if ds[rel] == nil {
				ds[rel] = new(total)
			}
			ds[rel].add(e.cost)
		}
	}
	slices.Sort(identities)
	var out []ledger.Balance
	for _, identity := range identities {
		for _, rel := range ledger.Relations {
			c := id[key{identity, rel}]
			if c == nil {
				continue
			}
			out = append(out, ledger.Balance{
				Account: ledger.Account{Dataset: dataset, Identity: identity}, Relation: rel,
				Spent: c.t.cost(), Remaining: c.t.remaining(limits.PerIdentity),
				DatasetSpent: ds[rel].cost(), DatasetRemaining: ds[rel].remaining(limits.Dataset),
				Charges: int(c.n), Limits: limits,
			})
		}
	}
	return out
}

// CheckUpgradedV1 checks a store opened on the upgraded fixture.
func CheckUpgradedV1(t *testing.T, s *ledger.Ledger, limits ledger.Limits) {
	t.Helper()
	// Every record kept, in order, with its relation.
	for _, dataset := range []string{"d1", "d2"} {
		var want []v1Entry
		for _, e := range v1Entries {
			if e.dataset == dataset {
				want = append(want, e)
			}
		}
		es := mustEntries(t, s, dataset)
		if len(es) != len(want) {
			t.Fatalf("Entries(%s) = %d records, want %d", dataset, len(es), len(want))
		}
		for i, e := range es {
			w := want[i]
			if e.Identity != w.identity || e.Key != w.key || e.Kind != w.kind || e.Relation != w.want ||
				e.Cost != w.cost || e.ResultSize != len(w.result) || e.Description != "v1 "+w.key {
				t.Errorf("Entries(%s)[%d] = %s/%s/%s (%s) %+v size %d, want %s/%s/%s (%s) %+v size %d", dataset, i,
					e.Identity, e.Key, e.Kind, e.Relation, e.Cost, e.ResultSize, w.identity, w.key, w.kind, w.want, w.cost, len(w.result))
			}
		}
	}
	for i, e := range v1Entries {
		r, found, err := s.Get(ctx, ledger.Account{Dataset: e.dataset, Identity: e.identity}, e.key)
		if err != nil || !found || r.Relation != e.want || string(r.Result) != string(e.result) || r.Created.UnixNano() != v1Created(i) {
			t.Errorf("Get(%s) = relation %s, result %q, created %v, %v, %v; want %s, %q, %v", e.key, r.Relation, r.Result, r.Created, found, err,
				e.want, e.result, time.Unix(0, v1Created(i)).UTC())
		}
	}
	// Totals recomputed per relation.
	for _, dataset := range []string{"d1", "d2"} {
		accs, err := s.Accounts(ctx, dataset)
		if err != nil {
			t.Fatalf("Accounts(%s) error: %v", dataset, err)
		}
		if want := wantV1Balances(dataset, limits); fmt.Sprint(accs) != fmt.Sprint(want) {
			t.Errorf("Accounts(%s) =\n%+v\nwant\n%+v", dataset, accs, want)
		}
	}
	// By hand for acme on d1: feature-unit 0.5 + 0.1 + 0.1 + 0.05 (four
	// records), record 0.1 + 0.1 + 0.05 (three), validation-record 0.25.
	fu := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationFeatureUnit)
	rec := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationRecord)
	vr := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationValidationRecord)
	tar := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationTrainingAddRemove)
	sum := func(xs ...float64) float64 {
		r := new(big.Rat)
		for _, x := range xs {
			r.Add(r, new(big.Rat).SetFloat64(x))
		}
		f, _ := r.Float64()
		return f
	}
	if fu.Charges != 4 || fu.Spent != (ledger.Cost{Epsilon: sum(0.5, 0.1, 0.1, 0.05), Delta: 1e-6}) {
		t.Errorf("acme feature-unit = %+v, %d charges; want ε=0.75, δ=1e-6, 4 charges", fu.Spent, fu.Charges)
	}
	if rec.Charges != 3 || rec.Spent != (ledger.Cost{Epsilon: sum(0.1, 0.1, 0.05), Delta: 0}) {
		t.Errorf("acme record = %+v, %d charges; want ε=0.25, 3 charges", rec.Spent, rec.Charges)
	}
	if vr.Charges != 1 || vr.Spent != (ledger.Cost{Epsilon: 0.25, Delta: 1e-7}) || tar.Charges != 0 || tar.Spent != (ledger.Cost{}) || tar.DatasetSpent != (ledger.Cost{Epsilon: 0.3, Delta: 1e-6}) {
		t.Errorf("acme validation-record = %+v (%d), training-add-remove = %+v (%d), dataset %+v; want {0.25 1e-07} (1), nothing, dataset {0.3 1e-06}",
			vr.Spent, vr.Charges, tar.Spent, tar.Charges, tar.DatasetSpent)
	}
}

// CheckUpgradedV1Writes charges the upgraded store: old keys replay under
// their derived relation, and new records follow the old ones.
func CheckUpgradedV1Writes(t *testing.T, s *ledger.Ledger) {
	t.Helper()
	p1 := ledger.Charge{Account: ledger.Account{Dataset: "d1", Identity: "acme"}, Key: "p1", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}}
	if r, err := s.Charge(ctx, p1); err != nil || !r.Replayed || string(r.Result) != "Z-bytes" {
		t.Errorf("replay of v1 projection = %q, replayed %v, %v; want the stored result", r.Result, r.Replayed, err)
	}
	p1.Relation = ledger.RelationRecord
	if _, err := s.Charge(ctx, p1); !errors.Is(err, ledger.ErrKeyConflict) {
		t.Errorf("replay of v1 projection as record error = %v, want ErrKeyConflict", err)
	}
	MustCharge(t, s, ledger.Charge{Account: ledger.Account{Dataset: "d1", Identity: "acme"}, Key: "new", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.125, Delta: 0}})
	es := mustEntries(t, s, "d1")
	if last := es[len(es)-1]; last.Key != "new" || last.Relation != ledger.RelationRecord {
		t.Errorf("last entry after a new charge = %s (%s), want new (record)", last.Key, last.Relation)
	}
	if b := MustBalance(t, s, ledger.Account{Dataset: "d1", Identity: "acme"}, ledger.RelationRecord); b.Charges != 4 {
		t.Errorf("acme record charges after a new charge = %d, want 4", b.Charges)
	}
}

// v3Entry is a record of the version 2 and 3 fixture, and the whole-patient
// cost the upgrade to version 4 must give it.
type v3Entry struct {
	identity, key, kind string
	rel                 ledger.Relation
	cost                ledger.Cost
	description         string
	want                ledger.PatientCost
}

// v3Entries are records as the curator wrote them before version 4, on dataset
// "d3": what each states decides its whole-patient cost.
var v3Entries = []v3Entry{
	{"acme", "projection/proj-a", "projection", ledger.RelationFeatureUnit, ledger.Cost{Epsilon: 1, Delta: 1e-5},
		`private projection r=2 ε=1 δ=1e-05 label=""; relation feature-unit (one protected unit of one record's scaled features); whole patient (50 units): ε=134 at δ=1e-05`,
		ledger.PatientCost{Epsilon: 134, Delta: 1e-5}},
	{"acme", "projection/proj-b", "projection", ledger.RelationFeatureUnit, ledger.Cost{Epsilon: 0.5, Delta: 1e-6},
		`private projection r=2 ε=0.5 δ=1e-06 label="x"`, ledger.Unbounded},
	{"globex", "projection/proj-c", "projection", ledger.RelationFeatureUnit, ledger.Cost{Epsilon: 1, Delta: 1e-5},
		`private projection r=2 ε=1 δ=1e-05 label=""; relation feature-unit; whole patient: no guarantee`, ledger.Unbounded},
	{"globex", "projection/proj-d", "projection", ledger.RelationFeatureUnit, ledger.Cost{Epsilon: 2, Delta: 1e-5},
		`private projection r=3 ε=2 δ=1e-05 label=""; relation feature-unit; whole patient (1 unit): ε=2 at δ=1e-05, plus the private scaling's ε`,
		ledger.PatientCost{Epsilon: 2, Delta: 1e-5}},
	{"acme", "query-answers/laplace", "query-answers", ledger.RelationRecord, ledger.Cost{Epsilon: 1},
		"all query answers of this identity", ledger.PatientCost{Epsilon: 1}},
	{"acme", "query/4", "query", ledger.RelationRecord, ledger.Cost{}, "answer for row 4 (laplace; covered by the identity's query-answers charge)", ledger.PatientCost{}},
	{"globex", "query/3", "query", ledger.RelationRecord, ledger.Cost{}, "exact answer for row 3 (output privacy none: not protected)", ledger.Unbounded},
	{"acme", "job/h", "job:dphypo", ledger.RelationTrainingAddRemove, ledger.Cost{Epsilon: 1, Delta: 1e-6}, "{}",
		ledger.DefaultPatientCost(ledger.RelationTrainingAddRemove, ledger.Cost{Epsilon: 1, Delta: 1e-6})},
	{"acme", "job/k", "job:kusner", ledger.RelationValidationRecord, ledger.Cost{Epsilon: 0.5, Delta: 1e-7}, "{}", ledger.Unbounded},
	{"_curator", "scaling-estimate/x", "scaling-estimate", ledger.RelationRecord, ledger.Cost{Epsilon: 0.5}, "private scaling estimate", ledger.PatientCost{Epsilon: 0.5}},
}

// FillV3 writes the version 2 or 3 fixture (version 3 with its limits table
// holding StdLimits), with the totals those versions kept, through exec, into
// tables the engine's test created with that version's DDL. q names tables with
// {t} and uses ? placeholders.
func FillV3(t *testing.T, version int, exec func(q string, args ...any) error) {
	t.Helper()
	type key struct {
		identity string
		rel      ledger.Relation
	}
	sums := map[key]*counted{}
	var order []key
	for i, e := range v3Entries {
		if err := exec(`INSERT INTO {t}entries (dataset, identity, entry_key, kind, description, epsilon, delta, result, created_ns, relation)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, "d3", e.identity, e.key, e.kind, e.description, e.cost.Epsilon, e.cost.Delta, nil, v1Created(i), string(e.rel)); err != nil {
			t.Fatalf("insert v3 entry %s: %v", e.key, err)
		}
		k := key{e.identity, e.rel}
		if sums[k] == nil {
			sums[k] = new(counted)
			order = append(order, k)
		}
		sums[k].t.add(e.cost)
		sums[k].n++
	}
	for _, k := range order {
		if err := exec(`INSERT INTO {t}totals (dataset, identity, relation, epsilon, delta, charges) VALUES (?, ?, ?, ?, ?, ?)`,
			"d3", k.identity, string(k.rel), sums[k].t.eps.RatString(), sums[k].t.delta.RatString(), sums[k].n); err != nil {
			t.Fatalf("insert v3 total: %v", err)
		}
	}
	if version == 3 {
		l := StdLimits
		if err := exec(`INSERT INTO {t}limits (dataset, identity_epsilon, identity_delta, dataset_epsilon, dataset_delta, recorded_ns) VALUES (?, ?, ?, ?, ?, ?)`,
			"d3", l.PerIdentity.Epsilon, l.PerIdentity.Delta, l.Dataset.Epsilon, l.Dataset.Delta, v1Created(99)); err != nil {
			t.Fatalf("insert v3 limits: %v", err)
		}
	}
	if err := exec(`INSERT INTO {t}schema_version (id, version) VALUES (1, ?)`, version); err != nil {
		t.Fatalf("insert version: %v", err)
	}
}

// CheckUpgradedV3 checks a store opened on the version 2 or 3 fixture: every
// record kept with the whole-patient cost it states, the totals and the
// whole-patient totals recomputed (and consistent, Verify), version 3's limits
// the first of the history, and charges going on.
func CheckUpgradedV3(t *testing.T, s *ledger.Ledger, version int) {
	t.Helper()
	es := mustEntries(t, s, "d3")
	if len(es) != len(v3Entries) {
		t.Fatalf("Entries(d3) = %d records, want %d", len(es), len(v3Entries))
	}
	for i, e := range es {
		w := v3Entries[i]
		if e.Key != w.key || e.Relation != w.rel || e.Cost != w.cost || e.Description != w.description || e.Patient != w.want {
			t.Errorf("Entries(d3)[%d] = %s (%s) %+v, whole patient %+v; want %s (%s) %+v, whole patient %+v", i, e.Key, e.Relation, e.Cost, e.Patient,
				w.key, w.rel, w.cost, w.want)
		}
	}
	// By hand: acme holds 134 + 1 + 2 (DP-HyPO: 2ε) with δ 1e-5 + (1+e)·1e-6 and
	// two unbounded records (the projection without a whole-patient clause and the
	// Kusner job); globex an unbounded exact answer and lifted projection, and 2.
	pb, err := s.PatientBalance(ctx, ledger.Account{Dataset: "d3", Identity: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(xs ...float64) *big.Rat {
		r := new(big.Rat)
		for _, x := range xs {
			r.Add(r, new(big.Rat).SetFloat64(x))
		}
		return r
	}
	if d := v3Entries[7].want.Delta; math.Abs(d-(1+math.E)*1e-6) > 1e-20 {
		t.Errorf("the DP-HyPO record's whole-patient δ = %g, want (1 + e)·1e-6", d)
	}
	if pb.IdentityTotal.Epsilon.Cmp(sum(134, 1, 2)) != 0 || pb.IdentityTotal.Delta.Cmp(sum(1e-5, v3Entries[7].want.Delta)) != 0 ||
		pb.IdentityTotal.Unbounded != 2 || pb.IdentityTotal.Charges != 6 {
		t.Errorf("acme whole patient = ε %s δ %s, %d unbounded of %d; want 137, 1e-5 + (1+e)·1e-6, 2 of 6",
			pb.IdentityTotal.Epsilon.RatString(), pb.IdentityTotal.Delta.RatString(), pb.IdentityTotal.Unbounded, pb.IdentityTotal.Charges)
	}
	if pb.DatasetTotal.Epsilon.Cmp(sum(134, 1, 2, 2, 0.5)) != 0 || pb.DatasetTotal.Unbounded != 4 || pb.DatasetTotal.Charges != int64(len(v3Entries)) {
		t.Errorf("dataset whole patient = ε %s, %d unbounded of %d; want 139.5, 4 of %d", pb.DatasetTotal.Epsilon.RatString(),
			pb.DatasetTotal.Unbounded, pb.DatasetTotal.Charges, len(v3Entries))
	}
	if pb.DatasetTotal.Bounded() || pb.DatasetTotal.Cost().Epsilon != math.Inf(1) {
		t.Errorf("dataset whole patient Bounded = %v, cost %+v; want not bounded", pb.DatasetTotal.Bounded(), pb.DatasetTotal.Cost())
	}
	if inc, err := s.Verify(ctx, "d3"); err != nil || len(inc) != 0 {
		t.Errorf("Verify after upgrade = %v, %v; want consistent", inc, err)
	}
	// Per relation, as before: acme feature-unit 1 + 0.5 + 1 (the answers).
	if b := MustBalance(t, s, ledger.Account{Dataset: "d3", Identity: "acme"}, ledger.RelationFeatureUnit); b.Charges != 4 || b.Spent.Epsilon != 2.5 {
		t.Errorf("acme feature-unit after upgrade = %+v (%d charges), want ε 2.5 over 4", b.Spent, b.Charges)
	}
	h, err := s.LimitsHistory(ctx, "d3")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case version == 3 && (len(h) != 1 || h[0].Limits != StdLimits || h[0].Recorded.UnixNano() != v1Created(99)):
		t.Errorf("limits history after upgrading version 3 = %+v, want its limits recorded at %v", h, time.Unix(0, v1Created(99)))
	case version == 2 && len(h) != 0:
		t.Errorf("limits history after upgrading version 2 = %+v, want none", h)
	}
	// A replay of an old key replays; a new charge adds to the recomputed totals.
	r, err := s.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "d3", Identity: "acme"}, Key: "projection/proj-a", Kind: "projection",
		Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Patient: &ledger.PatientCost{Epsilon: 1}})
	if err != nil || !r.Replayed || r.Patient != (ledger.PatientCost{Epsilon: 134, Delta: 1e-5}) {
		t.Errorf("replay of a version %d projection = %+v, %v; want replayed with its stored whole-patient cost", version, r.Patient, err)
	}
	MustCharge(t, s, ledger.Charge{Account: ledger.Account{Dataset: "d3", Identity: "initech"}, Key: "j", Kind: "job:dphypo", Relation: ledger.RelationTrainingAddRemove, Cost: ledger.Cost{Epsilon: 0.25}})
	if pb, err := s.PatientBalance(ctx, ledger.Account{Dataset: "d3", Identity: "initech"}); err != nil || pb.IdentityTotal.Cost() != (ledger.Cost{Epsilon: 0.5}) {
		t.Errorf("initech whole patient after a training-add-remove charge of ε 0.25 = %+v, %v; want ε 0.5 (two steps)", pb.IdentityTotal.Cost(), err)
	}
	if inc, err := s.Verify(ctx, "d3"); err != nil || len(inc) != 0 {
		t.Errorf("Verify after a charge on the upgraded ledger = %v, %v; want consistent", inc, err)
	}
}
