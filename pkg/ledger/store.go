package ledger

import (
	"context"
	"fmt"
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

// EachRow runs sql on q and calls fn with the Scan of each row, in order, closing
// the rows before it returns (a transaction may run statements only then). Stores
// beside the ledger's (package jobs, pgledger's blobs) use it too.
func EachRow(ctx context.Context, q Querier, sql string, args []any, fn func(scan func(dest ...any) error) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// datasetRow is the identity under which the totals tables keep a dataset's own
// row (the sum over all its identities). No identity is empty (checkName), so it
// never names one.
const datasetRow = ""

// Ledger is a durable privacy ledger over an Engine (OpenSQLite, OpenEngine). It
// is safe for concurrent use, and several Ledger values (in one or several
// processes) may share one database: the check-and-charge is a single serialised
// transaction in the database.
type Ledger struct {
	e      Engine
	limits Limits
	d      Dialect

	qGet, qInsert, qUpsert, qPatientUpsert, qSetResult, qEntries string
	qCount, qPatientCount, qStoredAdd, qStoredAll                string
	qTotalsAll, qPatientAll                                      string
	qInForce, qHistory, qConfirm, qNewLimits                     string
	qReserve, qUnreserve, qExpire, qLive, qExtend, qDropOwner    string
	liveness
}

// entryColumns are the columns of a record read by get.
const entryColumns = `kind, relation, description, epsilon, delta, patient_epsilon, patient_delta, patient_rho, patient_unbounded`

// limitsColumns are the columns of a limits_history row.
const limitsColumns = `id, identity_epsilon, identity_delta, dataset_epsilon, dataset_delta,
	patient_identity_epsilon, patient_identity_delta, patient_dataset_epsilon, patient_dataset_delta,
	recorded_ns, confirmed_ns, starts`

func newLedger(e Engine, limits Limits, d Dialect) *Ledger {
	s := &Ledger{e: e, limits: limits, d: d}
	s.qGet = s.d.SQL(`SELECT ` + entryColumns + `, result, created_ns FROM {t}entries
		WHERE dataset = ? AND identity = ? AND entry_key = ?`)
	s.qTotalsAll = s.d.SQL(`SELECT identity, relation, epsilon, delta, charges FROM {t}totals WHERE dataset = ?`)
	s.qPatientAll = s.d.SQL(`SELECT identity, epsilon, delta, rho, rho_delta, unbounded, charges FROM {t}patient_totals WHERE dataset = ?`)
	s.qInsert = s.d.SQL(`INSERT INTO {t}entries
		(dataset, identity, entry_key, kind, relation, description, epsilon, delta,
		patient_epsilon, patient_delta, patient_rho, patient_unbounded, result, created_ns, stored_bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.qUpsert = s.d.SQL(`INSERT INTO {t}totals AS t (dataset, identity, relation, epsilon, delta, charges)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset, identity, relation) DO UPDATE
		SET epsilon = excluded.epsilon, delta = excluded.delta, charges = t.charges + excluded.charges`)
	s.qPatientUpsert = s.d.SQL(`INSERT INTO {t}patient_totals AS t (dataset, identity, epsilon, delta, rho, rho_delta, unbounded, charges)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset, identity) DO UPDATE
		SET epsilon = excluded.epsilon, delta = excluded.delta, rho = excluded.rho, rho_delta = excluded.rho_delta,
		unbounded = excluded.unbounded, charges = t.charges + excluded.charges`)
	// A free charge (batch.free) adds to the numbers of charges only.
	s.qCount = s.d.SQL(`INSERT INTO {t}totals AS t (dataset, identity, relation, epsilon, delta, charges)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset, identity, relation) DO UPDATE SET charges = t.charges + excluded.charges`)
	s.qPatientCount = s.d.SQL(`INSERT INTO {t}patient_totals AS t (dataset, identity, epsilon, delta, rho, rho_delta, unbounded, charges)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset, identity) DO UPDATE SET charges = t.charges + excluded.charges`)
	s.qSetResult = s.d.SQL(`UPDATE {t}entries SET result = ? WHERE dataset = ? AND identity = ? AND entry_key = ?`)
	s.qEntries = s.d.SQL(`SELECT identity, entry_key, kind, relation, description, epsilon, delta,
		patient_epsilon, patient_delta, patient_rho, patient_unbounded,
		COALESCE(length(result), 0), created_ns FROM {t}entries WHERE dataset = ? ORDER BY seq`)
	s.qInForce = s.d.SQL(`SELECT ` + limitsColumns + ` FROM {t}limits_history WHERE dataset = ? ORDER BY id DESC LIMIT 1`)
	s.qHistory = s.d.SQL(`SELECT ` + limitsColumns + ` FROM {t}limits_history WHERE dataset = ? ORDER BY id`)
	s.qConfirm = s.d.SQL(`UPDATE {t}limits_history SET confirmed_ns = ?, starts = starts + 1 WHERE id = ?`)
	s.qNewLimits = s.d.SQL(`INSERT INTO {t}limits_history (dataset, identity_epsilon, identity_delta, dataset_epsilon, dataset_delta,
		patient_identity_epsilon, patient_identity_delta, patient_dataset_epsilon, patient_dataset_delta,
		recorded_ns, confirmed_ns, starts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`)
	s.reservationQueries()
	s.storedQueries()
	return s
}

// Limits returns the limits the store was opened with: those it records at a
// start (RecordLimits), and enforces on a dataset for which none are recorded.
// Once limits are recorded for a dataset, every charge on it is checked against
// the limits in force, read in the charge's own transaction.
func (s *Ledger) Limits() Limits { return s.limits }

// Close releases the database handle.
func (s *Ledger) Close() error {
	if err := s.e.Close(); err != nil {
		return fmt.Errorf("ledger: close: %w", err)
	}
	return nil
}

// wrap gives err the package prefix unless it already has it.
func wrap(op string, err error) error {
	if strings.HasPrefix(err.Error(), "ledger: ") {
		return err
	}
	return fmt.Errorf("ledger: %s: %w", op, err)
}

func (s *Ledger) get(ctx context.Context, q Querier, a Account, key string) (Receipt, bool, error) {
	r := Receipt{Account: a, Key: key}
	var createdNS, unbounded int64
	found, err := QueryRow(ctx, q, s.qGet, []any{a.Dataset, a.Identity, key},
		&r.Kind, &r.Relation, &r.Description, &r.Cost.Epsilon, &r.Cost.Delta,
		&r.Patient.Epsilon, &r.Patient.Delta, &r.Patient.Rho, &unbounded, &r.Result, &createdNS)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("ledger: read record: %w", err)
	}
	if !found {
		return Receipt{}, false, nil
	}
	r.Patient.Unbounded = unbounded != 0
	if err := checkStored(r); err != nil {
		return Receipt{}, false, err
	}
	r.ResultSize = len(r.Result)
	r.Created = time.Unix(0, createdNS).UTC()
	return r, true, nil
}

// checkStored checks a record read back: its cost, relation and whole-patient cost.
func checkStored(r Receipt) error {
	if err := checkStoredCost(r.Cost); err != nil {
		return err
	}
	if err := checkStoredRelation(r.Relation); err != nil {
		return err
	}
	if r.Patient.Validate() != nil {
		return fmt.Errorf("ledger: corrupt stored whole-patient cost %+v", r.Patient)
	}
	return nil
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

// SetResult attaches or replaces the result of an existing record. It
// never changes a cost. It returns an error wrapping ErrNotFound if the
// record does not exist.
func (s *Ledger) SetResult(ctx context.Context, a Account, key string, result []byte) error {
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

// Get returns the record of key in a, and false if there is none.
func (s *Ledger) Get(ctx context.Context, a Account, key string) (Receipt, bool, error) {
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

// Entries returns the records of a dataset in the order they were
// committed, without their Result payloads.
func (s *Ledger) Entries(ctx context.Context, dataset string) ([]Receipt, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var out []Receipt
	err := s.e.Read(ctx, func(q Querier) error {
		out = out[:0] // an engine may run fn again (Engine)
		return EachRow(ctx, q, s.qEntries, []any{dataset}, func(scan func(...any) error) error {
			r := Receipt{Account: Account{Dataset: dataset}}
			var size, createdNS, unbounded int64
			if err := scan(&r.Identity, &r.Key, &r.Kind, &r.Relation, &r.Description,
				&r.Cost.Epsilon, &r.Cost.Delta, &r.Patient.Epsilon, &r.Patient.Delta, &r.Patient.Rho, &unbounded,
				&size, &createdNS); err != nil {
				return err
			}
			r.Patient.Unbounded = unbounded != 0
			if err := checkStored(r); err != nil {
				return err
			}
			if size < 0 {
				return fmt.Errorf("ledger: corrupt result size %d", size)
			}
			r.ResultSize = int(size)
			r.Created = time.Unix(0, createdNS).UTC()
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, wrap("entries", err)
	}
	return out, nil
}

// Ping checks that the database answers, with one trivial read (the
// curator's health check).
func (s *Ledger) Ping(ctx context.Context) error {
	err := s.e.Read(ctx, func(q Querier) error {
		var one int64
		_, err := QueryRow(ctx, q, `SELECT 1`, nil, &one)
		return err
	})
	if err != nil {
		return wrap("ping", err)
	}
	return nil
}

// KindResults calls fn with the account, key and result of every record of kind
// that has a non-empty result, in every dataset, in the order they were
// committed, from one query — for readers that need one field of many results
// (the curator's removal of orphaned release matrices) without a Get per record,
// nor the records of other kinds. An engine that runs the read again after losing
// its connection (Engine) calls fn again from the first record: fn must tolerate
// seeing a record twice. result is valid only during the call.
func (s *Ledger) KindResults(ctx context.Context, kind string, fn func(a Account, key string, result []byte) error) error {
	if err := checkName("kind", kind); err != nil {
		return err
	}
	q := s.d.SQL(`SELECT dataset, identity, entry_key, result FROM {t}entries
		WHERE kind = ? AND result IS NOT NULL AND length(result) > 0 ORDER BY seq`)
	err := s.e.Read(ctx, func(qr Querier) error {
		return EachRow(ctx, qr, q, []any{kind}, func(scan func(...any) error) error {
			var a Account
			var key string
			var result []byte
			if err := scan(&a.Dataset, &a.Identity, &key, &result); err != nil {
				return err
			}
			return fn(a, key, result)
		})
	})
	if err != nil {
		return wrap("results", err)
	}
	return nil
}
