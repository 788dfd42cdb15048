package ledger

import (
	"context"
	"fmt"
	"math/big"
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
	qTotalsAll, qPatientAll                                      string
	qInForce, qHistory, qConfirm, qNewLimits                     string
	qReserve, qUnreserve, qExpire, qLive, qExtend, qDropOwner    string
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
		patient_epsilon, patient_delta, patient_rho, patient_unbounded, result, created_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.qUpsert = s.d.SQL(`INSERT INTO {t}totals AS t (dataset, identity, relation, epsilon, delta, charges)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset, identity, relation) DO UPDATE
		SET epsilon = excluded.epsilon, delta = excluded.delta, charges = t.charges + excluded.charges`)
	s.qPatientUpsert = s.d.SQL(`INSERT INTO {t}patient_totals AS t (dataset, identity, epsilon, delta, rho, rho_delta, unbounded, charges)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset, identity) DO UPDATE
		SET epsilon = excluded.epsilon, delta = excluded.delta, rho = excluded.rho, rho_delta = excluded.rho_delta,
		unbounded = excluded.unbounded, charges = t.charges + excluded.charges`)
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

// counted is an exact total and the number of records it sums.
type counted struct {
	t total
	n int64
}

// datasetTotals are stored totals of one dataset, all of them or those of some
// identities: per identity and relation, the exact sum of the records charged
// under that relation alone; the same per relation for the dataset (over all its
// identities); and the whole-patient totals of the identities and of the dataset.
// The effective totals a limit is checked against add the relations that imply
// the one checked (Relation.Implies).
type datasetTotals struct {
	identities []string // those read that have any record, sorted
	raw        map[string]map[Relation]*counted
	ds         map[Relation]*counted
	patient    map[string]*PatientTotal
	dsPatient  PatientTotal
}

func newDatasetTotals() *datasetTotals {
	return &datasetTotals{raw: make(map[string]map[Relation]*counted), ds: make(map[Relation]*counted),
		patient: make(map[string]*PatientTotal), dsPatient: newPatientTotal()}
}

// own returns the stored sum of who (an identity, or datasetRow) under r
// alone, created empty if there is none, for updating in place.
func (d *datasetTotals) own(who string, r Relation) *counted {
	m := d.ds
	if who != datasetRow {
		if d.raw[who] == nil {
			d.raw[who] = make(map[Relation]*counted)
		}
		m = d.raw[who]
	}
	c := m[r]
	if c == nil {
		c = new(counted)
		m[r] = c
	}
	return c
}

// patientOf returns identity's whole-patient total (zero if it has none).
func (d *datasetTotals) patientOf(identity string) PatientTotal {
	if p := d.patient[identity]; p != nil {
		return *p
	}
	return newPatientTotal()
}

// patientRef returns the whole-patient total of who (an identity, or
// datasetRow) for updating in place.
func (d *datasetTotals) patientRef(who string) *PatientTotal {
	if who == datasetRow {
		return &d.dsPatient
	}
	p := d.patient[who]
	if p == nil {
		t := newPatientTotal()
		p = &t
		d.patient[who] = p
	}
	return p
}

// effective returns the total of identity's records whose relation implies
// s, and their number.
func (d *datasetTotals) effective(identity string, s Relation) (*total, int64) {
	return sumImplying(d.raw[identity], s)
}

// datasetEffective returns the total, over all identities, of the records
// whose relation implies s, and their number.
func (d *datasetTotals) datasetEffective(s Relation) (*total, int64) {
	return sumImplying(d.ds, s)
}

// effectiveOf is effective(who, s) for an identity, datasetEffective(s) for
// datasetRow, without the number of records.
func (d *datasetTotals) effectiveOf(who string, s Relation) *total {
	if who == datasetRow {
		t, _ := d.datasetEffective(s)
		return t
	}
	t, _ := d.effective(who, s)
	return t
}

func sumImplying(m map[Relation]*counted, s Relation) (*total, int64) {
	t := new(total)
	var n int64
	for r, c := range m {
		if r.Implies(s) {
			t.addTotal(&c.t)
			n += c.n
		}
	}
	return t, n
}

// totalsOf reads the stored totals of some identities of a dataset, and the
// dataset's own: a constant number of rows whatever the dataset's other
// identities.
func (s *Ledger) totalsOf(ctx context.Context, q Querier, dataset string, identities []string) (*datasetTotals, error) {
	who := append([]string{datasetRow}, identities...)
	args := make([]any, 0, len(who)+1)
	args = append(args, dataset)
	for _, w := range who {
		args = append(args, w)
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(who)), ", ")
	return s.readTotalRows(ctx, q,
		s.d.SQL(`SELECT identity, relation, epsilon, delta, charges FROM {t}totals WHERE dataset = ? AND identity IN (`+in+`)`),
		s.d.SQL(`SELECT identity, epsilon, delta, rho, rho_delta, unbounded, charges FROM {t}patient_totals WHERE dataset = ? AND identity IN (`+in+`)`),
		args)
}

// totals reads every stored total of a dataset.
func (s *Ledger) totals(ctx context.Context, q Querier, dataset string) (*datasetTotals, error) {
	return s.readTotalRows(ctx, q, s.qTotalsAll, s.qPatientAll, []any{dataset})
}

func (s *Ledger) readTotalRows(ctx context.Context, q Querier, qTotals, qPatient string, args []any) (*datasetTotals, error) {
	d := newDatasetTotals()
	rows, err := q.Query(ctx, qTotals, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: read totals: %w", err)
	}
	defer rows.Close()
	seen := make(map[string]bool)
	note := func(identity string) {
		if identity != datasetRow && !seen[identity] {
			seen[identity] = true
			d.identities = append(d.identities, identity)
		}
	}
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
		if identity == datasetRow {
			d.ds[r] = c
			continue
		}
		m := d.raw[identity]
		if m == nil {
			m = make(map[Relation]*counted)
			d.raw[identity] = m
		}
		m[r] = c
		note(identity)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read totals: %w", err)
	}
	rows.Close()
	prow, err := q.Query(ctx, qPatient, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: read whole-patient totals: %w", err)
	}
	defer prow.Close()
	for prow.Next() {
		var identity string
		var txt [4]string
		p := newPatientTotal()
		if err := prow.Scan(&identity, &txt[0], &txt[1], &txt[2], &txt[3], &p.Unbounded, &p.Charges); err != nil {
			return nil, fmt.Errorf("ledger: read whole-patient totals: %w", err)
		}
		for i, dst := range []*big.Rat{p.Epsilon, p.Delta, p.Rho, p.RhoDelta} {
			r, err := decodeRat(txt[i])
			if err != nil {
				return nil, err
			}
			dst.Set(r)
		}
		if p.Unbounded < 0 || p.Charges < 0 || p.Unbounded > p.Charges {
			return nil, fmt.Errorf("ledger: corrupt stored whole-patient counts %d of %d", p.Unbounded, p.Charges)
		}
		if identity == datasetRow {
			d.dsPatient = p
			continue
		}
		d.patient[identity] = &p
		note(identity)
	}
	if err := prow.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read whole-patient totals: %w", err)
	}
	sort.Strings(d.identities)
	return d, nil
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

// readAccount reads the limits in force, the totals of one identity and of its
// dataset, and the dataset's live reservations, outside a transaction.
func (s *Ledger) readAccount(ctx context.Context, a Account) (d, rt *datasetTotals, l Limits, err error) {
	err = s.e.Read(ctx, func(q Querier) error {
		var err error
		if l, _, err = s.inForce(ctx, q, a.Dataset); err != nil {
			return err
		}
		if d, err = s.totalsOf(ctx, q, a.Dataset, []string{a.Identity}); err != nil {
			return err
		}
		rt, _, err = s.liveReservations(ctx, q, a.Dataset, time.Now().UnixNano(), nil)
		return err
	})
	return d, rt, l, err
}

// readAll reads the limits in force, every total of a dataset and its live
// reservations, outside a transaction (listings).
func (s *Ledger) readAll(ctx context.Context, dataset string) (d, rt *datasetTotals, l Limits, err error) {
	err = s.e.Read(ctx, func(q Querier) error {
		var err error
		if l, _, err = s.inForce(ctx, q, dataset); err != nil {
			return err
		}
		if d, err = s.totals(ctx, q, dataset); err != nil {
			return err
		}
		rt, _, err = s.liveReservations(ctx, q, dataset, time.Now().UnixNano(), nil)
		return err
	})
	return d, rt, l, err
}

// held is t plus u, a new total.
func held(t, u *total) *total {
	h := new(total)
	h.addTotal(t)
	h.addTotal(u)
	return h
}

// identitiesOf is the sorted union of the identities of d and of rt.
func identitiesOf(d, rt *datasetTotals) []string {
	ids := slices.Clone(d.identities)
	for _, id := range rt.identities {
		if !slices.Contains(d.identities, id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Balance returns the effective totals of a and of its dataset under
// rel, committed and reserved: what a charge under rel is checked against
// (for RelationRecord, a charge must also fit the RelationFeatureUnit
// balance).
func (s *Ledger) Balance(ctx context.Context, a Account, rel Relation) (Balance, error) {
	if err := a.Validate(); err != nil {
		return Balance{}, err
	}
	if err := rel.Validate(); err != nil {
		return Balance{}, err
	}
	d, rt, limits, err := s.readAccount(ctx, a)
	if err != nil {
		return Balance{}, wrap("balance", err)
	}
	b, _ := balanceOf(d, rt, limits, a, rel)
	return b, nil
}

// balanceOf returns a's effective balance under rel against limits, the
// committed totals d and the live reservations rt counted as a charge counts
// them, and the number of records and reservations counting towards it.
func balanceOf(d, rt *datasetTotals, limits Limits, a Account, rel Relation) (Balance, int64) {
	ds, _ := d.datasetEffective(rel)
	dsr, _ := rt.datasetEffective(rel)
	id, n := d.effective(a.Identity, rel)
	idr, m := rt.effective(a.Identity, rel)
	return Balance{
		Account:          a,
		Relation:         rel,
		Spent:            id.cost(),
		Reserved:         idr.cost(),
		Remaining:        held(id, idr).remaining(limits.PerIdentity),
		DatasetSpent:     ds.cost(),
		DatasetReserved:  dsr.cost(),
		DatasetRemaining: held(ds, dsr).remaining(limits.Dataset),
		Charges:          int(n),
		Reservations:     int(m),
		Limits:           limits,
	}, n + m
}

// PatientBalance returns the whole-patient totals of a and of its dataset, across
// every relation, committed and reserved, with the caps in force.
func (s *Ledger) PatientBalance(ctx context.Context, a Account) (PatientBalance, error) {
	if err := a.Validate(); err != nil {
		return PatientBalance{}, err
	}
	d, rt, limits, err := s.readAccount(ctx, a)
	if err != nil {
		return PatientBalance{}, wrap("whole-patient balance", err)
	}
	return patientBalanceOf(d, rt, limits, a), nil
}

func patientBalanceOf(d, rt *datasetTotals, limits Limits, a Account) PatientBalance {
	b := PatientBalance{Account: a, IdentityTotal: d.patientOf(a.Identity).clone(), DatasetTotal: d.dsPatient.clone(),
		IdentityReserved: rt.patientOf(a.Identity).clone(), DatasetReserved: rt.dsPatient.clone(), Limits: limits.Patient}
	if c := limits.Patient.PerIdentity; c.Epsilon > 0 {
		b.Remaining = patientRemaining(heldPatient(b.IdentityTotal, b.IdentityReserved), c)
	}
	if c := limits.Patient.Dataset; c.Epsilon > 0 {
		b.DatasetRemaining = patientRemaining(heldPatient(b.DatasetTotal, b.DatasetReserved), c)
	}
	return b
}

// heldPatient is the whole-patient total t plus the reserved r, a new total.
func heldPatient(t, r PatientTotal) PatientTotal {
	h := t.clone()
	h.addTotal(r)
	return h
}

// Accounts returns one balance per (identity, relation) of the dataset
// that has at least one record or live reservation counting towards it (a
// zero-cost one counts), sorted by identity and then in the order of
// Relations.
func (s *Ledger) Accounts(ctx context.Context, dataset string) ([]Balance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	d, rt, limits, err := s.readAll(ctx, dataset)
	if err != nil {
		return nil, wrap("accounts", err)
	}
	var out []Balance
	for _, id := range identitiesOf(d, rt) {
		for _, rel := range Relations {
			if b, n := balanceOf(d, rt, limits, Account{Dataset: dataset, Identity: id}, rel); n > 0 {
				out = append(out, b)
			}
		}
	}
	return out, nil
}

// DatasetTotals returns the dataset's effective totals, one per relation
// that has at least one record or live reservation counting towards it, in
// the order of Relations. A dataset without either has none.
func (s *Ledger) DatasetTotals(ctx context.Context, dataset string) ([]DatasetBalance, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	d, rt, limits, err := s.readAll(ctx, dataset)
	if err != nil {
		return nil, wrap("dataset totals", err)
	}
	var out []DatasetBalance
	for _, rel := range Relations {
		t, n := d.datasetEffective(rel)
		r, m := rt.datasetEffective(rel)
		if n+m > 0 {
			out = append(out, DatasetBalance{
				Dataset: dataset, Relation: rel,
				Spent: t.cost(), Reserved: r.cost(), Remaining: held(t, r).remaining(limits.Dataset),
				Charges: int(n), Reservations: int(m), Limits: limits,
			})
		}
	}
	return out, nil
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
		rows, err := q.Query(ctx, s.qEntries, dataset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := Receipt{Account: Account{Dataset: dataset}}
			var size, createdNS, unbounded int64
			if err := rows.Scan(&r.Identity, &r.Key, &r.Kind, &r.Relation, &r.Description,
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
		}
		return rows.Err()
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
		rows, err := qr.Query(ctx, q, kind)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a Account
			var key string
			var result []byte
			if err := rows.Scan(&a.Dataset, &a.Identity, &key, &result); err != nil {
				return err
			}
			if err := fn(a, key, result); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return wrap("results", err)
	}
	return nil
}
