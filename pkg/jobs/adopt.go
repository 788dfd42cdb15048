package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/privbo/privbo/pkg/ledger"
)

// Adopted is what Adopt copied.
type Adopted struct {
	// Jobs were copied (or were there already); Interrupted of them were unfinished in
	// the file and are failed in the shared store, as a restart would have marked them.
	Jobs, Interrupted int
	// Skipped jobs have no charge in the ledger under the dataset (another dataset's,
	// served from the same state directory before): they stay in the file only.
	Skipped int
}

// Adopt copies the jobs of a curator's jobs.db (from, OpenSQLite) into the shared store
// to, with their events and traces, so that a curator moving to a PostgreSQL job store
// keeps answering for the jobs it accepted before: their ids are kept, and Submit finds
// a retry of one under the id the file gave it, charging nothing. Only jobs that led
// charges under to's dataset (ledger key job/ID) are copied. A job unfinished in the file
// is copied failed ("interrupted"), its charge spent, as a restart marks it; nothing is
// run. Copying again copies nothing new.
func Adopt(ctx context.Context, to, from *Store, led recordGetter) (Adopted, error) {
	var got Adopted
	if !to.shared || from.shared {
		return got, errors.New("jobs: Adopt copies a curator's jobs.db into a shared store")
	}
	ids, err := from.allIDs(ctx)
	if err != nil {
		return got, err
	}
	for _, id := range ids {
		j, err := from.get(ctx, id)
		if err != nil {
			return got, err
		}
		if _, ok, err := led.Get(ctx, ledger.Account{Dataset: to.dataset, Identity: j.Identity}, "job/"+id); err != nil {
			return got, fmt.Errorf("jobs: %w", err)
		} else if !ok {
			got.Skipped++
			continue
		}
		evs, err := from.events(ctx, id, 0)
		if err != nil {
			return got, err
		}
		tr, err := from.trace(ctx, id)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return got, err
		}
		if !j.State.Terminal() {
			const msg = "interrupted: the curator stopped while the job was unfinished; its privacy charge stays spent"
			j.State, j.Error = Failed, "interrupted by a curator restart"
			evs = append(evs, Event{JobID: id, Seq: uint64(len(evs)) + 1, Time: j.Updated, State: Failed, Message: msg})
			got.Interrupted++
		}
		if err := to.copyJob(ctx, j, evs, tr); err != nil {
			return got, err
		}
		got.Jobs++
	}
	return got, nil
}

func (s *Store) allIDs(ctx context.Context) ([]string, error) {
	return s.ids(ctx, s.d.SQL(`SELECT id FROM {t}jobs WHERE dataset = ? ORDER BY created_ns, id`), s.dataset)
}

// copyJob writes j, finished, with its events and trace, unless it is there already.
func (s *Store) copyJob(ctx context.Context, j Job, evs []Event, tr *Trace) error {
	res := sql.NullString{}
	if j.Result != nil {
		b, err := marshal(j.Result)
		if err != nil {
			return err
		}
		res = sql.NullString{String: b, Valid: true}
	}
	spec, err := marshal(j.Spec)
	if err != nil {
		return err
	}
	err = s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		n, err := q.Exec(ctx, s.d.SQL(`INSERT INTO {t}jobs (`+jobColumns+`, dataset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`), j.ID, j.Identity, j.Key, spec, string(j.State), j.Cost.Epsilon, j.Cost.Delta, j.Guarantee,
			res, j.Error, j.Created.UnixNano(), j.Updated.UnixNano(), s.dataset)
		if err != nil || n == 0 {
			return err
		}
		for _, e := range evs {
			if _, err := q.Exec(ctx, s.q.insertEvent, j.ID, int64(e.Seq), e.Time.UnixNano(), string(e.State), e.Step, e.Total, e.Message); err != nil {
				return err
			}
		}
		if tr != nil {
			b, err := marshal(tr)
			if err != nil {
				return err
			}
			if _, err := q.Exec(ctx, s.q.putTrace, j.ID, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("jobs: copying job %s: %w", j.ID, err)
	}
	return nil
}

// recordGetter is what Adopt reads of the ledger: whether a job's charge is recorded.
type recordGetter interface {
	Get(ctx context.Context, a ledger.Account, key string) (ledger.Receipt, bool, error)
}
