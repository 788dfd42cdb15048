package ledger

import (
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tables of schema version 1, as that version created them.
var (
	sqliteV1DDL = []string{
		`CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
		`CREATE TABLE entries (
			seq INTEGER PRIMARY KEY AUTOINCREMENT,
			dataset TEXT NOT NULL, identity TEXT NOT NULL, entry_key TEXT NOT NULL,
			kind TEXT NOT NULL, description TEXT NOT NULL,
			epsilon REAL NOT NULL CHECK (epsilon >= 0),
			delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
			result BLOB, created_ns INTEGER NOT NULL,
			UNIQUE (dataset, identity, entry_key))`,
		`CREATE INDEX entries_dataset_seq ON entries (dataset, seq)`,
		`CREATE TABLE totals (
			dataset TEXT NOT NULL, identity TEXT NOT NULL,
			epsilon TEXT NOT NULL, delta TEXT NOT NULL, charges INTEGER NOT NULL,
			PRIMARY KEY (dataset, identity))`,
	}
	postgresV1DDL = []string{
		`CREATE SCHEMA {schema}`,
		`CREATE TABLE {t}schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`,
		`CREATE TABLE {t}entries (
			seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			dataset TEXT NOT NULL, identity TEXT NOT NULL, entry_key TEXT NOT NULL,
			kind TEXT NOT NULL, description TEXT NOT NULL,
			epsilon DOUBLE PRECISION NOT NULL CHECK (epsilon >= 0),
			delta DOUBLE PRECISION NOT NULL CHECK (delta >= 0 AND delta < 1),
			result BYTEA, created_ns BIGINT NOT NULL,
			UNIQUE (dataset, identity, entry_key))`,
		`CREATE INDEX entries_dataset_seq ON {t}entries (dataset, seq)`,
		`CREATE TABLE {t}totals (
			dataset TEXT NOT NULL, identity TEXT NOT NULL,
			epsilon TEXT NOT NULL, delta TEXT NOT NULL, charges BIGINT NOT NULL,
			PRIMARY KEY (dataset, identity))`,
	}
)

// v1Entry is a record of the version 1 fixture and the relation the
// upgrade must give it.
type v1Entry struct {
	dataset, identity, key, kind string
	cost                         Cost
	result                       []byte
	want                         Relation
}

var v1Entries = []v1Entry{
	{"d1", "acme", "p1", "projection", Cost{0.5, 1e-6}, []byte("Z-bytes"), RelationFeatureUnit},
	{"d1", "_curator", "pending/0", "pending", Cost{}, nil, RelationRecord},
	{"d1", "_curator", "evaluation/0", "evaluation", Cost{}, []byte("1.5"), RelationRecord},
	{"d1", "acme", "q1", "query", Cost{0.1, 0}, []byte("2.5"), RelationRecord},
	{"d1", "acme", "qf", "query-failure", Cost{0.1, 0}, nil, RelationRecord},
	{"d1", "acme", "job/k", "job:kusner", Cost{0.25, 1e-7}, []byte("{}"), RelationValidationRecord},
	{"d1", "globex", "job/d", "job:dphypo", Cost{0.3, 1e-6}, nil, RelationTrainingAddRemove},
	{"d1", "acme", "m", "mystery", Cost{0.05, 0}, nil, RelationRecord},
	{"d1", "globex", "p", "projection", Cost{0.2, 0}, nil, RelationFeatureUnit},
	{"d2", "acme", "q", "query", Cost{0.7, 0}, nil, RelationRecord},
}

// v1Created is the creation time of the i-th fixture record.
func v1Created(i int) int64 { return time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC).UnixNano() }

// fillV1 writes the version 1 fixture, with version 1's totals (summed
// across relations), through exec; q names tables with {t}.
func fillV1(t *testing.T, exec func(q string, args ...any) error) {
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
			a.dataset, a.identity, encodeRat(&sums[a].t.eps), encodeRat(&sums[a].t.delta), sums[a].n); err != nil {
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
func wantV1Balances(dataset string, limits Limits) []Balance {
	type key struct {
		identity string
		rel      Relation
	}
	id := map[key]*counted{}
	ds := map[Relation]*total{}
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
		for _, rel := range Relations {
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
	var out []Balance
	for _, identity := range identities {
		for _, rel := range Relations {
			c := id[key{identity, rel}]
			if c == nil {
				continue
			}
			out = append(out, Balance{
				Account: Account{dataset, identity}, Relation: rel,
				Spent: c.t.cost(), Remaining: c.t.remaining(limits.PerIdentity),
				DatasetSpent: ds[rel].cost(), DatasetRemaining: ds[rel].remaining(limits.Dataset),
				Charges: int(c.n), Limits: limits,
			})
		}
	}
	return out
}

// checkUpgradedV1 checks a store opened on the upgraded fixture.
func checkUpgradedV1(t *testing.T, s Store, limits Limits) {
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
		r, found, err := s.Get(ctx, Account{e.dataset, e.identity}, e.key)
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
	fu := mustBalance(t, s, Account{"d1", "acme"}, RelationFeatureUnit)
	rec := mustBalance(t, s, Account{"d1", "acme"}, RelationRecord)
	vr := mustBalance(t, s, Account{"d1", "acme"}, RelationValidationRecord)
	tar := mustBalance(t, s, Account{"d1", "acme"}, RelationTrainingAddRemove)
	sum := func(xs ...float64) float64 {
		r := new(big.Rat)
		for _, x := range xs {
			r.Add(r, new(big.Rat).SetFloat64(x))
		}
		f, _ := r.Float64()
		return f
	}
	if fu.Charges != 4 || fu.Spent != (Cost{sum(0.5, 0.1, 0.1, 0.05), 1e-6}) {
		t.Errorf("acme feature-unit = %+v, %d charges; want ε=0.75, δ=1e-6, 4 charges", fu.Spent, fu.Charges)
	}
	if rec.Charges != 3 || rec.Spent != (Cost{sum(0.1, 0.1, 0.05), 0}) {
		t.Errorf("acme record = %+v, %d charges; want ε=0.25, 3 charges", rec.Spent, rec.Charges)
	}
	if vr.Charges != 1 || vr.Spent != (Cost{0.25, 1e-7}) || tar.Charges != 0 || tar.Spent != (Cost{}) || tar.DatasetSpent != (Cost{0.3, 1e-6}) {
		t.Errorf("acme validation-record = %+v (%d), training-add-remove = %+v (%d), dataset %+v; want {0.25 1e-07} (1), nothing, dataset {0.3 1e-06}",
			vr.Spent, vr.Charges, tar.Spent, tar.Charges, tar.DatasetSpent)
	}
}

// checkUpgradedV1Writes charges the upgraded store: old keys replay under
// their derived relation, and new records follow the old ones.
func checkUpgradedV1Writes(t *testing.T, s Store) {
	t.Helper()
	p1 := Charge{Account: Account{"d1", "acme"}, Key: "p1", Kind: "projection", Relation: RelationFeatureUnit, Cost: Cost{0.5, 1e-6}}
	if r, err := s.Charge(ctx, p1); err != nil || !r.Replayed || string(r.Result) != "Z-bytes" {
		t.Errorf("replay of v1 projection = %q, replayed %v, %v; want the stored result", r.Result, r.Replayed, err)
	}
	p1.Relation = RelationRecord
	if _, err := s.Charge(ctx, p1); !errors.Is(err, ErrKeyConflict) {
		t.Errorf("replay of v1 projection as record error = %v, want ErrKeyConflict", err)
	}
	mustCharge(t, s, Charge{Account: Account{"d1", "acme"}, Key: "new", Kind: "query", Relation: RelationRecord, Cost: Cost{0.125, 0}})
	es := mustEntries(t, s, "d1")
	if last := es[len(es)-1]; last.Key != "new" || last.Relation != RelationRecord {
		t.Errorf("last entry after a new charge = %s (%s), want new (record)", last.Key, last.Relation)
	}
	if b := mustBalance(t, s, Account{"d1", "acme"}, RelationRecord); b.Charges != 4 {
		t.Errorf("acme record charges after a new charge = %d, want 4", b.Charges)
	}
}

func TestSQLiteUpgradeV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range sqliteV1DDL {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	fillV1(t, func(q string, args ...any) error {
		_, err := db.Exec(strings.ReplaceAll(q, "{t}", ""), args...)
		return err
	})
	db.Close()

	limits := Limits{PerIdentity: Cost{1, 1e-5}, Dataset: Cost{2, 1e-4}}
	s, err := OpenSQLite(path, limits)
	if err != nil {
		t.Fatalf("OpenSQLite(version 1) error: %v", err)
	}
	checkUpgradedV1(t, s, limits)
	checkUpgradedV1Writes(t, s)
	s.Close()

	// The upgrade is recorded and not repeated; the schema is version 2's.
	var version int
	var nullable, sequence int64
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != schemaVersion {
		t.Errorf("schema version after upgrade = %d, %v; want %d", version, err, schemaVersion)
	}
	if err := db.QueryRow(`SELECT "notnull" FROM pragma_table_info('entries') WHERE name = 'relation'`).Scan(&nullable); err != nil || nullable != 1 {
		t.Errorf("entries.relation NOT NULL = %d, %v; want 1", nullable, err)
	}
	if err := db.QueryRow(`SELECT seq FROM sqlite_sequence WHERE name = 'entries'`).Scan(&sequence); err != nil || sequence != int64(len(v1Entries)+1) {
		t.Errorf("entries sequence after upgrade and one charge = %d, %v; want %d", sequence, err, len(v1Entries)+1)
	}
	s, err = OpenSQLite(path, limits)
	if err != nil {
		t.Fatalf("reopen error: %v", err)
	}
	defer s.Close()
	if b := mustBalance(t, s, Account{"d1", "acme"}, RelationRecord); b.Charges != 4 {
		t.Errorf("after reopen acme record charges = %d, want 4", b.Charges)
	}
}

func TestPostgresUpgradeV1(t *testing.T) {
	conn := requirePostgres(t)
	schema := randomSchema(t, conn)
	quoted := `"` + schema + `"`
	exec := func(q string, args ...any) error {
		q = strings.ReplaceAll(strings.ReplaceAll(q, "{schema}", quoted), "{t}", quoted+".")
		var b strings.Builder
		n := 0
		for _, r := range q {
			if r == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(r)
		}
		_, err := conn.Exec(ctx, b.String(), args...)
		return err
	}
	for _, q := range postgresV1DDL {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	fillV1(t, exec)

	limits := Limits{PerIdentity: Cost{1, 1e-5}, Dataset: Cost{2, 1e-4}}
	s, err := OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, limits)
	if err != nil {
		t.Fatalf("OpenPostgres(version 1) error: %v", err)
	}
	checkUpgradedV1(t, s, limits)
	checkUpgradedV1Writes(t, s)
	s.Close()

	var version int
	var nullable string
	if err := conn.QueryRow(ctx, `SELECT version FROM `+quoted+`.schema_version`).Scan(&version); err != nil || version != schemaVersion {
		t.Errorf("schema version after upgrade = %d, %v; want %d", version, err, schemaVersion)
	}
	if err := conn.QueryRow(ctx, `SELECT is_nullable FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'entries' AND column_name = 'relation'`, schema).Scan(&nullable); err != nil || nullable != "NO" {
		t.Errorf("entries.relation is_nullable = %q, %v; want NO", nullable, err)
	}
	s, err = OpenPostgres(ctx, testDSN(), PostgresOptions{Schema: schema}, limits)
	if err != nil {
		t.Fatalf("reopen error: %v", err)
	}
	defer s.Close()
	if b := mustBalance(t, s, Account{"d1", "acme"}, RelationRecord); b.Charges != 4 {
		t.Errorf("after reopen acme record charges = %d, want 4", b.Charges)
	}
}

func TestRelationOfV1Kind(t *testing.T) {
	for kind, want := range map[string]Relation{
		"projection": RelationFeatureUnit, "query": RelationRecord, "query-failure": RelationRecord,
		"evaluation": RelationRecord, "pending": RelationRecord,
		"job:kusner": RelationValidationRecord, "job:kusner-v2": RelationValidationRecord,
		"job:dphypo": RelationTrainingAddRemove,
		"kusner":     RelationRecord, "Projection": RelationRecord, "job:other": RelationRecord, "": RelationRecord,
	} {
		if got := relationOfV1Kind(kind); got != want {
			t.Errorf("relationOfV1Kind(%q) = %s, want %s", kind, got, want)
		}
	}
}
