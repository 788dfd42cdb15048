package ledger

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// QueryRow runs sql on q and scans its first row into dest; found is false
// if there is none. Engines outside this package (pgledger) use it too.
func QueryRow(ctx context.Context, q Querier, sql string, args []any, dest ...any) (found bool, err error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	return true, nil
}

// store implements Store over an Engine.
type store struct {
	e      Engine
	limits Limits
	d      Dialect

	qGet, qTotals, qInsert, qUpsert, qSetResult, qEntries string
	qRecordLimits, qRecordedLimits                        string
}

// The statements of the version 1 upgrade common to both engines.
const (
	qV1Kinds       = `SELECT DISTINCT kind FROM {t}entries ORDER BY kind`
	qV1SetRelation = `UPDATE {t}entries SET relation = ? WHERE kind = ?`
	qV1Costs       = `SELECT dataset, identity, relation, epsilon, delta FROM {t}entries ORDER BY seq`
	qV1Total       = `INSERT INTO {t}totals (dataset, identity, relation, epsilon, delta, charges) VALUES (?, ?, ?, ?, ?, ?)`
)

func newStore(e Engine, limits Limits, d Dialect) *store {
	s := &store{e: e, limits: limits, d: d}
	s.qGet = s.d.SQL(`SELECT kind, relation, description, epsilon, delta, result, created_ns FROM {t}entries
		WHERE dataset = ? AND identity = ? AND entry_key = ?`)
	s.qTotals = s.d.SQL(`SELECT identity, relation, epsilon, delta, charges FROM {t}totals WHERE dataset = ?`)
	s.qInsert = s.d.SQL(`INSERT INTO {t}entries
		(dataset, identity, entry_key, kind, relation, description, epsilon, delta, result, created_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.qUpsert = s.d.SQL(`INSERT INTO {t}totals AS t (dataset, identity, relation, epsilon, delta, charges)
		VALUES (?, ?, ?, ?, ?, 1)
		ON CONFLICT (dataset, identity, relation) DO UPDATE
		SET epsilon = excluded.epsilon, delta = excluded.delta, charges = t.charges + 1`)
	s.qSetResult = s.d.SQL(`UPDATE {t}entries SET result = ? WHERE dataset = ? AND identity = ? AND entry_key = ?`)
	s.qEntries = s.d.SQL(`SELECT identity, entry_key, kind, relation, description, epsilon, delta,
		COALESCE(length(result), 0), created_ns FROM {t}entries WHERE dataset = ? ORDER BY seq`)
	s.qRecordLimits = s.d.SQL(`INSERT INTO {t}limits
		(dataset, identity_epsilon, identity_delta, dataset_epsilon, dataset_delta, recorded_ns)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset) DO UPDATE SET identity_epsilon = excluded.identity_epsilon,
		identity_delta = excluded.identity_delta, dataset_epsilon = excluded.dataset_epsilon,
		dataset_delta = excluded.dataset_delta, recorded_ns = excluded.recorded_ns`)
	s.qRecordedLimits = s.d.SQL(`SELECT identity_epsilon, identity_delta, dataset_epsilon, dataset_delta, recorded_ns
		FROM {t}limits WHERE dataset = ?`)
	return s
}

// migrate creates the tables if needed, upgrades a version 1 database to
// version 2 and checks the schema version, in one transaction: a failed
// upgrade leaves the database as it was.
func (s *store) migrate(ctx context.Context, ddl SchemaDDL) error {
	run := func(q Querier, stmts []string) error {
		for _, stmt := range stmts {
			if _, err := q.Exec(ctx, s.d.SQL(stmt)); err != nil {
				return err
			}
		}
		return nil
	}
	err := s.e.Write(ctx, Lock{Migrate: true}, func(q Querier) error {
		if err := run(q, ddl.Base); err != nil {
			return err
		}
		var v int64
		found, err := QueryRow(ctx, q, s.d.SQL(`SELECT version FROM {t}schema_version WHERE id = 1`), nil, &v)
		switch {
		case err != nil:
			return err
		case !found:
			if err := run(q, ddl.Tables); err != nil {
				return err
			}
			_, err := q.Exec(ctx, s.d.SQL(`INSERT INTO {t}schema_version (id, version) VALUES (1, ?)`), int64(SchemaVersion))
			return err
		case v > SchemaVersion:
			return fmt.Errorf("database schema version %d is newer than this program supports (%d)", v, SchemaVersion)
		case v < 1:
			return fmt.Errorf("database schema version %d is invalid", v)
		case v < SchemaVersion:
			if v == 1 {
				if err := s.upgradeV1(ctx, q, ddl, run); err != nil {
					return fmt.Errorf("upgrade from schema version 1: %w", err)
				}
			}
			// Version 2 to 3 only adds tables (the limits), which ddl.Tables
			// creates if missing.
			if err := run(q, ddl.Tables); err != nil {
				return fmt.Errorf("upgrade from schema version %d: %w", v, err)
			}
			_, err := q.Exec(ctx, s.d.SQL(`UPDATE {t}schema_version SET version = ? WHERE id = 1`), int64(SchemaVersion))
			return err
		}
		return run(q, ddl.Tables)
	})
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}

// upgradeV1 turns a version 1 database into version 2 within the migrating
// transaction. Each record is given the relation its kind is stated for
// (relationOfV1Kind), and the totals, which version 1 summed across
// relations, are recomputed exactly from the records, per (dataset,
// identity, relation). The records themselves (keys, costs, results, order)
// are kept as they are.
func (s *store) upgradeV1(ctx context.Context, q Querier, ddl SchemaDDL, run func(Querier, []string) error) error {
	if err := run(q, ddl.FromV1); err != nil {
		return err
	}
	if err := run(q, ddl.Tables); err != nil {
		return err
	}
	var kinds []string
	rows, err := q.Query(ctx, s.d.SQL(qV1Kinds))
	if err != nil {
		return err
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		kinds = append(kinds, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range kinds {
		if _, err := q.Exec(ctx, s.d.SQL(qV1SetRelation), string(relationOfV1Kind(k)), k); err != nil {
			return err
		}
	}
	if err := run(q, ddl.FromV1Done); err != nil {
		return err
	}

	type key struct {
		dataset, identity string
		rel               Relation
	}
	sums := make(map[key]*counted)
	var order []key
	rows, err = q.Query(ctx, s.d.SQL(qV1Costs))
	if err != nil {
		return err
	}
	for rows.Next() {
		var k key
		var c Cost
		if err := rows.Scan(&k.dataset, &k.identity, &k.rel, &c.Epsilon, &c.Delta); err != nil {
			rows.Close()
			return err
		}
		if err := checkStoredCost(c); err != nil {
			rows.Close()
			return err
		}
		sum := sums[k]
		if sum == nil {
			sum = new(counted)
			sums[k] = sum
			order = append(order, k)
		}
		sum.t.add(c)
		sum.n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range order {
		sum := sums[k]
		if _, err := q.Exec(ctx, s.d.SQL(qV1Total), k.dataset, k.identity, string(k.rel),
			encodeRat(&sum.t.eps), encodeRat(&sum.t.delta), sum.n); err != nil {
			return err
		}
	}
	return nil
}

func (s *store) Limits() Limits { return s.limits }

func (s *store) Close() error {
	if err := s.e.Close(); err != nil {
		return fmt.Errorf("ledger: close: %w", err)
	}
	return nil
}

func (s *store) Charge(ctx context.Context, c Charge) (Receipt, error) {
	rs, err := s.chargeAll(ctx, []Charge{c})
	if err != nil {
		return Receipt{}, wrap("charge", err)
	}
	return rs[0], nil
}

func (s *store) ChargeAll(ctx context.Context, cs []Charge) ([]Receipt, error) {
	rs, err := s.chargeAll(ctx, cs)
	if err != nil {
		return nil, wrap("charge all", err)
	}
	return rs, nil
}

// chargeAll is Charge and ChargeAll: one transaction that replays each charge
// whose key is recorded, checks the others' costs together against both
// limits of every relation they count towards, and records them all or none.
func (s *store) chargeAll(ctx context.Context, cs []Charge) ([]Receipt, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	type idKey struct{ identity, key string }
	seen := make(map[idKey]bool, len(cs))
	cs = slices.Clone(cs)
	for i := range cs {
		c := &cs[i]
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if c.Dataset != cs[0].Dataset {
			return nil, fmt.Errorf("ledger: charges of one transaction must be on one dataset, got %q and %q", cs[0].Dataset, c.Dataset)
		}
		k := idKey{c.Identity, c.Key}
		if seen[k] {
			return nil, fmt.Errorf("ledger: key %q of identity %q is charged twice in one transaction", c.Key, c.Identity)
		}
		seen[k] = true
		c.Cost = c.Cost.normalise()
		c.Result = bytes.Clone(c.Result)
	}
	out := make([]Receipt, len(cs))
	err := s.e.Write(ctx, Lock{Dataset: cs[0].Dataset}, func(q Querier) error {
		// Replays, each on its own.
		var fresh []int
		for i, c := range cs {
			stored, found, err := s.get(ctx, q, c.Account, c.Key)
			if err != nil {
				return err
			}
			if !found {
				fresh = append(fresh, i)
				continue
			}
			if stored.Kind != c.Kind || stored.Relation != c.Relation || stored.Cost != c.Cost {
				return fmt.Errorf("ledger: key %q of identity %q on dataset %q holds %s (%s) ε=%g, δ=%g; request is %s (%s) ε=%g, δ=%g: %w",
					c.Key, c.Identity, c.Dataset, stored.Kind, stored.Relation, stored.Cost.Epsilon, stored.Cost.Delta,
					c.Kind, c.Relation, c.Cost.Epsilon, c.Cost.Delta, ErrKeyConflict)
			}
			stored.Replayed = true
			out[i] = stored
		}
		if len(fresh) == 0 {
			return nil
		}

		// Check both limits, in every relation a new charge counts towards,
		// against exact effective totals plus the exact sum of the new charges
		// that count towards it: every identity's first, then the dataset's.
		dt, err := s.totals(ctx, q, cs[0].Dataset)
		if err != nil {
			return err
		}
		var (
			rels       []Relation // in the order the charges name them
			identities []string   // in the order of the charges
			idSum      = make(map[string]map[Relation]*total)
			dsSum      = make(map[Relation]*total)
		)
		for _, i := range fresh {
			c := cs[i]
			if idSum[c.Identity] == nil {
				idSum[c.Identity] = make(map[Relation]*total)
				identities = append(identities, c.Identity)
			}
			for _, r := range c.Relation.CountsTowards() {
				if !slices.Contains(rels, r) {
					rels = append(rels, r)
				}
				if idSum[c.Identity][r] == nil {
					idSum[c.Identity][r] = new(total)
				}
				idSum[c.Identity][r].add(c.Cost)
				if dsSum[r] == nil {
					dsSum[r] = new(total)
				}
				dsSum[r].add(c.Cost)
			}
		}
		for _, id := range identities {
			for _, r := range rels {
				add := idSum[id][r]
				if add == nil {
					continue
				}
				if t, _ := dt.effective(id, r); !t.fitsTotal(add, s.limits.PerIdentity) {
					return &BudgetError{Scope: ScopeIdentity, Account: Account{Dataset: cs[0].Dataset, Identity: id}, Relation: r,
						Requested: add.cost(), Remaining: t.remaining(s.limits.PerIdentity), Limit: s.limits.PerIdentity}
				}
			}
		}
		for _, r := range rels {
			if t, _ := dt.datasetEffective(r); !t.fitsTotal(dsSum[r], s.limits.Dataset) {
				return &BudgetError{Scope: ScopeDataset, Account: cs[fresh[0]].Account, Relation: r,
					Requested: dsSum[r].cost(), Remaining: t.remaining(s.limits.Dataset), Limit: s.limits.Dataset}
			}
		}

		// Record each, and add its cost to the total of its own relation only
		// (the implied relations' totals are sums over relations, formed when
		// read).
		type idRel struct {
			identity string
			rel      Relation
		}
		own := make(map[idRel]*total)
		createdNS := time.Now().UnixNano()
		for _, i := range fresh {
			c := cs[i]
			if _, err := q.Exec(ctx, s.qInsert, c.Dataset, c.Identity, c.Key, c.Kind, string(c.Relation), c.Description,
				c.Cost.Epsilon, c.Cost.Delta, c.Result, createdNS); err != nil {
				return fmt.Errorf("ledger: charge: record: %w", err)
			}
			k := idRel{c.Identity, c.Relation}
			t := own[k]
			if t == nil {
				t = new(total)
				if o := dt.own(c.Identity, c.Relation); o != nil {
					t.addTotal(&o.t)
				}
				own[k] = t
			}
			t.add(c.Cost)
			if _, err := q.Exec(ctx, s.qUpsert, c.Dataset, c.Identity, string(c.Relation),
				encodeRat(&t.eps), encodeRat(&t.delta)); err != nil {
				return fmt.Errorf("ledger: charge: update totals: %w", err)
			}
			out[i] = Receipt{
				Account: c.Account, Key: c.Key, Kind: c.Kind, Relation: c.Relation, Description: c.Description,
				Cost: c.Cost, Result: c.Result, ResultSize: len(c.Result),
				Created: time.Unix(0, createdNS).UTC(),
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// wrap gives err the package prefix unless it already has it.
func wrap(op string, err error) error {
	if strings.HasPrefix(err.Error(), "ledger: ") {
		return err
	}
	return fmt.Errorf("ledger: %s: %w", op, err)
}

func (s *store) get(ctx context.Context, q Querier, a Account, key string) (Receipt, bool, error) {
	r := Receipt{Account: a, Key: key}
	var createdNS int64
	found, err := QueryRow(ctx, q, s.qGet, []any{a.Dataset, a.Identity, key},
		&r.Kind, &r.Relation, &r.Description, &r.Cost.Epsilon, &r.Cost.Delta, &r.Result, &createdNS)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("ledger: read record: %w", err)
	}
	if !found {
		return Receipt{}, false, nil
	}
	if err := checkStoredCost(r.Cost); err != nil {
		return Receipt{}, false, err
	}
	if err := checkStoredRelation(r.Relation); err != nil {
		return Receipt{}, false, err
	}
	r.ResultSize = len(r.Result)
	r.Created = time.Unix(0, createdNS).UTC()
	return r, true, nil
}

func checkStoredCost(c Cost) error {
	if c.Validate() != nil {
		return fmt.Errorf("ledger: corrupt stored cost ε=%g, δ=%g", c.Epsilon, c.Delta)
	}
	return nil
}

func checkStoredRelation(r Relation) error {
	if r.Validate() != nil {
		return fmt.Errorf("ledger: corrupt stored relation %q", string(r))
	}
	return nil
}

// counted is an exact total and the number of records it sums.
type counted struct {
	t total
	n int64
}

// datasetTotals are the stored totals of one dataset: per identity and
// relation, the exact sum of the records charged under that relation alone.
// The effective totals a limit is checked against add the relations that
// imply the one checked (Relation.Implies).
type datasetTotals struct {
	identities []string // with any record, sorted
	raw        map[string]map[Relation]*counted
}

// own returns the stored total of identity under r, nil if there is none.
func (d *datasetTotals) own(identity string, r Relation) *counted { return d.raw[identity][r] }

// effective returns the total of identity's records whose relation implies
// s, and their number.
func (d *datasetTotals) effective(identity string, s Relation) (*total, int64) {
	t := new(total)
	var n int64
	for r, c := range d.raw[identity] {
		if r.Implies(s) {
			t.addTotal(&c.t)
			n += c.n
		}
	}
	return t, n
}

// datasetEffective returns the total, over all identities, of the records
// whose relation implies s, and their number.
func (d *datasetTotals) datasetEffective(s Relation) (*total, int64) {
	t := new(total)
	var n int64
	for _, id := range d.identities {
		u, m := d.effective(id, s)
		t.addTotal(u)
		n += m
	}
	return t, n
}

// totals reads the exact stored totals of a dataset.
func (s *store) totals(ctx context.Context, q Querier, dataset string) (*datasetTotals, error) {
	rows, err := q.Query(ctx, s.qTotals, dataset)
	if err != nil {
		return nil, fmt.Errorf("ledger: read totals: %w", err)
	}
	defer rows.Close()
	d := &datasetTotals{raw: make(map[string]map[Relation]*counted)}
	for rows.Next() {
		var identity, e, dl string
		var r Relation
		c := new(counted)
		if err := rows.Scan(&identity, &r, &e, &dl, &c.n); err != nil {
			return nil, fmt.Errorf("ledger: read totals: %w", err)
		}
		if err := checkStoredRelation(r); err != nil {
			return nil, err
		}
		er, err := decodeRat(e)
		if err != nil {
			return nil, err
		}
		dr, err := decodeRat(dl)
		if err != nil {
			return nil, err
		}
		if c.n < 0 {
			return nil, fmt.Errorf("ledger: corrupt stored number of charges %d", c.n)
		}
		c.t.eps.Set(er)
		c.t.delta.Set(dr)
		m := d.raw[identity]
		if m == nil {
			m = make(map[Relation]*counted)
			d.raw[identity] = m
			d.identities = append(d.identities, identity)
		}
		m[r] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read totals: %w", err)
	}
	sort.Strings(d.identities)
	return d, nil
}

func (s *store) SetResult(ctx context.Context, a Account, key string, result []byte) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if err := checkName("key", key); err != nil {
		return err
	}
	if result == nil {
		result = []byte{} // an attached empty result is still a result
	}
	err := s.e.Write(ctx, Lock{}, func(q Querier) error {
		n, err := q.Exec(ctx, s.qSetResult, result, a.Dataset, a.Identity, key)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("ledger: set result: key %q of identity %q on dataset %q: %w", key, a.Identity, a.Dataset, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return wrap("set result", err)
	}
	return nil
}

func (s *store) Get(ctx context.Context, a Account, key string) (Receipt, bool, error) {
	if err := a.Validate(); err != nil {
		return Receipt{}, false, err
	}
	if err := checkName("key", key); err != nil {
		return Receipt{}, false, err
	}
	var r Receipt
	var found bool
	err := s.e.Read(ctx, func(q Querier) error {
		var err error
		r, found, err = s.get(ctx, q, a, key)
		return err
	})
	if err != nil {
		return Receipt{}, false, wrap("get", err)
	}
	return r, found, nil
}

// readTotals reads the stored totals of a dataset outside a transaction.
func (s *store) readTotals(ctx context.Context, dataset string) (*datasetTotals, error) {
	var d *datasetTotals
	err := s.e.Read(ctx, func(q Querier) error {
		var err error
		d, err = s.totals(ctx, q, dataset)
		return err
	})
	return d, err
}

func (s *store) Balance(ctx context.Context, a Account, rel Relation) (Balance, error) {
	if err := a.Validate(); err != nil {
		return Balance{}, err
	}
	if err := rel.Validate(); err != nil {
		return Balance{}, err
	}
	d, err := s.readTotals(ctx, a.Dataset)
	if err != nil {
		return Balance{}, wrap("balance", err)
	}
	b, _ := s.balance(d, a, rel)
	return b, nil
}

// balance returns a's effective balance under rel, and the number of
// records counting towards it.
func (s *store) balance(d *datasetTotals, a Account, rel Relation) (Balance, int64) {
	ds, _ := d.datasetEffective(rel)
	return s.balanceWith(d, ds, a, rel)
}

// balanceWith is balance with the dataset's effective total under rel already
// computed (ds), so that a listing of every identity sums the dataset once per
// relation rather than once per identity.
func (s *store) balanceWith(d *datasetTotals, ds *total, a Account, rel Relation) (Balance, int64) {
	id, n := d.effective(a.Identity, rel)
	return Balance{
		Account:          a,
		Relation:         rel,
		Spent:            id.cost(),
		Remaining:        id.remaining(s.limits.PerIdentity),
		DatasetSpent:     ds.cost(),
		DatasetRemaining: ds.remaining(s.limits.Dataset),
		Charges:          int(n),
		Limits:           s.limits,
	}, n
}

func (s *store) Accounts(ctx context.Context, dataset string) ([]Balance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	d, err := s.readTotals(ctx, dataset)
	if err != nil {
		return nil, wrap("accounts", err)
	}
	ds := make(map[Relation]*total, len(Relations))
	for _, rel := range Relations {
		ds[rel], _ = d.datasetEffective(rel)
	}
	var out []Balance
	for _, id := range d.identities {
		for _, rel := range Relations {
			if b, n := s.balanceWith(d, ds[rel], Account{Dataset: dataset, Identity: id}, rel); n > 0 {
				out = append(out, b)
			}
		}
	}
	return out, nil
}

func (s *store) DatasetTotals(ctx context.Context, dataset string) ([]DatasetBalance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	d, err := s.readTotals(ctx, dataset)
	if err != nil {
		return nil, wrap("dataset totals", err)
	}
	var out []DatasetBalance
	for _, rel := range Relations {
		if t, n := d.datasetEffective(rel); n > 0 {
			out = append(out, DatasetBalance{
				Dataset: dataset, Relation: rel,
				Spent: t.cost(), Remaining: t.remaining(s.limits.Dataset),
				Charges: int(n), Limits: s.limits,
			})
		}
	}
	return out, nil
}

func (s *store) Entries(ctx context.Context, dataset string) ([]Receipt, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var out []Receipt
	err := s.e.Read(ctx, func(q Querier) error {
		rows, err := q.Query(ctx, s.qEntries, dataset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := Receipt{Account: Account{Dataset: dataset}}
			var size, createdNS int64
			if err := rows.Scan(&r.Identity, &r.Key, &r.Kind, &r.Relation, &r.Description,
				&r.Cost.Epsilon, &r.Cost.Delta, &size, &createdNS); err != nil {
				return err
			}
			if err := checkStoredCost(r.Cost); err != nil {
				return err
			}
			if err := checkStoredRelation(r.Relation); err != nil {
				return err
			}
			if size < 0 {
				return fmt.Errorf("ledger: corrupt result size %d", size)
			}
			r.ResultSize = int(size)
			r.Created = time.Unix(0, createdNS).UTC()
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap("entries", err)
	}
	return out, nil
}
