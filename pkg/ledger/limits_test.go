package ledger

import (
	"database/sql"
	"math/big"
	"path/filepath"
	"testing"
	"time"
)

func testRecordedLimits(t *testing.T, loc location) {
	open := loc(t)
	s := open(t, stdLimits)
	if _, found, err := s.RecordedLimits(ctx, "diabetes"); err != nil || found {
		t.Fatalf("RecordedLimits before any record = %v, %v; want none", found, err)
	}
	before := time.Now().Add(-time.Second)
	if err := s.RecordLimits(ctx, "diabetes"); err != nil {
		t.Fatalf("RecordLimits: %v", err)
	}
	r, found, err := s.RecordedLimits(ctx, "diabetes")
	if err != nil || !found || r.Limits != stdLimits || r.Recorded.Before(before) {
		t.Errorf("RecordedLimits = %+v, %v, %v; want %+v recorded after %v", r, found, err, stdLimits, before)
	}
	// A later start with other limits replaces the record; other datasets keep none.
	other := Limits{PerIdentity: Cost{3, 2e-6}, Dataset: Cost{7, 1e-5}}
	s2 := open(t, other)
	if err := s2.RecordLimits(ctx, "diabetes"); err != nil {
		t.Fatalf("RecordLimits: %v", err)
	}
	if r, found, err := s.RecordedLimits(ctx, "diabetes"); err != nil || !found || r.Limits != other {
		t.Errorf("RecordedLimits after a second record = %+v, %v, %v; want %+v", r.Limits, found, err, other)
	}
	if _, found, err := s.RecordedLimits(ctx, "diamonds"); err != nil || found {
		t.Errorf("RecordedLimits(other dataset) = %v, %v; want none", found, err)
	}
	if err := s.RecordLimits(ctx, ""); err == nil {
		t.Errorf("RecordLimits(\"\") error = nil, want an error")
	}
}

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

func testReport(t *testing.T, loc location) {
	s := loc(t)(t, bigLimits)
	for i, c := range []Charge{
		{Account: acme, Key: "p", Kind: "projection", Relation: RelationFeatureUnit, Cost: Cost{1, 1e-6}},
		{Account: acme, Key: "q", Kind: "query", Relation: RelationRecord, Cost: Cost{0.1, 0}},
		{Account: Account{"diabetes", "globex"}, Key: "q", Kind: "query", Relation: RelationRecord, Cost: Cost{0.8, 0}},
		{Account: acme, Key: "j", Kind: "job:kusner", Relation: RelationValidationRecord, Cost: Cost{0.5, 1e-7}},
	} {
		c.Description = string(rune('a' + i))
		mustCharge(t, s, c)
	}
	// The reader's limits, not the store's: identity ε 2, dataset ε 2.5.
	limits := Limits{PerIdentity: Cost{2, 1e-5}, Dataset: Cost{2.5, 1e-5}}
	r, err := s.Report(ctx, "diabetes", limits)
	if err != nil {
		t.Fatal(err)
	}
	if r.Limits != limits || len(r.Relations) != 3 {
		t.Fatalf("Report = %+v, want the given limits and 3 relations", r)
	}
	fu := r.Relations[0]
	if fu.Relation != RelationFeatureUnit || len(fu.Identities) != 2 {
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
	if vr.Relation != RelationValidationRecord || len(vr.Identities) != 1 || vr.Dataset.Charges != 1 {
		t.Fatalf("third relation = %+v, want validation-record with acme's job only", vr)
	}
	eq("validation-record spent ε", vr.Dataset.Spent.Epsilon, big.NewRat(1, 2))
	eq("validation-record acme left ε", vr.Identities[0].Left.Epsilon, big.NewRat(3, 2))
	if _, err := s.Report(ctx, "diabetes", Limits{}); err == nil {
		t.Errorf("Report(zero limits) error = nil, want an error")
	}
}

// TestUpgradeV2 opens a version 2 database (version 3 without the limits
// table) and checks that it is upgraded: version 3, the limits table usable,
// the records kept.
func TestSQLiteUpgradeV2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSQLite(path, stdLimits)
	if err != nil {
		t.Fatal(err)
	}
	mustCharge(t, s, Charge{Account: acme, Key: "q", Kind: "query", Relation: RelationRecord, Cost: Cost{0.25, 0}})
	s.Close()
	rawSQLite(t, path, `DROP TABLE limits`, `UPDATE schema_version SET version = 2`)
	s, err = OpenSQLite(path, stdLimits)
	if err != nil {
		t.Fatalf("OpenSQLite(version 2): %v", err)
	}
	defer s.Close()
	checkUpgradedV2(t, s)
	var version int
	rawSQLiteQuery(t, path, `SELECT version FROM schema_version`, &version)
	if version != schemaVersion {
		t.Errorf("schema version after upgrade = %d, want %d", version, schemaVersion)
	}
}

func TestPostgresUpgradeV2(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	s, err := OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, stdLimits)
	if err != nil {
		t.Fatal(err)
	}
	mustCharge(t, s, Charge{Account: acme, Key: "q", Kind: "query", Relation: RelationRecord, Cost: Cost{0.25, 0}})
	s.Close()
	for _, q := range []string{`DROP TABLE "` + schema + `".limits`, `UPDATE "` + schema + `".schema_version SET version = 2`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err = OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, stdLimits)
	if err != nil {
		t.Fatalf("OpenPostgres(version 2): %v", err)
	}
	defer s.Close()
	checkUpgradedV2(t, s)
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM "`+schema+`".schema_version`).Scan(&version); err != nil || version != schemaVersion {
		t.Errorf("schema version after upgrade = %d, %v; want %d", version, err, schemaVersion)
	}
}

func checkUpgradedV2(t *testing.T, s Store) {
	t.Helper()
	if b := mustBalance(t, s, acme, RelationRecord); b.Charges != 1 || b.Spent != (Cost{0.25, 0}) {
		t.Errorf("balance after upgrade = %+v, want the version 2 charge", b)
	}
	if _, found, err := s.RecordedLimits(ctx, "diabetes"); err != nil || found {
		t.Errorf("RecordedLimits after upgrade = %v, %v; want none", found, err)
	}
	if err := s.RecordLimits(ctx, "diabetes"); err != nil {
		t.Fatalf("RecordLimits after upgrade: %v", err)
	}
	if r, found, err := s.RecordedLimits(ctx, "diabetes"); err != nil || !found || r.Limits != stdLimits {
		t.Errorf("RecordedLimits = %+v, %v, %v; want %+v", r.Limits, found, err, stdLimits)
	}
}

func TestFormatSpentAndRemaining(t *testing.T) {
	sum := func(xs ...float64) *big.Rat {
		r := new(big.Rat)
		for _, x := range xs {
			r.Add(r, new(big.Rat).SetFloat64(x))
		}
		return r
	}
	// 2 + 0.611 as float64 sum: 2.6109999999999998 once rounded to float64.
	noisy := sum(1.9, 0.711)
	if f, _ := noisy.Float64(); f == 2.611 {
		t.Fatalf("fixture: %v is not a noisy sum", f)
	}
	for _, tt := range []struct {
		name string
		got  string
		want string
	}{
		{"spent noise", FormatSpent(sum(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)), "1"},
		{"spent 1.9", FormatSpent(sum(1.8, 0.1)), "1.9"},
		{"spent tiny", FormatSpent(sum(1e-6, 1e-7)), "1.1e-06"},
		{"spent zero", FormatSpent(new(big.Rat)), "0"},
		{"spent 7 digits", FormatSpent(rat("1234567/1000")), "1234.57"},
		{"remaining noise", FormatRemaining(noisy, 4), "2.611"},
		// 4 − 1.9 − 0.1 − …: a remainder just below a round number within the slack.
		{"remaining below 0.6", FormatRemaining(new(big.Rat).Sub(big.NewRat(5, 2), sum(1, 0.1, 0.8)), 2.5), "0.6"},
		// A genuine 7th digit is cut, never rounded up: 1.2345678 → 1.23456.
		{"remaining toward zero", FormatRemaining(rat("12345678/10000000"), 2), "1.23456"},
		{"remaining exact", FormatRemaining(big.NewRat(1, 4), 1), "0.25"},
		{"remaining none", FormatRemaining(new(big.Rat), 1), "0"},
		{"remaining negative", FormatRemaining(big.NewRat(-1, 4), 1), "0"},
		{"remaining large", FormatRemaining(rat("99999999/10"), 1e7), "9.99999e+06"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
	}
	// Whatever FormatRemaining prints, a charge of it fits: exhaustive over remainders
	// made of decimal charges.
	for i := 1; i < 200; i++ {
		limit := 3.0
		spent := new(big.Rat)
		for k := 0; k < i; k++ {
			spent.Add(spent, new(big.Rat).SetFloat64(0.013))
		}
		rem := new(big.Rat).Sub(exact(limit), spent)
		shown := rat(FormatRemaining(rem, limit))
		var tt total
		tt.eps.Set(spent)
		f, _ := shown.Float64()
		if !tt.fits(Cost{Epsilon: f}, Cost{Epsilon: limit}) && rem.Sign() > 0 {
			t.Fatalf("after %d charges of 0.013: shown remainder %s does not fit", i, shown.FloatString(20))
		}
	}
}

func rawSQLiteQuery(t *testing.T, path, q string, dest ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(q).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
