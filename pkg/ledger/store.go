package ledger

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
)

// schemaVersion is the version of the tables this code reads and writes.
const schemaVersion = 1

// engine is what differs between SQLite and PostgreSQL: how transactions
// are opened, serialised and made durable.
type engine interface {
	// write runs fn in one transaction and commits it durably if fn returns
	// nil; otherwise it rolls back and returns fn's error. lock names what
	// the transaction must be serialised on.
	write(ctx context.Context, lock lockKey, fn func(q querier) error) error
	// read runs fn on a connection in autocommit mode.
	read(ctx context.Context, fn func(q querier) error) error
	close() error
}

// lockKey names what a writing transaction must be serialised on, for
// engines that do not serialise every writer.
type lockKey struct {
	migrate bool   // schema creation
	dataset string // check-and-charge on this dataset
}

type querier interface {
	exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	query(ctx context.Context, sql string, args ...any) (rowIter, error)
}

type rowIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// queryRow runs q and scans its first row into dest; found is false if
// there is none.
func queryRow(ctx context.Context, q querier, sql string, args []any, dest ...any) (found bool, err error) {
	rows, err := q.query(ctx, sql, args...)
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

// store implements Store over an engine.
type store struct {
	e      engine
	limits Limits
	prefix string // qualifies table names ("" or `"schema".`)
	dollar bool   // $1, $2, ... placeholders instead of ?

	qGet, qTotals, qInsert, qUpsert, qSetResult, qEntries string
}

func newStore(e engine, limits Limits, prefix string, dollar bool) *store {
	s := &store{e: e, limits: limits, prefix: prefix, dollar: dollar}
	s.qGet = s.sql(`SELECT kind, description, epsilon, delta, result, created_ns FROM {t}entries
		WHERE dataset = ? AND identity = ? AND entry_key = ?`)
	s.qTotals = s.sql(`SELECT identity, epsilon, delta, charges FROM {t}totals WHERE dataset = ? ORDER BY identity`)
	s.qInsert = s.sql(`INSERT INTO {t}entries
		(dataset, identity, entry_key, kind, description, epsilon, delta, result, created_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.qUpsert = s.sql(`INSERT INTO {t}totals AS t (dataset, identity, epsilon, delta, charges)
		VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (dataset, identity) DO UPDATE
		SET epsilon = excluded.epsilon, delta = excluded.delta, charges = t.charges + 1`)
	s.qSetResult = s.sql(`UPDATE {t}entries SET result = ? WHERE dataset = ? AND identity = ? AND entry_key = ?`)
	s.qEntries = s.sql(`SELECT identity, entry_key, kind, description, epsilon, delta,
		COALESCE(length(result), 0), created_ns FROM {t}entries WHERE dataset = ? ORDER BY seq`)
	return s
}

// sql qualifies table names and numbers placeholders for the engine.
func (s *store) sql(q string) string {
	q = strings.ReplaceAll(q, "{t}", s.prefix)
	if !s.dollar {
		return q
	}
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
	return b.String()
}

// migrate runs ddl (creating the tables if needed) and checks the schema
// version, in one transaction.
func (s *store) migrate(ctx context.Context, ddl []string) error {
	err := s.e.write(ctx, lockKey{migrate: true}, func(q querier) error {
		for _, stmt := range ddl {
			if _, err := q.exec(ctx, s.sql(stmt)); err != nil {
				return err
			}
		}
		var v int64
		found, err := queryRow(ctx, q, s.sql(`SELECT version FROM {t}schema_version WHERE id = 1`), nil, &v)
		switch {
		case err != nil:
			return err
		case !found:
			_, err := q.exec(ctx, s.sql(`INSERT INTO {t}schema_version (id, version) VALUES (1, ?)`), int64(schemaVersion))
			return err
		case v > schemaVersion:
			return fmt.Errorf("database schema version %d is newer than this program supports (%d)", v, schemaVersion)
		case v < 1:
			return fmt.Errorf("database schema version %d is invalid", v)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}

func (s *store) Limits() Limits { return s.limits }

func (s *store) Close() error {
	if err := s.e.close(); err != nil {
		return fmt.Errorf("ledger: close: %w", err)
	}
	return nil
}

func (s *store) Charge(ctx context.Context, c Charge) (Receipt, error) {
	if err := c.Validate(); err != nil {
		return Receipt{}, err
	}
	c.Cost = c.Cost.normalise()
	result := bytes.Clone(c.Result)
	var out Receipt
	err := s.e.write(ctx, lockKey{dataset: c.Dataset}, func(q querier) error {
		// Replay.
		stored, found, err := s.get(ctx, q, c.Account, c.Key)
		if err != nil {
			return err
		}
		if found {
			if stored.Kind != c.Kind || stored.Cost != c.Cost {
				return fmt.Errorf("ledger: key %q of identity %q on dataset %q holds %s ε=%g, δ=%g; request is %s ε=%g, δ=%g: %w",
					c.Key, c.Identity, c.Dataset, stored.Kind, stored.Cost.Epsilon, stored.Cost.Delta,
					c.Kind, c.Cost.Epsilon, c.Cost.Delta, ErrKeyConflict)
			}
			stored.Replayed = true
			out = stored
			return nil
		}

		// Check both limits against exact totals.
		dsTotal, per, err := s.totals(ctx, q, c.Dataset)
		if err != nil {
			return err
		}
		idTotal, _ := find(per, c.Identity)
		if !idTotal.fits(c.Cost, s.limits.PerIdentity) {
			return &BudgetError{Scope: ScopeIdentity, Account: c.Account, Requested: c.Cost, Remaining: idTotal.remaining(s.limits.PerIdentity)}
		}
		if !dsTotal.fits(c.Cost, s.limits.Dataset) {
			return &BudgetError{Scope: ScopeDataset, Account: c.Account, Requested: c.Cost, Remaining: dsTotal.remaining(s.limits.Dataset)}
		}

		// Record.
		createdNS := time.Now().UnixNano()
		if _, err := q.exec(ctx, s.qInsert, c.Dataset, c.Identity, c.Key, c.Kind, c.Description,
			c.Cost.Epsilon, c.Cost.Delta, result, createdNS); err != nil {
			return fmt.Errorf("ledger: charge: record: %w", err)
		}
		idTotal.add(c.Cost)
		if _, err := q.exec(ctx, s.qUpsert, c.Dataset, c.Identity,
			encodeRat(&idTotal.eps), encodeRat(&idTotal.delta)); err != nil {
			return fmt.Errorf("ledger: charge: update totals: %w", err)
		}
		out = Receipt{
			Account: c.Account, Key: c.Key, Kind: c.Kind, Description: c.Description,
			Cost: c.Cost, Result: result, ResultSize: len(result),
			Created: time.Unix(0, createdNS).UTC(),
		}
		return nil
	})
	if err != nil {
		return Receipt{}, wrap("charge", err)
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

func (s *store) get(ctx context.Context, q querier, a Account, key string) (Receipt, bool, error) {
	r := Receipt{Account: a, Key: key}
	var createdNS int64
	found, err := queryRow(ctx, q, s.qGet, []any{a.Dataset, a.Identity, key},
		&r.Kind, &r.Description, &r.Cost.Epsilon, &r.Cost.Delta, &r.Result, &createdNS)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("ledger: read record: %w", err)
	}
	if !found {
		return Receipt{}, false, nil
	}
	if err := checkStoredCost(r.Cost); err != nil {
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

type identityTotal struct {
	identity string
	t        total
	charges  int64
}

// totals reads the exact totals of every identity of a dataset, sorted by
// identity, and their sum.
func (s *store) totals(ctx context.Context, q querier, dataset string) (ds *total, per []identityTotal, err error) {
	rows, err := q.query(ctx, s.qTotals, dataset)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: read totals: %w", err)
	}
	defer rows.Close()
	ds = new(total)
	for rows.Next() {
		var it identityTotal
		var e, d string
		if err := rows.Scan(&it.identity, &e, &d, &it.charges); err != nil {
			return nil, nil, fmt.Errorf("ledger: read totals: %w", err)
		}
		er, err := decodeRat(e)
		if err != nil {
			return nil, nil, err
		}
		dr, err := decodeRat(d)
		if err != nil {
			return nil, nil, err
		}
		it.t.eps.Set(er)
		it.t.delta.Set(dr)
		ds.addTotal(&it.t)
		per = append(per, it)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("ledger: read totals: %w", err)
	}
	return ds, per, nil
}

// find returns the total of identity (a zero total if it has none) and its
// number of records.
func find(per []identityTotal, identity string) (*total, int64) {
	for i := range per {
		if per[i].identity == identity {
			return &per[i].t, per[i].charges
		}
	}
	return new(total), 0
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
	err := s.e.write(ctx, lockKey{}, func(q querier) error {
		n, err := q.exec(ctx, s.qSetResult, result, a.Dataset, a.Identity, key)
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
	err := s.e.read(ctx, func(q querier) error {
		var err error
		r, found, err = s.get(ctx, q, a, key)
		return err
	})
	if err != nil {
		return Receipt{}, false, wrap("get", err)
	}
	return r, found, nil
}

func (s *store) Balance(ctx context.Context, a Account) (Balance, error) {
	if err := a.Validate(); err != nil {
		return Balance{}, err
	}
	var ds *total
	var per []identityTotal
	err := s.e.read(ctx, func(q querier) error {
		var err error
		ds, per, err = s.totals(ctx, q, a.Dataset)
		return err
	})
	if err != nil {
		return Balance{}, wrap("balance", err)
	}
	id, charges := find(per, a.Identity)
	return s.balance(a, id, ds, charges), nil
}

func (s *store) balance(a Account, id, ds *total, charges int64) Balance {
	return Balance{
		Account:          a,
		Spent:            id.cost(),
		Remaining:        id.remaining(s.limits.PerIdentity),
		DatasetSpent:     ds.cost(),
		DatasetRemaining: ds.remaining(s.limits.Dataset),
		Charges:          int(charges),
		Limits:           s.limits,
	}
}

func (s *store) Accounts(ctx context.Context, dataset string) ([]Balance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var ds *total
	var per []identityTotal
	err := s.e.read(ctx, func(q querier) error {
		var err error
		ds, per, err = s.totals(ctx, q, dataset)
		return err
	})
	if err != nil {
		return nil, wrap("accounts", err)
	}
	out := make([]Balance, 0, len(per))
	for i := range per {
		out = append(out, s.balance(Account{Dataset: dataset, Identity: per[i].identity}, &per[i].t, ds, per[i].charges))
	}
	return out, nil
}

func (s *store) Entries(ctx context.Context, dataset string) ([]Receipt, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var out []Receipt
	err := s.e.read(ctx, func(q querier) error {
		rows, err := q.query(ctx, s.qEntries, dataset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := Receipt{Account: Account{Dataset: dataset}}
			var size, createdNS int64
			if err := rows.Scan(&r.Identity, &r.Key, &r.Kind, &r.Description,
				&r.Cost.Epsilon, &r.Cost.Delta, &size, &createdNS); err != nil {
				return err
			}
			if err := checkStoredCost(r.Cost); err != nil {
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
