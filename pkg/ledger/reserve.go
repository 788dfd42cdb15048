package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// DefaultReservationTTL is how long a reservation holds its budget when Hold.TTL
// is zero, unless extended (Ledger.Extend).
const DefaultReservationTTL = 2 * time.Minute

// ErrReserved is returned by Reserve for a key that a live reservation already
// holds: the same release is being computed by another request (another replica
// sharing the database). Retrying once that one is committed replays its receipt.
var ErrReserved = errors.New("ledger: the release is already reserved by a request in progress")

// ErrReservationLapsed is returned by Extend when the reservation is no longer
// held: it expired and was cleaned up, was cancelled, or was dropped at a restart.
// Its commit is then checked like a new charge.
var ErrReservationLapsed = errors.New("ledger: the reservation has lapsed")

// Hold says whose a reservation is and how long it holds its budget.
type Hold struct {
	// Owner names the process that holds the reservation (a curator instance);
	// DropReservations(dataset, Owner) at its next start frees what a crash left.
	// Empty is allowed: such reservations are freed by expiry only.
	Owner string
	// TTL is how long the reservation holds its budget unless extended; 0 means
	// DefaultReservationTTL.
	TTL time.Duration
	// Stored bounds what the releases store for replay (Charge.Stored); the
	// zero value bounds nothing.
	Stored StoredQuota
}

// Reservation is budget held, under the limits, for releases being computed
// (Ledger.Reserve). It is consumed by Commit, or released by Cancel, expiry or
// DropReservations.
type Reservation struct {
	Dataset string
	// Token identifies the reservation: Commit, Cancel and Extend act on its rows
	// only, never on another request's reservation of the same key.
	Token string
	Owner string
	// Expires is when the reservation stops counting, by the clock of the process
	// that made it, unless extended.
	Expires time.Time
	// Receipts are in the order of the reserved charges: a charge whose key was
	// already recorded has its stored receipt, with Replayed set, and reserves
	// nothing; the others hold their cost (no Created, no Result).
	Receipts []Receipt
}

// Reserved reports whether r holds any budget (false when every charge replayed).
func (r *Reservation) Reserved() bool {
	for _, rec := range r.Receipts {
		if !rec.Replayed {
			return true
		}
	}
	return false
}

// txMode is what a check-and-charge transaction does beyond the check: record the
// charges (the zero value), record them consuming the reservation commit, or
// record a reservation instead (reserve).
type txMode struct {
	commit  string
	reserve *reserveRows
}

type reserveRows struct {
	token, owner string
	expiresNS    int64
	quota        StoredQuota
}

const reservationColumns = `identity, entry_key, relation, epsilon, delta, patient_epsilon, patient_delta, patient_rho, patient_unbounded`

func (s *Ledger) reservationQueries() {
	s.qReserve = s.d.SQL(`INSERT INTO {t}reservations (dataset, identity, entry_key, token, owner, kind, relation, epsilon, delta,
		patient_epsilon, patient_delta, patient_rho, patient_unbounded, created_ns, expires_ns, stored_bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.qUnreserve = s.d.SQL(`DELETE FROM {t}reservations WHERE dataset = ? AND token = ?`)
	s.qExpire = s.d.SQL(`DELETE FROM {t}reservations WHERE dataset = ? AND (expires_ns <= ?
		OR owner IN (SELECT owner FROM {t}owners WHERE dataset = ? AND alive_until_ns <= ?))`)
	// A reservation stops counting at its expiry or its owner's lapsed heartbeat,
	// whichever is first (liveness.go).
	s.qLive = s.d.SQL(`SELECT ` + reservationColumns + `, expires_ns, COALESCE(o.alive_until_ns, expires_ns), stored_bytes
		FROM {t}reservations r LEFT JOIN {t}owners o ON o.dataset = r.dataset AND o.owner = r.owner WHERE r.dataset = ?`)
	s.qExtend = s.d.SQL(`UPDATE {t}reservations SET expires_ns = ? WHERE dataset = ? AND token = ? AND expires_ns > ?`)
	s.qDropOwner = s.d.SQL(`DELETE FROM {t}reservations WHERE dataset = ? AND (owner = ? OR expires_ns <= ?)`)
	s.livenessQueries()
}

// reserved returns the sums of the dataset's live reservations (those expiring
// after now), per identity and relation, per relation for the dataset, and
// whole-patient, as datasetTotals, and removes the expired ones if there are any
// (a statement only then: a charge with no reservation about costs one read).
// count decides, for each live reserved key, whether it is counted (false: it is
// the release being charged, which is counted as a charge), or fails the
// transaction.
func (s *Ledger) reserved(ctx context.Context, q Querier, dataset string, now int64,
	count func(identity, key string) (bool, error)) (*datasetTotals, error) {
	d, expired, err := s.liveReservations(ctx, q, dataset, now, count)
	if err != nil {
		return nil, err
	}
	if expired {
		if _, err := q.Exec(ctx, s.qExpire, dataset, now, dataset, now); err != nil {
			return nil, fmt.Errorf("ledger: remove expired reservations: %w", err)
		}
	}
	return d, nil
}

// liveReservations sums the dataset's reservations that expire after now, as
// reserved does, and reports whether it passed expired ones; it writes nothing,
// so the readers (Balance, Report, ...) show what a charge would count. A nil
// count counts every reservation. The sums' identities are those holding a live
// reservation, sorted.
func (s *Ledger) liveReservations(ctx context.Context, q Querier, dataset string, now int64,
	count func(identity, key string) (bool, error)) (*datasetTotals, bool, error) {
	d := newDatasetTotals()
	expired := false
	err := EachRow(ctx, q, s.qLive, []any{dataset}, func(scan func(...any) error) error {
		var identity, key string
		var rel Relation
		var c Cost
		var p PatientCost
		var unbounded, expiresNS, aliveNS, stored int64
		if err := scan(&identity, &key, &rel, &c.Epsilon, &c.Delta, &p.Epsilon, &p.Delta, &p.Rho, &unbounded, &expiresNS, &aliveNS, &stored); err != nil {
			return err
		}
		if min(expiresNS, aliveNS) <= now {
			expired = true
			return nil
		}
		p.Unbounded = unbounded != 0
		if err := checkStored(Receipt{Cost: c, Relation: rel, Patient: p}); err != nil {
			return fmt.Errorf("ledger: reservation %q of identity %q: %w", key, identity, err)
		}
		if count != nil {
			if ok, err := count(identity, key); err != nil || !ok {
				return err
			}
		}
		d.add(identity, rel, c, p)
		d.stored[identity] += stored
		d.stored[datasetRow] += stored
		return nil
	})
	if err != nil {
		return nil, false, wrap("read reservations", err) // the errors of checkStored and count say what they are
	}
	d.sortIdentities()
	return d, expired, nil
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("ledger: reservation token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Reserve holds the costs of cs under the limits, for releases about to be
// computed: in one transaction, like ChargeAll, it replays each charge whose
// key its account already holds (and reserves nothing for it), checks the
// others together against both limits of every relation they count towards
// and the whole-patient caps — counting the committed charges and every live
// reservation of the dataset — and records them as a reservation that
// expires after h.TTL, or returns a *BudgetError and records nothing. A key
// that a live reservation already holds is refused with ErrReserved. No
// Result is kept.
func (s *Ledger) Reserve(ctx context.Context, cs []Charge, h Hold) (*Reservation, error) {
	if len(cs) == 0 {
		return nil, errors.New("ledger: reserve: no charge")
	}
	if h.TTL < 0 {
		return nil, fmt.Errorf("ledger: reserve: a reservation's time to live must not be negative, got %v", h.TTL)
	}
	h.TTL = cmp.Or(h.TTL, DefaultReservationTTL)
	if h.Owner != "" {
		if err := checkName("owner", h.Owner); err != nil {
			return nil, err
		}
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	expires := s.now().Add(h.TTL)
	rs, err := s.chargeAll(ctx, cs, txMode{reserve: &reserveRows{token: token, owner: h.Owner, expiresNS: expires.UnixNano(), quota: h.Stored}})
	var be *BudgetError
	if errors.As(err, &be) && !be.Reserved.IsZero() {
		var identity string
		if be.Scope == ScopeIdentity {
			identity = be.Account.Identity
		}
		be.Stale, _ = s.staleOwner(ctx, cs[0].Dataset, identity) // the refusal stands without it
	}
	if errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		// The reservation may have been written before the answer was lost.
		s.notePending(&Reservation{Dataset: cs[0].Dataset, Token: token, Owner: h.Owner, Expires: expires.UTC()}, true)
	}
	if err != nil {
		return nil, wrap("reserve", err)
	}
	return &Reservation{Dataset: cs[0].Dataset, Token: token, Owner: h.Owner, Expires: expires.UTC(), Receipts: rs}, nil
}

// Commit is ChargeAll of cs that consumes r in the same transaction: r's
// reservation is released and cs are checked (against the committed charges
// and the other live reservations) and recorded, all or none. A charge of
// what was reserved therefore fits unless r lapsed (expired, dropped) and
// others spent the budget meanwhile, or the limits were lowered. If Commit
// fails nothing is recorded and r still holds its budget: Cancel it. Replays
// and idempotence are ChargeAll's: committing a recorded key spends nothing.
func (s *Ledger) Commit(ctx context.Context, r *Reservation, cs []Charge) ([]Receipt, error) {
	if r == nil || r.Token == "" {
		return nil, errors.New("ledger: commit: no reservation")
	}
	if len(cs) > 0 && cs[0].Dataset != r.Dataset {
		return nil, fmt.Errorf("ledger: commit: the reservation is on dataset %q, the charges on %q", r.Dataset, cs[0].Dataset)
	}
	rs, err := s.chargeAll(ctx, cs, txMode{commit: r.Token})
	if err != nil {
		return nil, wrap("commit", err)
	}
	return rs, nil
}

// Cancel releases r's budget (nothing if it was committed, or has lapsed). If
// it fails, r is kept for RetryCancels until it expires.
func (s *Ledger) Cancel(ctx context.Context, r *Reservation) error {
	if r == nil || r.Token == "" {
		return nil
	}
	err := s.e.Write(ctx, Lock{Dataset: r.Dataset}, func(q Querier) error {
		_, err := q.Exec(ctx, s.qUnreserve, r.Dataset, r.Token)
		return err
	})
	s.notePending(r, err != nil)
	if err != nil {
		return wrap("cancel reservation", err)
	}
	return nil
}

// Extend keeps r for ttl more from now (0: DefaultReservationTTL), or returns
// an error wrapping ErrReservationLapsed if it is no longer held.
func (s *Ledger) Extend(ctx context.Context, r *Reservation, ttl time.Duration) error {
	if r == nil || r.Token == "" {
		return errors.New("ledger: extend: no reservation")
	}
	if ttl <= 0 {
		ttl = DefaultReservationTTL
	}
	now := s.now()
	expires := now.Add(ttl)
	err := s.e.Write(ctx, Lock{Dataset: r.Dataset}, func(q Querier) error {
		n, err := q.Exec(ctx, s.qExtend, expires.UnixNano(), r.Dataset, r.Token, now.UnixNano())
		if err != nil {
			return err
		}
		if n == 0 && r.Reserved() {
			return ErrReservationLapsed
		}
		return nil
	})
	if err != nil {
		return wrap("extend reservation", err)
	}
	r.Expires = expires.UTC()
	return nil
}

// DropReservations releases the reservations of dataset held by owner —
// at the start of the process that owns them, they are left by a crash — and
// any expired ones; it returns how many it removed.
func (s *Ledger) DropReservations(ctx context.Context, dataset, owner string) (int, error) {
	if err := checkName("dataset", dataset); err != nil {
		return 0, err
	}
	if err := checkName("owner", owner); err != nil {
		return 0, err
	}
	var n int64
	err := s.e.Write(ctx, Lock{Dataset: dataset}, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.qDropOwner, dataset, owner, s.now().UnixNano())
		return err
	})
	if err != nil {
		return 0, wrap("drop reservations", err)
	}
	return int(n), nil
}
