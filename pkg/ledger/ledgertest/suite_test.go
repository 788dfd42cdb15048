package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// Opener opens a Ledger on one ledger location (a SQLite file, a PostgreSQL
// schema). It may be called several times, also while other Ledgers on the
// location are open; every Ledger it returns must be closed when the test ends
// (t.Cleanup).
type Opener func(t *testing.T, limits ledger.Limits) *ledger.Ledger

// Location returns an Opener for a new, empty ledger location that is removed
// when the test ends.
type Location func(t *testing.T) Opener

// Run runs, as subtests of t, the behaviour every Ledger must have: replays and
// key conflicts, both limits under every neighbour relation, exact totals,
// validation, results, listings and reports, persistence across reopening,
// cancellation and closing, concurrent charges from one and from two
// Ledgers on one location, the whole-patient account (RunPatient) and
// reservations (RunReserve). Each subtest asks loc for a fresh location.
func Run(t *testing.T, loc Location) {
	tests := []struct {
		name string
		fn   func(t *testing.T, loc Location)
	}{
		{"ChargeReplay", testChargeReplay},
		{"KeyConflict", testKeyConflict},
		{"BudgetExceeded", testBudgetExceeded},
		{"ZeroCost", testZeroCost},
		{"FreeCharges", testFreeCharges},
		{"StoredQuota", testStoredQuota},
		{"InvalidRefused", testInvalidRefused},
		{"SetResult", testSetResult},
		{"BalanceAccounts", testBalanceAccounts},
		{"Relations", testRelations},
		{"EntriesOrder", testEntriesOrder},
		{"Persistence", testPersistence},
		{"DecimalSlack", testDecimalSlack},
		{"RecordedLimits", testRecordedLimits},
		{"Report", testReport},
		{"Cancelled", testCancelled},
		{"Closed", testClosed},
		{"RaceOneStore", func(t *testing.T, loc Location) { testRace(t, loc, 1) }},
		{"RaceTwoStores", func(t *testing.T, loc Location) { testRace(t, loc, 2) }},
		{"ChargeAll", testChargeAll},
		{"ChargeAllRaceOneStore", func(t *testing.T, loc Location) { testChargeAllRace(t, loc, 1) }},
		{"ChargeAllRaceTwoStores", func(t *testing.T, loc Location) { testChargeAllRace(t, loc, 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, loc) })
	}
	t.Run("Patient", func(t *testing.T) { RunPatient(t, loc) })
	t.Run("Reserve", func(t *testing.T) { RunReserve(t, loc) })
	t.Run("Liveness", func(t *testing.T) { RunLiveness(t, loc) })
}

// StdLimits are the limits most of the suite runs under: per identity
// (ε, δ) = (1, 1e-5), per dataset (2, 1e-4).
var StdLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2, Delta: 1e-4}}

var (
	ctx       = context.Background()
	acme      = ledger.Account{Dataset: "diabetes", Identity: "acme"}
	bigLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1e6, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 1e6, Delta: 0.5}}
)

// MustCharge charges c to s and fails the test on error.
func MustCharge(t testing.TB, s *ledger.Ledger, c ledger.Charge) ledger.Receipt {
	t.Helper()
	r, err := s.Charge(ctx, c)
	if err != nil {
		t.Fatalf("Charge(%s/%s/%s, %+v) error: %v", c.Dataset, c.Identity, c.Key, c.Cost, err)
	}
	return r
}

// MustBalance returns the balance of a under rel and fails the test on error.
func MustBalance(t testing.TB, s *ledger.Ledger, a ledger.Account, rel ledger.Relation) ledger.Balance {
	t.Helper()
	b, err := s.Balance(ctx, a, rel)
	if err != nil {
		t.Fatalf("Balance(%v, %s) error: %v", a, rel, err)
	}
	return b
}

// mustBalances returns a's balance under every relation, in the order of
// Relations.
func mustBalances(t *testing.T, s *ledger.Ledger, a ledger.Account) [4]ledger.Balance {
	t.Helper()
	var out [4]ledger.Balance
	if len(ledger.Relations) != len(out) {
		t.Fatalf("%d relations, mustBalances knows %d", len(ledger.Relations), len(out))
	}
	for i, rel := range ledger.Relations {
		out[i] = MustBalance(t, s, a, rel)
	}
	return out
}

func mustEntries(t *testing.T, s *ledger.Ledger, dataset string) []ledger.Receipt {
	t.Helper()
	es, err := s.Entries(ctx, dataset)
	if err != nil {
		t.Fatalf("Entries(%s) error: %v", dataset, err)
	}
	return es
}

// diffReceipt describes how got differs from want ("" if equal).
func diffReceipt(got, want ledger.Receipt) string {
	var d []string
	if got.Account != want.Account || got.Key != want.Key || got.Kind != want.Kind || got.Description != want.Description {
		d = append(d, fmt.Sprintf("names %v/%s/%s/%q, want %v/%s/%s/%q", got.Account, got.Key, got.Kind, got.Description,
			want.Account, want.Key, want.Kind, want.Description))
	}
	if got.Relation != want.Relation {
		d = append(d, fmt.Sprintf("relation %s, want %s", got.Relation, want.Relation))
	}
	if got.Cost != want.Cost {
		d = append(d, fmt.Sprintf("cost %+v, want %+v", got.Cost, want.Cost))
	}
	if !bytes.Equal(got.Result, want.Result) || got.ResultSize != want.ResultSize {
		d = append(d, fmt.Sprintf("result %q (%d), want %q (%d)", got.Result, got.ResultSize, want.Result, want.ResultSize))
	}
	if !got.Created.Equal(want.Created) {
		d = append(d, fmt.Sprintf("created %v, want %v", got.Created, want.Created))
	}
	if got.Replayed != want.Replayed {
		d = append(d, fmt.Sprintf("replayed %v, want %v", got.Replayed, want.Replayed))
	}
	return strings.Join(d, "; ")
}

// exactSpent is the exact sum of the costs of entries, per identity ("" for
// the whole dataset).
func exactSpent(es []ledger.Receipt, identity string) (eps, delta *big.Rat) {
	eps, delta = new(big.Rat), new(big.Rat)
	for _, e := range es {
		if identity == "" || e.Identity == identity {
			eps.Add(eps, new(big.Rat).SetFloat64(e.Cost.Epsilon))
			delta.Add(delta, new(big.Rat).SetFloat64(e.Cost.Delta))
		}
	}
	return eps, delta
}

func testChargeReplay(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	payload := []byte("Z-bytes")
	c := ledger.Charge{Account: acme, Key: "proj-1", Kind: "projection", Relation: ledger.RelationFeatureUnit, Description: "r=8", Cost: ledger.Cost{Epsilon: 0.25, Delta: 1e-6}, Result: payload}
	before := time.Now()
	r1 := MustCharge(t, s, c)
	after := time.Now()
	payload[0] = 'X' // the store must not alias the caller's slice
	want := ledger.Receipt{Account: acme, Key: "proj-1", Kind: "projection", Relation: ledger.RelationFeatureUnit, Description: "r=8", Cost: ledger.Cost{Epsilon: 0.25, Delta: 1e-6},
		Result: []byte("Z-bytes"), ResultSize: 7, Created: r1.Created}
	if d := diffReceipt(r1, want); d != "" {
		t.Errorf("Charge = %s", d)
	}
	if r1.Created.Before(before.Truncate(time.Microsecond)) || r1.Created.After(after) {
		t.Errorf("Created = %v, want within [%v, %v]", r1.Created, before, after)
	}

	// A retry with another description and result replays the stored receipt.
	retry := c
	retry.Description, retry.Result = "retry", []byte("other")
	r2 := MustCharge(t, s, retry)
	want.Replayed = true
	if d := diffReceipt(r2, want); d != "" {
		t.Errorf("replayed Charge = %s", d)
	}
	got, found, err := s.Get(ctx, acme, "proj-1")
	want.Replayed = false
	if err != nil || !found {
		t.Fatalf("Get = %v, %v, want found", found, err)
	}
	if d := diffReceipt(got, want); d != "" {
		t.Errorf("Get = %s", d)
	}
	if _, found, err := s.Get(ctx, acme, "proj-2"); err != nil || found {
		t.Errorf("Get(unknown key) = %v, %v, want not found", found, err)
	}

	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Spent != (ledger.Cost{}) || b.Charges != 0 || b.DatasetSpent != (ledger.Cost{}) {
		t.Errorf("record Balance after a feature-unit charge: spent %+v, charges %d, dataset %+v; want nothing", b.Spent, b.Charges, b.DatasetSpent)
	}
	b := MustBalance(t, s, acme, ledger.RelationFeatureUnit)
	if b.Spent != (ledger.Cost{Epsilon: 0.25, Delta: 1e-6}) || b.Charges != 1 || b.DatasetSpent != b.Spent || b.Relation != ledger.RelationFeatureUnit {
		t.Errorf("Balance after charge and replay: spent %+v, charges %d, dataset %+v; want {0.25 1e-06}, 1, the same", b.Spent, b.Charges, b.DatasetSpent)
	}
	// 1e-5 − 1e-6 rounded toward zero: within one ulp below 9e-6, never above the exact difference.
	if b.Remaining.Epsilon != 0.75 || math.Abs(b.Remaining.Delta-9e-6) > 2e-21 {
		t.Errorf("Remaining = %+v, want {0.75 9e-06}", b.Remaining)
	}
	if n := len(mustEntries(t, s, "diabetes")); n != 1 {
		t.Errorf("len(Entries) = %d, want 1", n)
	}
}

func testKeyConflict(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	c := ledger.Charge{Account: acme, Key: "q-7", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.125, Delta: 0}}
	MustCharge(t, s, c)
	tests := []struct {
		name string
		edit func(c *ledger.Charge)
	}{
		{"epsilon", func(c *ledger.Charge) { c.Cost.Epsilon = 0.25 }},
		{"delta", func(c *ledger.Charge) { c.Cost.Delta = 1e-9 }},
		{"kind", func(c *ledger.Charge) { c.Kind = "projection" }},
		{"zero cost", func(c *ledger.Charge) { c.Cost = ledger.Cost{} }},
		// A record-level charge also counts as feature-unit, but a replay must
		// still name the relation stated when it was charged.
		{"relation implied", func(c *ledger.Charge) { c.Relation = ledger.RelationFeatureUnit }},
		{"relation", func(c *ledger.Charge) { c.Relation = ledger.RelationValidationRecord }},
	}
	for _, tt := range tests {
		d := c
		tt.edit(&d)
		_, err := s.Charge(ctx, d)
		if !errors.Is(err, ledger.ErrKeyConflict) {
			t.Errorf("%s: Charge(same key, other %s) error = %v, want ErrKeyConflict", tt.name, tt.name, err)
		}
	}
	// Keys are scoped by account.
	other := c
	other.Identity = "globex"
	if r := MustCharge(t, s, other); r.Replayed {
		t.Errorf("Charge(same key, other identity).Replayed = true, want false")
	}
	other = c
	other.Dataset = "housing"
	if r := MustCharge(t, s, other); r.Replayed {
		t.Errorf("Charge(same key, other dataset).Replayed = true, want false")
	}
	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Spent != (ledger.Cost{Epsilon: 0.125, Delta: 0}) || b.DatasetSpent != (ledger.Cost{Epsilon: 0.25, Delta: 0}) || b.Charges != 1 {
		t.Errorf("Balance = spent %+v, dataset %+v, charges %d; want {0.125 0}, {0.25 0}, 1", b.Spent, b.DatasetSpent, b.Charges)
	}
}

func testZeroCost(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "all-eps", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1, Delta: 0}})
	tests := []struct {
		key        string
		cost       ledger.Cost
		wantRefuse bool
	}{
		{"zero", ledger.Cost{Epsilon: 0, Delta: 0}, false},
		{"delta only", ledger.Cost{Epsilon: 0, Delta: 1e-6}, false},
		{"eps beyond the slack", ledger.Cost{Epsilon: 1e-9, Delta: 0}, true},
		{"negative zero", ledger.Cost{Epsilon: math.Copysign(0, -1), Delta: 0}, false},
	}
	for _, tt := range tests {
		r, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: tt.key, Kind: "record", Relation: ledger.RelationRecord, Cost: tt.cost})
		if tt.wantRefuse != errors.Is(err, ledger.ErrBudgetExceeded) || !tt.wantRefuse && err != nil {
			t.Errorf("Charge(%+v) with ε exhausted: error %v, want refused=%v", tt.cost, err, tt.wantRefuse)
			continue
		}
		if err == nil && (math.Signbit(r.Cost.Epsilon) || math.Signbit(r.Cost.Delta)) {
			t.Errorf("Charge(%+v) recorded %+v, want +0 components", tt.cost, r.Cost)
		}
	}
	b := MustBalance(t, s, acme, ledger.RelationRecord)
	if b.Spent != (ledger.Cost{Epsilon: 1, Delta: 1e-6}) || b.Charges != 4 || b.Remaining != (ledger.Cost{Epsilon: 0, Delta: 9e-6}) {
		t.Errorf("Balance = spent %+v, remaining %+v, charges %d; want {1 1e-06}, {0 9e-06}, 4", b.Spent, b.Remaining, b.Charges)
	}
	if r := MustCharge(t, s, ledger.Charge{Account: acme, Key: "zero", Kind: "record", Relation: ledger.RelationRecord}); !r.Replayed {
		t.Errorf("zero-cost retry Replayed = false, want true")
	}
}

func testInvalidRefused(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	good := ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}}
	tests := []struct {
		name    string
		edit    func(c *ledger.Charge)
		wantErr string
	}{
		{"NaN epsilon", func(c *ledger.Charge) { c.Cost.Epsilon = math.NaN() }, "epsilon must be finite"},
		{"+Inf epsilon", func(c *ledger.Charge) { c.Cost.Epsilon = math.Inf(1) }, "epsilon must be finite"},
		{"negative epsilon", func(c *ledger.Charge) { c.Cost.Epsilon = -0.5 }, "epsilon must be non-negative"},
		{"negative delta", func(c *ledger.Charge) { c.Cost.Delta = -1e-6 }, "delta must be non-negative"},
		{"-Inf delta", func(c *ledger.Charge) { c.Cost.Delta = math.Inf(-1) }, "delta must be finite"},
		{"delta one", func(c *ledger.Charge) { c.Cost.Delta = 1 }, "delta must be below 1"},
		{"empty dataset", func(c *ledger.Charge) { c.Dataset = "" }, "dataset must not be empty"},
		{"empty identity", func(c *ledger.Charge) { c.Identity = "" }, "identity must not be empty"},
		{"empty key", func(c *ledger.Charge) { c.Key = "" }, "key must not be empty"},
		{"empty kind", func(c *ledger.Charge) { c.Kind = "" }, "kind must not be empty"},
		{"invalid UTF-8 key", func(c *ledger.Charge) { c.Key = "\xc3\x28" }, "key must be valid UTF-8"},
		{"NUL identity", func(c *ledger.Charge) { c.Identity = "ac\x00me" }, "identity must not contain NUL"},
		{"no relation", func(c *ledger.Charge) { c.Relation = "" }, "unknown neighbour relation"},
		{"unknown relation", func(c *ledger.Charge) { c.Relation = "add-remove" }, "unknown neighbour relation"},
	}
	for _, tt := range tests {
		c := good
		tt.edit(&c)
		_, err := s.Charge(ctx, c)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ledger.ErrBudgetExceeded) {
			t.Errorf("%s: Charge error = %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
	if es := mustEntries(t, s, "diabetes"); len(es) != 0 {
		t.Errorf("Entries after invalid charges = %d records, want 0", len(es))
	}
	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Spent != (ledger.Cost{}) || b.Remaining != StdLimits.PerIdentity {
		t.Errorf("Balance after invalid charges = spent %+v, remaining %+v; want zero, %+v", b.Spent, b.Remaining, StdLimits.PerIdentity)
	}
	// The other methods validate their arguments too.
	if _, err := s.Balance(ctx, ledger.Account{Dataset: "diabetes"}, ledger.RelationRecord); err == nil {
		t.Errorf("Balance(no identity) error = nil, want an error")
	}
	if _, err := s.Balance(ctx, acme, "add-remove"); err == nil || !strings.Contains(err.Error(), "unknown neighbour relation") {
		t.Errorf("Balance(unknown relation) error = %v, want an unknown relation error", err)
	}
	if _, err := s.DatasetTotals(ctx, ""); err == nil {
		t.Errorf("DatasetTotals(\"\") error = nil, want an error")
	}
	if _, _, err := s.Get(ctx, acme, ""); err == nil {
		t.Errorf("Get(empty key) error = nil, want an error")
	}
	if err := s.SetResult(ctx, ledger.Account{Identity: "acme"}, "k", nil); err == nil {
		t.Errorf("SetResult(no dataset) error = nil, want an error")
	}
	if _, err := s.Entries(ctx, ""); err == nil {
		t.Errorf("Entries(\"\") error = nil, want an error")
	}
	if _, err := s.Accounts(ctx, "a\x00"); err == nil {
		t.Errorf("Accounts(NUL) error = nil, want an error")
	}
}

func testSetResult(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	c := ledger.Charge{Account: acme, Key: "job-1", Kind: "kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}}
	r := MustCharge(t, s, c)
	if r.Result != nil || r.ResultSize != 0 {
		t.Errorf("Charge without result: Result %q (%d), want nil (0)", r.Result, r.ResultSize)
	}
	for _, res := range [][]byte{[]byte("first"), []byte("second result")} {
		if err := s.SetResult(ctx, acme, "job-1", res); err != nil {
			t.Fatalf("SetResult(%q) error: %v", res, err)
		}
		got, found, err := s.Get(ctx, acme, "job-1")
		if err != nil || !found || !bytes.Equal(got.Result, res) || got.ResultSize != len(res) || got.Cost != c.Cost {
			t.Errorf("Get after SetResult(%q) = %q (%d), cost %+v, %v, %v; want %q, cost %+v", res, got.Result, got.ResultSize, got.Cost, found, err, res, c.Cost)
		}
		rp := MustCharge(t, s, c)
		if !rp.Replayed || !bytes.Equal(rp.Result, res) {
			t.Errorf("replay after SetResult(%q) = %q, replayed %v; want the result, true", res, rp.Result, rp.Replayed)
		}
	}
	if es := mustEntries(t, s, "diabetes"); len(es) != 1 || es[0].ResultSize != len("second result") || es[0].Result != nil {
		t.Errorf("Entries = %+v, want one record with ResultSize %d and no payload", es, len("second result"))
	}
	if b := MustBalance(t, s, acme, ledger.RelationValidationRecord); b.Spent != c.Cost || b.Charges != 1 {
		t.Errorf("Balance after SetResult = spent %+v, charges %d; want %+v, 1", b.Spent, b.Charges, c.Cost)
	}
	for _, tt := range []struct {
		a   ledger.Account
		key string
	}{{acme, "job-2"}, {ledger.Account{Dataset: "diabetes", Identity: "globex"}, "job-1"}, {ledger.Account{Dataset: "housing", Identity: "acme"}, "job-1"}} {
		if err := s.SetResult(ctx, tt.a, tt.key, []byte("x")); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("SetResult(%v, %s) error = %v, want ErrNotFound", tt.a, tt.key, err)
		}
	}
}

func testBalanceAccounts(t *testing.T, loc Location) {
	open := loc(t)
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1.5, Delta: 2e-5}}
	s := open(t, limits)
	if got := s.Limits(); got != limits {
		t.Errorf("Limits() = %+v, want %+v", got, limits)
	}
	fresh := MustBalance(t, s, acme, ledger.RelationRecord)
	want := ledger.Balance{Account: acme, Relation: ledger.RelationRecord, Remaining: limits.PerIdentity, DatasetRemaining: limits.Dataset, Limits: limits}
	if fresh != want {
		t.Errorf("Balance(fresh) = %+v, want %+v", fresh, want)
	}
	alice, bob := ledger.Account{Dataset: "ds1", Identity: "alice"}, ledger.Account{Dataset: "ds1", Identity: "bob"}
	for i, c := range []struct {
		a    ledger.Account
		cost ledger.Cost
	}{
		{alice, ledger.Cost{Epsilon: 0.25, Delta: 0}}, {bob, ledger.Cost{Epsilon: 0.125, Delta: 0.5e-5}}, {alice, ledger.Cost{Epsilon: 0.25, Delta: 1e-5}}, {ledger.Account{Dataset: "ds2", Identity: "alice"}, ledger.Cost{Epsilon: 0.5, Delta: 0}},
	} {
		MustCharge(t, s, ledger.Charge{Account: c.a, Key: fmt.Sprint("k", i), Kind: "query", Relation: ledger.RelationRecord, Cost: c.cost})
	}
	wantAlice := ledger.Balance{Account: alice, Relation: ledger.RelationRecord, Spent: ledger.Cost{Epsilon: 0.5, Delta: 1e-5}, Remaining: ledger.Cost{Epsilon: 0.5, Delta: 0}, DatasetSpent: ledger.Cost{Epsilon: 0.625, Delta: 1.5e-5},
		DatasetRemaining: ledger.Cost{Epsilon: 0.875, Delta: 0.5e-5}, Charges: 2, Limits: limits}
	wantBob := ledger.Balance{Account: bob, Relation: ledger.RelationRecord, Spent: ledger.Cost{Epsilon: 0.125, Delta: 0.5e-5}, Remaining: ledger.Cost{Epsilon: 0.875, Delta: 0.5e-5}, DatasetSpent: ledger.Cost{Epsilon: 0.625, Delta: 1.5e-5},
		DatasetRemaining: ledger.Cost{Epsilon: 0.875, Delta: 0.5e-5}, Charges: 1, Limits: limits}
	// δ values: 1e-5 + 0.5e-5 and 2e-5 − 1.5e-5 are checked against exact arithmetic below; the
	// wanted float64 values are the correctly rounded (nearest / toward zero) results.
	fixDelta := func(b *ledger.Balance, spent, dsSpent []float64) {
		b.Spent.Delta, _ = ratSum(spent...).Float64()
		b.DatasetSpent.Delta, _ = ratSum(dsSpent...).Float64()
		var tid, tds total
		for _, x := range spent {
			tid.add(ledger.Cost{Epsilon: 0, Delta: x})
		}
		for _, x := range dsSpent {
			tds.add(ledger.Cost{Epsilon: 0, Delta: x})
		}
		b.Remaining.Delta = tid.remaining(limits.PerIdentity).Delta
		b.DatasetRemaining.Delta = tds.remaining(limits.Dataset).Delta
	}
	fixDelta(&wantAlice, []float64{0, 1e-5}, []float64{0, 0.5e-5, 1e-5})
	fixDelta(&wantBob, []float64{0.5e-5}, []float64{0, 0.5e-5, 1e-5})
	if got := MustBalance(t, s, alice, ledger.RelationRecord); got != wantAlice {
		t.Errorf("Balance(alice) = %+v, want %+v", got, wantAlice)
	}
	accs, err := s.Accounts(ctx, "ds1")
	if err != nil {
		t.Fatalf("Accounts error: %v", err)
	}
	// The record-level charges count towards feature-unit as well, and
	// feature-unit comes first in Relations.
	aliceFU, bobFU := wantAlice, wantBob
	aliceFU.Relation, bobFU.Relation = ledger.RelationFeatureUnit, ledger.RelationFeatureUnit
	if got := MustBalance(t, s, alice, ledger.RelationFeatureUnit); got != aliceFU {
		t.Errorf("Balance(alice, feature-unit) = %+v, want %+v", got, aliceFU)
	}
	if len(accs) != 4 || accs[0] != aliceFU || accs[1] != wantAlice || accs[2] != bobFU || accs[3] != wantBob {
		t.Errorf("Accounts(ds1) = %+v, want [%+v %+v %+v %+v]", accs, aliceFU, wantAlice, bobFU, wantBob)
	}
	if accs, err := s.Accounts(ctx, "ds3"); err != nil || len(accs) != 0 {
		t.Errorf("Accounts(ds3) = %+v, %v, want none", accs, err)
	}
	if got := MustBalance(t, s, ledger.Account{Dataset: "ds2", Identity: "alice"}, ledger.RelationRecord); got.DatasetSpent != (ledger.Cost{Epsilon: 0.5, Delta: 0}) || got.Charges != 1 {
		t.Errorf("Balance(ds2/alice) = %+v, want dataset spent {0.5 0} and 1 charge", got)
	}
}

func testEntriesOrder(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, bigLimits)
	type ch struct {
		dataset, identity, key string
		result                 string
	}
	order := []ch{
		{"ds1", "carol", "z", ""}, {"ds1", "alice", "y", "12345"}, {"ds2", "alice", "x", ""},
		{"ds1", "bob", "a", "1"}, {"ds1", "alice", "b", ""}, {"ds2", "bob", "c", ""}, {"ds1", "carol", "m", ""},
	}
	for i, c := range order {
		var res []byte
		if c.result != "" {
			res = []byte(c.result)
		}
		MustCharge(t, s, ledger.Charge{Account: ledger.Account{Dataset: c.dataset, Identity: c.identity}, Key: c.key, Kind: "query", Relation: ledger.RelationRecord,
			Description: fmt.Sprint("charge ", i), Cost: ledger.Cost{Epsilon: float64(i + 1), Delta: 0}, Result: res})
	}
	es := mustEntries(t, s, "ds1")
	var want []ch
	for _, c := range order {
		if c.dataset == "ds1" {
			want = append(want, c)
		}
	}
	if len(es) != len(want) {
		t.Fatalf("len(Entries(ds1)) = %d, want %d", len(es), len(want))
	}
	for i, e := range es {
		w := want[i]
		if e.Dataset != "ds1" || e.Identity != w.identity || e.Key != w.key || e.ResultSize != len(w.result) || e.Result != nil {
			t.Errorf("Entries[%d] = %s/%s/%s result %q (%d), want %s/%s/%s size %d, no payload",
				i, e.Dataset, e.Identity, e.Key, e.Result, e.ResultSize, "ds1", w.identity, w.key, len(w.result))
		}
		if i > 0 && e.Created.Before(es[i-1].Created) {
			t.Errorf("Entries[%d].Created = %v before Entries[%d].Created = %v", i, e.Created, i-1, es[i-1].Created)
		}
	}
}

func testPersistence(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "a", Kind: "projection", Relation: ledger.RelationFeatureUnit, Description: "first", Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}, Result: []byte{0, 1, 2, 255}})
	MustCharge(t, s, ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: "globex"}, Key: "b", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.25, Delta: 0}})
	MustCharge(t, s, ledger.Charge{Account: acme, Key: "c", Kind: "kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 0.125, Delta: 0}})
	if err := s.SetResult(ctx, acme, "c", []byte("done")); err != nil {
		t.Fatalf("SetResult error: %v", err)
	}
	wantEntries := mustEntries(t, s, "diabetes")
	wantBalances := mustBalances(t, s, acme)
	wantC, _, _ := s.Get(ctx, acme, "c")
	if err := s.Close(); err != nil {
		t.Fatalf("Close error: %v", err)
	}

	s = open(t, StdLimits)
	gotEntries := mustEntries(t, s, "diabetes")
	if len(gotEntries) != len(wantEntries) {
		t.Fatalf("after reopen len(Entries) = %d, want %d", len(gotEntries), len(wantEntries))
	}
	for i := range gotEntries {
		if d := diffReceipt(gotEntries[i], wantEntries[i]); d != "" {
			t.Errorf("after reopen Entries[%d]: %s", i, d)
		}
	}
	if got := mustBalances(t, s, acme); got != wantBalances {
		t.Errorf("after reopen Balances = %+v, want %+v", got, wantBalances)
	}
	if got, found, err := s.Get(ctx, acme, "c"); err != nil || !found || diffReceipt(got, wantC) != "" {
		t.Errorf("after reopen Get(c) = %+v, %v, %v, want %+v", got, found, err, wantC)
	}
	if r := MustCharge(t, s, ledger.Charge{Account: acme, Key: "a", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-6}}); !r.Replayed || !bytes.Equal(r.Result, []byte{0, 1, 2, 255}) {
		t.Errorf("after reopen replay = %q, replayed %v; want stored bytes, true", r.Result, r.Replayed)
	}
	// The spend persisted: acme has 0.5 left under feature-unit.
	_, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "d", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.75, Delta: 0}})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || be.Remaining.Epsilon != 0.5 || be.Relation != ledger.RelationFeatureUnit {
		t.Errorf("after reopen Charge(0.75) error = %v, want a feature-unit BudgetError with ε remaining 0.5", err)
	}
	s.Close()

	// Reopened with lower limits, the totals are checked against the new limits.
	lower := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 0.5, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 0.75, Delta: 1e-4}}
	s = open(t, lower)
	// (Feature-unit: acme 0.5, the dataset 0.75 with globex's record-level query.)
	if b := MustBalance(t, s, acme, ledger.RelationFeatureUnit); b.Spent != wantBalances[0].Spent || b.Remaining.Epsilon != 0 || b.DatasetRemaining.Epsilon != 0 || b.Limits != lower {
		t.Errorf("with lower limits Balance = %+v, want spent %+v and nothing remaining", b, wantBalances[0].Spent)
	}
	_, err = s.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: "initech"}, Key: "e", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.125, Delta: 0}})
	if !errors.As(err, &be) || be.Scope != ledger.ScopeDataset || be.Relation != ledger.RelationFeatureUnit {
		t.Errorf("with lower limits Charge error = %v, want a feature-unit dataset BudgetError", err)
	}
}

func testDecimalSlack(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-4}, Dataset: ledger.Cost{Epsilon: 10, Delta: 0.5}})
	for i := range 10 {
		MustCharge(t, s, ledger.Charge{Account: acme, Key: fmt.Sprint("q", i), Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1, Delta: 1e-5}})
	}
	b := MustBalance(t, s, acme, ledger.RelationRecord)
	if b.Remaining != (ledger.Cost{}) || b.Charges != 10 {
		t.Errorf("after 10×(0.1, 1e-5): remaining %+v, charges %d; want zero, 10", b.Remaining, b.Charges)
	}
	// Spent is the exact total rounded to nearest: 10×float64(0.1) rounds to 1.
	if b.Spent.Epsilon != 1 {
		t.Errorf("after 10×0.1: spent ε = %v, want 1", b.Spent.Epsilon)
	}
	if _, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "q10", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1, Delta: 0}}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("11th Charge(0.1) error = %v, want ErrBudgetExceeded", err)
	}
	for _, tt := range []struct {
		identity string
		eps      float64
		want     bool
	}{{"within", 1 + 0.5e-12, true}, {"beyond", 1 + 2e-12, false}} {
		_, err := s.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: tt.identity}, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: tt.eps, Delta: 0}})
		if (err == nil) != tt.want || err != nil && !errors.Is(err, ledger.ErrBudgetExceeded) {
			t.Errorf("Charge(ε=%.15g) against limit 1: error %v, want accepted=%v", tt.eps, err, tt.want)
		}
	}
}

func testCancelled(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Charge(cctx, ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Charge(cancelled) error = %v, want context.Canceled", err)
	}
	if es := mustEntries(t, s, "diabetes"); len(es) != 0 {
		t.Errorf("Entries after cancelled charge = %d, want 0", len(es))
	}
}

func testClosed(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	if err := s.Close(); err != nil {
		t.Fatalf("Close error: %v", err)
	}
	if _, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "k", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 0}}); err == nil {
		t.Errorf("Charge after Close error = nil, want an error")
	}
	if _, err := s.Balance(ctx, acme, ledger.RelationRecord); err == nil {
		t.Errorf("Balance after Close error = nil, want an error")
	}
}

func testRecordedLimits(t *testing.T, loc Location) {
	open := loc(t)
	s := open(t, StdLimits)
	if _, found, err := s.RecordedLimits(ctx, "diabetes"); err != nil || found {
		t.Fatalf("RecordedLimits before any record = %v, %v; want none", found, err)
	}
	before := time.Now().Add(-time.Second)
	st, err := s.RecordLimits(ctx, "diabetes", false)
	if err != nil || !st.First || st.Previous != nil || st.InForce.Limits != StdLimits || st.InForce.Starts != 1 {
		t.Fatalf("RecordLimits (first start) = %+v, %v; want first, in force %+v", st, err, StdLimits)
	}
	r, found, err := s.RecordedLimits(ctx, "diabetes")
	if err != nil || !found || r.Limits != StdLimits || r.Recorded.Before(before) || r.Confirmed != r.Recorded {
		t.Errorf("RecordedLimits = %+v, %v, %v; want %+v recorded after %v", r, found, err, StdLimits, before)
	}
	// A start with the same limits confirms them.
	if st, err := s.RecordLimits(ctx, "diabetes", false); err != nil || st.First || st.Previous != nil || st.InForce.Starts != 2 ||
		!st.InForce.Recorded.Equal(r.Recorded) || st.InForce.Confirmed.Before(r.Recorded) {
		t.Errorf("RecordLimits (same limits) = %+v, %v; want the limits in force confirmed, 2 starts", st, err)
	}
	// A start with other limits is refused and records nothing, unless it changes them.
	other := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 0.5, Delta: 2e-6}, Dataset: ledger.Cost{Epsilon: 7, Delta: 1e-5},
		Patient: ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 20, Delta: 1e-5}}}
	s2 := open(t, other)
	_, err = s2.RecordLimits(ctx, "diabetes", false)
	var de *ledger.LimitsDifferError
	if !errors.Is(err, ledger.ErrLimitsDiffer) || !errors.As(err, &de) || de.InForce.Limits != StdLimits || de.Configured != other {
		t.Fatalf("RecordLimits (other limits) error = %v, want a *LimitsDifferError naming both", err)
	}
	if h, err := s.LimitsHistory(ctx, "diabetes"); err != nil || len(h) != 1 {
		t.Errorf("LimitsHistory after a refused start = %d entries, %v; want 1", len(h), err)
	}
	// Until the change, a charge by the store opened with the other limits is
	// checked against the limits in force: ε 0.75 fits StdLimits' 1 and not 0.5.
	MustCharge(t, s2, ledger.Charge{Account: acme, Key: "a", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.75}})
	st, err = s2.RecordLimits(ctx, "diabetes", true)
	if err != nil || st.First || st.Previous == nil || st.Previous.Limits != StdLimits || st.InForce.Limits != other {
		t.Fatalf("RecordLimits (change) = %+v, %v; want other in force, StdLimits before", st, err)
	}
	// Now the store opened with StdLimits enforces the new ones, read in the charge's
	// transaction: the identity is already above the lowered ε of 0.5.
	if _, err := s.Charge(ctx, ledger.Charge{Account: acme, Key: "b", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.01}}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("Charge over the lowered limit by a store opened with the old ones: error = %v, want ErrBudgetExceeded", err)
	}
	if b := MustBalance(t, s, acme, ledger.RelationRecord); b.Limits != other || b.Remaining != (ledger.Cost{Delta: 2e-6}) {
		t.Errorf("Balance after the change = limits %+v, remaining %+v; want the limits in force, ε 0 remaining", b.Limits, b.Remaining)
	}
	h, err := s.LimitsHistory(ctx, "diabetes")
	if err != nil || len(h) != 2 || h[0].Limits != StdLimits || h[1].Limits != other || h[1].Recorded.Before(h[0].Recorded) {
		t.Errorf("LimitsHistory = %+v, %v; want StdLimits then the change", h, err)
	}
	rep, err := s.Report(ctx, "diabetes", other)
	if err != nil || len(rep.Relations) == 0 {
		t.Fatalf("Report: %v", err)
	}
	for _, rr := range rep.Relations {
		for _, row := range rr.Identities {
			if !row.OverLimit {
				t.Errorf("Report under the lowered limit: %s %s not OverLimit (spent %s)", rr.Relation, row.Identity, row.Spent.Epsilon.RatString())
			}
		}
		if rr.Dataset.OverLimit {
			t.Errorf("Report: dataset %s OverLimit at ε %s under a cap of 7", rr.Relation, rr.Dataset.Spent.Epsilon.RatString())
		}
	}
	if _, found, err := s.RecordedLimits(ctx, "diamonds"); err != nil || found {
		t.Errorf("RecordedLimits(other dataset) = %v, %v; want none", found, err)
	}
	if _, err := s.RecordLimits(ctx, "", false); err == nil {
		t.Errorf("RecordLimits(\"\") error = nil, want an error")
	}
}

func testReport(t *testing.T, loc Location) {
	s := loc(t)(t, bigLimits)
	for i, c := range []ledger.Charge{
		{Account: acme, Key: "p", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-6}},
		{Account: acme, Key: "q", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.1, Delta: 0}},
		{Account: ledger.Account{Dataset: "diabetes", Identity: "globex"}, Key: "q", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.8, Delta: 0}},
		{Account: acme, Key: "j", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 0.5, Delta: 1e-7}},
	} {
		c.Description = string(rune('a' + i))
		MustCharge(t, s, c)
	}
	// The reader's limits, not the store's: identity ε 2, dataset ε 2.5.
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 2.5, Delta: 1e-5}}
	r, err := s.Report(ctx, "diabetes", limits)
	if err != nil {
		t.Fatal(err)
	}
	if r.Limits != limits || len(r.Relations) != 3 {
		t.Fatalf("Report = %+v, want the given limits and 3 relations", r)
	}
	fu := r.Relations[0]
	if fu.Relation != ledger.RelationFeatureUnit || len(fu.Identities) != 2 {
		t.Fatalf("first relation = %+v, want feature-unit with acme and globex", fu)
	}
	eq := func(what string, got *big.Rat, want *big.Rat) {
		t.Helper()
		if got.Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", what, got.RatString(), want.RatString())
		}
	}
	tenth := new(big.Rat).SetFloat64(0.1)
	eight := new(big.Rat).SetFloat64(0.8)
	dsSpent := new(big.Rat).Add(big.NewRat(1, 1), tenth)
	dsSpent.Add(dsSpent, eight)
	eq("feature-unit dataset spent ε", fu.Dataset.Spent.Epsilon, dsSpent)
	dsLeft := new(big.Rat).Sub(big.NewRat(5, 2), dsSpent) // 0.6 − float noise
	eq("feature-unit dataset left ε", fu.Dataset.Left.Epsilon, dsLeft)
	a := fu.Identities[0]
	acmeSpent := new(big.Rat).Add(big.NewRat(1, 1), tenth)
	eq("acme feature-unit spent ε", a.Spent.Epsilon, acmeSpent)
	eq("acme own left ε", a.OwnLeft.Epsilon, new(big.Rat).Sub(big.NewRat(2, 1), acmeSpent))
	// The cap binds: acme's own 0.9 is more than the dataset's 0.6.
	eq("acme left ε (capped)", a.Left.Epsilon, dsLeft)
	eq("acme left δ", a.Left.Delta, new(big.Rat).Sub(new(big.Rat).SetFloat64(1e-5), new(big.Rat).SetFloat64(1e-6)))
	if a.Identity != "acme" || a.Charges != 2 || fu.Identities[1].Identity != "globex" {
		t.Errorf("feature-unit rows = %+v", fu.Identities)
	}
	// Relations never mix: the validation-record row holds the job alone.
	vr := r.Relations[2]
	if vr.Relation != ledger.RelationValidationRecord || len(vr.Identities) != 1 || vr.Dataset.Charges != 1 {
		t.Fatalf("third relation = %+v, want validation-record with acme's job only", vr)
	}
	eq("validation-record spent ε", vr.Dataset.Spent.Epsilon, big.NewRat(1, 2))
	eq("validation-record acme left ε", vr.Identities[0].Left.Epsilon, big.NewRat(3, 2))
	if _, err := s.Report(ctx, "diabetes", ledger.Limits{}); err == nil {
		t.Errorf("Report(zero limits) error = nil, want an error")
	}
}
