package ledger

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultLivenessWindow is how long an owner's heartbeat (Ledger.Heartbeat)
// keeps its reservations counting: once it lapses, every process sharing the
// database stops counting them and removes them, well before their time to live
// (DefaultReservationTTL). A curator beats every third of it.
const DefaultLivenessWindow = 20 * time.Second

// liveness is what a Ledger keeps of the reservations' holders: the clock that
// judges expiry (time.Now unless SetClock), and the reservations whose cancel
// failed, retried by RetryCancels.
type liveness struct {
	clockFn                          func() time.Time
	pendingMu                        sync.Mutex
	pending                          map[string]*Reservation
	qBeat, qDropLapsed, qPrune, qWho string
}

func (s *Ledger) livenessQueries() {
	s.qBeat = s.d.SQL(`INSERT INTO {t}owners (dataset, owner, seen_ns, alive_until_ns) VALUES (?, ?, ?, ?)
		ON CONFLICT (dataset, owner) DO UPDATE SET seen_ns = excluded.seen_ns, alive_until_ns = excluded.alive_until_ns`)
	s.qDropLapsed = s.d.SQL(`DELETE FROM {t}reservations WHERE dataset = ? AND
		owner IN (SELECT owner FROM {t}owners WHERE dataset = ? AND alive_until_ns <= ?)`)
	s.qPrune = s.d.SQL(`DELETE FROM {t}owners WHERE dataset = ? AND alive_until_ns <= ?
		AND owner NOT IN (SELECT owner FROM {t}reservations WHERE dataset = ?)`)
	s.qWho = s.d.SQL(`SELECT DISTINCT o.owner, o.seen_ns, o.alive_until_ns FROM {t}owners o
		JOIN {t}reservations r ON r.dataset = o.dataset AND r.owner = o.owner WHERE o.dataset = ? AND (? = '' OR r.identity = ?)`)
}

// SetClock replaces the clock that judges when reservations and heartbeats
// lapse (time.Now by default), for tests and simulations. Call it before the
// Ledger is used.
func (s *Ledger) SetClock(now func() time.Time) { s.clockFn = now }

func (s *Ledger) now() time.Time {
	if s.clockFn != nil {
		return s.clockFn()
	}
	return time.Now()
}

// Heartbeat records that owner is alive for window more (0:
// DefaultLivenessWindow): its reservations on dataset count until then unless
// it beats again. It also removes the reservations of owners whose heartbeat
// lapsed, and the lapsed owners that hold none.
func (s *Ledger) Heartbeat(ctx context.Context, dataset, owner string, window time.Duration) error {
	if err := checkName("dataset", dataset); err != nil {
		return err
	}
	if err := checkName("owner", owner); err != nil {
		return err
	}
	if window <= 0 {
		window = DefaultLivenessWindow
	}
	now := s.now()
	err := s.e.Write(ctx, Lock{Dataset: dataset}, func(q Querier) error {
		if _, err := q.Exec(ctx, s.qBeat, dataset, owner, now.UnixNano(), now.Add(window).UnixNano()); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.qDropLapsed, dataset, dataset, now.UnixNano()); err != nil {
			return err
		}
		_, err := q.Exec(ctx, s.qPrune, dataset, now.UnixNano(), dataset)
		return err
	})
	if err != nil {
		return wrap("heartbeat", err)
	}
	return nil
}

// notePending keeps r, whose cancel failed, for RetryCancels until it expires.
func (s *Ledger) notePending(r *Reservation, failed bool) {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	if !failed {
		delete(s.pending, r.Token)
		return
	}
	if s.pending == nil {
		s.pending = map[string]*Reservation{}
	}
	s.pending[r.Token] = r
}

// RetryCancels cancels again the reservations whose Cancel failed (in an
// outage), and those a Reserve that failed without an answer may have written,
// forgetting those that expired meanwhile; it returns how many it cancelled and
// the first error. A curator calls it while its ledger answers.
func (s *Ledger) RetryCancels(ctx context.Context) (int, error) {
	s.pendingMu.Lock()
	var todo []*Reservation
	for tok, r := range s.pending {
		if !s.now().Before(r.Expires) {
			delete(s.pending, tok)
		} else {
			todo = append(todo, r)
		}
	}
	s.pendingMu.Unlock()
	n, first := 0, error(nil)
	for _, r := range todo {
		if err := s.Cancel(ctx, r); err == nil {
			n++
		} else if first == nil {
			first = err
		}
	}
	return n, first
}

// StaleOwner names the holder of reservations that a refusal counted while the
// holder's heartbeat is late: it was last seen at Seen, and its reservations
// stop counting at Until unless it beats again.
type StaleOwner struct {
	Owner       string
	Seen, Until time.Time
}

// staleOwner returns the holder of reservations on dataset (of identity, if not
// empty) whose heartbeat is late by more than half its window, and has been the
// longest (nil if none).
func (s *Ledger) staleOwner(ctx context.Context, dataset, identity string) (*StaleOwner, error) {
	now := s.now().UnixNano()
	var out *StaleOwner
	err := s.e.Read(ctx, func(q Querier) error {
		return EachRow(ctx, q, s.qWho, []any{dataset, identity, identity}, func(scan func(...any) error) error {
			var owner string
			var seen, until int64
			if err := scan(&owner, &seen, &until); err != nil {
				return err
			}
			if until > now && now-seen > (until-seen)/2 && (out == nil || seen < out.Seen.UnixNano()) {
				out = &StaleOwner{Owner: owner, Seen: time.Unix(0, seen).UTC(), Until: time.Unix(0, until).UTC()}
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrap("read reservation owners", err)
	}
	return out, nil
}

// staleClause says, for a refusal, which reservations it counted are stale.
func (o *StaleOwner) staleClause() string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf("; those of curator %q are stale (last seen at %s, cleared at %s)",
		o.Owner, o.Seen.Format(time.TimeOnly+" UTC"), o.Until.Format(time.TimeOnly+" UTC"))
}
