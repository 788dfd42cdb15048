package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/sqlitedb"
)

// Store is where a Manager keeps its jobs, their events and their operator-only traces:
//
//   - OpenSQLite: a jobs.db file in one curator's state directory, for a curator whose
//     ledger is SQLite. Only that curator serves its jobs; a job left unfinished when it
//     stopped is marked failed when it starts again.
//   - OpenPostgres: tables in the PostgreSQL schema of the ledger, shared by every
//     curator replica of the dataset. Any replica answers for any job (status, events,
//     cancellation), and a job whose replica stops is taken over by another (see
//     Config.Lease).
//
// Both keep the same tables, written by the same statements through a ledger.Engine.
type Store struct {
	e ledger.Engine
	d ledger.Dialect
	// dataset is the curator's dataset in a shared store, whose tables may hold the jobs
	// of several datasets; "" in a jobs.db, which belongs to one curator.
	dataset string
	// shared: several managers use the store at once (leases, takeover).
	shared bool
	// now is an SQL expression for the database's clock in nanoseconds since the
	// epoch: leases are compared with one clock, whatever the replicas' clocks say.
	now string

	q struct {
		get, list, unfinished, insert, insertEvent, nextSeq, finishJob, events, trace, putTrace, count string
		candidates, claim, renew, cancel                                                               string
	}
}

// jobsDDL are the job tables, in types both SQLite and PostgreSQL accept. A job's row
// carries its lease: runner names the manager running it and lease_ns is when its claim
// ends unless renewed (database clock), 0 when its holder handed it over; cancel_requested
// asks whichever manager runs it to stop; takeovers counts the claims of a lease that
// expired (its holder died).
var jobsDDL = []string{
	`CREATE TABLE IF NOT EXISTS {t}jobs (
	id TEXT PRIMARY KEY,
	identity TEXT NOT NULL,
	idem_key TEXT NOT NULL,
	spec TEXT NOT NULL,
	state TEXT NOT NULL,
	cost_epsilon DOUBLE PRECISION NOT NULL,
	cost_delta DOUBLE PRECISION NOT NULL,
	guarantee TEXT NOT NULL,
	result TEXT,
	error TEXT NOT NULL DEFAULT '',
	created_ns BIGINT NOT NULL,
	updated_ns BIGINT NOT NULL,
	dataset TEXT NOT NULL DEFAULT '',
	runner TEXT NOT NULL DEFAULT '',
	lease_ns BIGINT NOT NULL DEFAULT 0,
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	takeovers INTEGER NOT NULL DEFAULT 0)`,
	`CREATE TABLE IF NOT EXISTS {t}job_events (
	job_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	time_ns BIGINT NOT NULL,
	state TEXT NOT NULL,
	step INTEGER NOT NULL,
	total INTEGER NOT NULL,
	message TEXT NOT NULL,
	PRIMARY KEY (job_id, seq))`,
	`CREATE TABLE IF NOT EXISTS {t}job_traces (
	job_id TEXT PRIMARY KEY,
	trace TEXT NOT NULL)`,
}

// leaseColumns are the columns a jobs.db written before leases lacks.
var leaseColumns = []string{
	"dataset TEXT NOT NULL DEFAULT ''",
	"runner TEXT NOT NULL DEFAULT ''",
	"lease_ns BIGINT NOT NULL DEFAULT 0",
	"cancel_requested INTEGER NOT NULL DEFAULT 0",
	"takeovers INTEGER NOT NULL DEFAULT 0",
}

var jobsIndexes = []string{
	`CREATE INDEX IF NOT EXISTS jobs_dataset_identity ON {t}jobs (dataset, identity, created_ns)`,
	`CREATE INDEX IF NOT EXISTS jobs_dataset_state ON {t}jobs (dataset, state)`,
}

// OpenSQLite opens (creating if needed) the job store in the SQLite file at path, with
// the settings of package sqlitedb, adding the lease columns to a file written before
// them.
func OpenSQLite(path string) (*Store, error) {
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises anyway
	s := newStore(ledger.SQLEngine(db), ledger.Dialect{}, "", false,
		`(CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000000)`)
	ctx := context.Background()
	err = s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		for _, stmt := range jobsDDL {
			if _, err := q.Exec(ctx, s.d.SQL(stmt)); err != nil {
				return err
			}
		}
		have := map[string]bool{}
		err := ledger.EachRow(ctx, q, `SELECT name FROM pragma_table_info('jobs')`, nil, func(scan func(...any) error) error {
			var name string
			err := scan(&name)
			have[name] = true
			return err
		})
		if err != nil {
			return err
		}
		for _, c := range leaseColumns {
			if !have[strings.Fields(c)[0]] {
				if _, err := q.Exec(ctx, `ALTER TABLE jobs ADD COLUMN `+c); err != nil {
					return err
				}
			}
		}
		for _, stmt := range jobsIndexes {
			if _, err := q.Exec(ctx, s.d.SQL(stmt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("jobs: initialise %s: %w", path, err)
	}
	return s, nil
}

// OpenPostgres returns the job store of dataset in the PostgreSQL database of e, whose
// dialect d qualifies the tables with the ledger's schema (pgledger.OpenEngine), creating
// the tables if missing. Every curator replica of the dataset opens the same store. The
// store owns e: Close closes it.
func OpenPostgres(ctx context.Context, e ledger.Engine, d ledger.Dialect, dataset string) (*Store, error) {
	if dataset == "" {
		return nil, errors.New("jobs: a shared job store needs the dataset's name")
	}
	s := newStore(e, d, dataset, true, `(CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS BIGINT) * 1000)`)
	err := e.Write(ctx, ledger.Lock{Migrate: true}, func(q ledger.Querier) error {
		for _, stmt := range append(append([]string{}, jobsDDL...), jobsIndexes...) {
			if _, err := q.Exec(ctx, d.SQL(stmt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: creating the job tables in postgres: %w", err)
	}
	return s, nil
}

const jobColumns = `id, identity, idem_key, spec, state, cost_epsilon, cost_delta, guarantee, result, error, created_ns, updated_ns`

// unfinishedStates are the states of jobs that may still change, as SQL.
const unfinishedStates = `('queued', 'running')`

func newStore(e ledger.Engine, d ledger.Dialect, dataset string, shared bool, now string) *Store {
	s := &Store{e: e, d: d, dataset: dataset, shared: shared, now: now}
	sq := func(q string) string { return d.SQL(strings.ReplaceAll(q, "{now}", now)) }
	s.q.get = sq(`SELECT ` + jobColumns + ` FROM {t}jobs WHERE id = ? AND dataset = ?`)
	s.q.list = sq(`SELECT ` + jobColumns + ` FROM {t}jobs WHERE identity = ? AND dataset = ? ORDER BY created_ns DESC, id`)
	s.q.unfinished = sq(`SELECT id FROM {t}jobs WHERE dataset = ? AND state IN ` + unfinishedStates)
	s.q.insert = sq(`INSERT INTO {t}jobs (` + jobColumns + `, dataset, runner, lease_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '', ?, ?, ?, ?, {now} + ?) ON CONFLICT (id) DO NOTHING`)
	s.q.insertEvent = sq(`INSERT INTO {t}job_events (job_id, seq, time_ns, state, step, total, message) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	s.q.nextSeq = sq(`SELECT COALESCE(MAX(seq), 0) + 1 FROM {t}job_events WHERE job_id = ?`)
	// Only the lease holder writes a job, and nothing changes a finished job: a result
	// is written once. lease_ns: CASE keeps the lease, or ends it (?=1) for a handover.
	s.q.finishJob = sq(`UPDATE {t}jobs SET state = ?, updated_ns = ?, result = COALESCE(?, result),
		error = CASE WHEN ? = '' THEN error ELSE ? END, lease_ns = CASE WHEN ? = 1 THEN 0 ELSE lease_ns END
		WHERE id = ? AND dataset = ? AND runner = ? AND state IN ` + unfinishedStates)
	s.q.events = sq(`SELECT seq, time_ns, state, step, total, message FROM {t}job_events WHERE job_id = ? AND seq > ? ORDER BY seq`)
	s.q.trace = sq(`SELECT trace FROM {t}job_traces WHERE job_id = ?`)
	s.q.putTrace = sq(`INSERT INTO {t}job_traces (job_id, trace) VALUES (?, ?) ON CONFLICT (job_id) DO UPDATE SET trace = excluded.trace`)
	s.q.count = sq(`SELECT state, COUNT(*) FROM {t}jobs WHERE dataset = ? GROUP BY state`)
	s.q.candidates = sq(`SELECT id, runner, lease_ns FROM {t}jobs
		WHERE dataset = ? AND state IN ` + unfinishedStates + ` AND lease_ns < {now} ORDER BY created_ns, id LIMIT ?`)
	// A compare-and-set on the lease seen: of replicas claiming one expired job at once,
	// exactly one changes the row.
	s.q.claim = sq(`UPDATE {t}jobs SET runner = ?, lease_ns = {now} + ?,
		takeovers = takeovers + CASE WHEN lease_ns = 0 THEN 0 ELSE 1 END
		WHERE id = ? AND runner = ? AND lease_ns = ? AND state IN ` + unfinishedStates)
	s.q.renew = sq(`UPDATE {t}jobs SET lease_ns = {now} + ? WHERE id = ? AND runner = ? AND state IN ` + unfinishedStates)
	s.q.cancel = sq(`UPDATE {t}jobs SET cancel_requested = 1 WHERE id = ? AND dataset = ? AND state IN ` + unfinishedStates)
	return s
}

// Shared reports whether several curator replicas use the store at once.
func (s *Store) Shared() bool { return s.shared }

// Close closes the store's database handle.
func (s *Store) Close() error { return s.e.Close() }

func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("jobs: %w", err)
	}
	return string(b), nil
}

func scanJob(scan func(...any) error) (Job, error) {
	var (
		j                Job
		spec, state      string
		result           sql.NullString
		created, updated int64
	)
	if err := scan(&j.ID, &j.Identity, &j.Key, &spec, &state, &j.Cost.Epsilon, &j.Cost.Delta, &j.Guarantee, &result, &j.Error, &created, &updated); err != nil {
		return Job{}, err
	}
	if err := json.Unmarshal([]byte(spec), &j.Spec); err != nil {
		return Job{}, fmt.Errorf("jobs: stored spec of %s: %w", j.ID, err)
	}
	if result.Valid {
		j.Result = new(Result)
		if err := json.Unmarshal([]byte(result.String), j.Result); err != nil {
			return Job{}, fmt.Errorf("jobs: stored result of %s: %w", j.ID, err)
		}
	}
	j.State = State(state)
	j.Created, j.Updated = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return j, nil
}

// getJob reads job id in q.
func (s *Store) getJob(ctx context.Context, q ledger.Querier, id string) (Job, error) {
	var j Job
	found := false
	err := ledger.EachRow(ctx, q, s.q.get, []any{id, s.dataset}, func(scan func(...any) error) (err error) {
		j, err = scanJob(scan)
		found = true
		return err
	})
	switch {
	case err != nil:
		return Job{}, fmt.Errorf("jobs: %w", err)
	case !found:
		return Job{}, ErrNotFound
	}
	return j, nil
}

// insert stores a new job with its first event, claimed by runner for lease, or returns
// the existing job with that id.
func (s *Store) insert(ctx context.Context, j Job, runner string, lease time.Duration) (Job, bool, error) {
	spec, err := json.Marshal(j.Spec)
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	var out Job
	created := false
	err = s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		now := j.Created.UnixNano()
		n, err := q.Exec(ctx, s.q.insert, j.ID, j.Identity, j.Key, string(spec), string(j.State), j.Cost.Epsilon, j.Cost.Delta, j.Guarantee,
			now, now, s.dataset, runner, lease.Nanoseconds())
		if err != nil {
			return err
		}
		if n == 0 { // there is one already
			out, err = s.getJob(ctx, q, j.ID)
			return err
		}
		if _, err := q.Exec(ctx, s.q.insertEvent, j.ID, 1, now, string(j.State), 0, 0, "accepted; privacy cost charged"); err != nil {
			return err
		}
		out, created = j, true
		return nil
	})
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	return out, created, nil
}

func (s *Store) get(ctx context.Context, id string) (Job, error) {
	var j Job
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		var err error
		j, err = s.getJob(ctx, q, id)
		return err
	})
	return j, err
}

func (s *Store) list(ctx context.Context, identity string) ([]Job, error) {
	var out []Job
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		out = out[:0] // an engine may run fn again (ledger.Engine)
		return ledger.EachRow(ctx, q, s.q.list, []any{identity, s.dataset}, func(scan func(...any) error) error {
			j, err := scanJob(scan)
			out = append(out, j)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return out, nil
}

// unfinished returns the ids of jobs not in a terminal state.
func (s *Store) unfinished(ctx context.Context) ([]string, error) {
	return s.ids(ctx, s.q.unfinished, s.dataset)
}

// ids returns the first column of query's rows, job ids.
func (s *Store) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	var ids []string
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		ids = ids[:0] // an engine may run fn again
		return ledger.EachRow(ctx, q, query, args, func(scan func(...any) error) error {
			var id string
			err := scan(&id)
			ids = append(ids, id)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return ids, nil
}

// errLeaseLost is returned by writes of a manager that no longer holds a job's lease
// (another manager took the job over), or for a job that is already finished.
var errLeaseLost = errors.New("jobs: the job is no longer this runner's (taken over, or finished)")

// write says how appendEvent changes a job's row.
type write struct {
	runner   string // the lease holder; the write fails with errLeaseLost otherwise
	handover bool   // end the lease, so another manager takes the job over at once
}

// appendEvent records an event (and the job's new state, result or error) in one
// transaction, and returns the event with its sequence number. Only w.runner, the
// job's lease holder, may write, and only while the job is unfinished: errLeaseLost
// otherwise, with nothing written.
func (s *Store) appendEvent(ctx context.Context, e Event, result *Result, errMsg string, w write) (Event, error) {
	var res sql.NullString
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			return Event{}, fmt.Errorf("jobs: %w", err)
		}
		res = sql.NullString{String: string(b), Valid: true}
	}
	var trace []byte
	if result != nil && result.Trace != nil {
		b, err := json.Marshal(result.Trace)
		if err != nil {
			return Event{}, fmt.Errorf("jobs: %w", err)
		}
		trace = b
	}
	handover := 0
	if w.handover {
		handover = 1
	}
	now := e.Time.UnixNano()
	err := s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		// The job's row first: it locks the row (PostgreSQL), so its events are
		// numbered one writer at a time.
		n, err := q.Exec(ctx, s.q.finishJob, string(e.State), now, res, errMsg, errMsg, handover, e.JobID, s.dataset, w.runner)
		if err != nil {
			return err
		}
		if n == 0 {
			return errLeaseLost
		}
		if _, err := ledger.QueryRow(ctx, q, s.q.nextSeq, []any{e.JobID}, &e.Seq); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, s.q.insertEvent, e.JobID, e.Seq, now, string(e.State), e.Step, e.Total, e.Message); err != nil {
			return err
		}
		if trace != nil {
			if _, err := q.Exec(ctx, s.q.putTrace, e.JobID, string(trace)); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errLeaseLost) {
		return Event{}, err
	}
	if err != nil {
		return Event{}, fmt.Errorf("jobs: %w", err)
	}
	return e, nil
}

// trace returns a job's operator-only trace, ErrNotFound if it has none.
func (s *Store) trace(ctx context.Context, id string) (*Trace, error) {
	var b string
	var found bool
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		var err error
		found, err = ledger.QueryRow(ctx, q, s.q.trace, []any{id}, &b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if !found {
		return nil, ErrNotFound
	}
	t := new(Trace)
	if err := json.Unmarshal([]byte(b), t); err != nil {
		return nil, fmt.Errorf("jobs: stored trace of %s: %w", id, err)
	}
	return t, nil
}

func (s *Store) events(ctx context.Context, id string, after uint64) ([]Event, error) {
	var out []Event
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		out = out[:0] // an engine may run fn again (ledger.Engine)
		return ledger.EachRow(ctx, q, s.q.events, []any{id, int64(after)}, func(scan func(...any) error) error {
			e := Event{JobID: id}
			var t, seq int64
			var state string
			err := scan(&seq, &t, &state, &e.Step, &e.Total, &e.Message)
			e.Seq, e.Time, e.State = uint64(seq), time.Unix(0, t).UTC(), State(state)
			out = append(out, e)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return out, nil
}

// countByState returns how many jobs are in each state.
func (s *Store) countByState(ctx context.Context) (map[State]int, error) {
	out := map[State]int{}
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		return ledger.EachRow(ctx, q, s.q.count, []any{s.dataset}, func(scan func(...any) error) error {
			var st string
			var n int
			err := scan(&st, &n)
			out[State(st)] = n
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return out, nil
}

// claimed is a job claimed by claim.
type claimed struct {
	Job
	takeovers int  // how many times a lease of it expired, this one included
	cancel    bool // its cancellation was asked for
}

// claim takes over at most limit unfinished jobs whose lease has expired (or was
// handed over), for runner and lease.
func (s *Store) claim(ctx context.Context, runner string, lease time.Duration, limit int) ([]claimed, error) {
	type seen struct {
		id, runner string
		lease      int64
	}
	var cands []seen
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		cands = cands[:0] // an engine may run fn again (ledger.Engine)
		return ledger.EachRow(ctx, q, s.q.candidates, []any{s.dataset, limit}, func(scan func(...any) error) error {
			var c seen
			err := scan(&c.id, &c.runner, &c.lease)
			cands = append(cands, c)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	var out []claimed
	for _, c := range cands {
		var j claimed
		err := s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
			n, err := q.Exec(ctx, s.q.claim, runner, lease.Nanoseconds(), c.id, c.runner, c.lease)
			if err != nil || n == 0 {
				return err
			}
			if j.Job, err = s.getJob(ctx, q, c.id); err != nil {
				return err
			}
			var cancel int
			if _, err := ledger.QueryRow(ctx, q, s.d.SQL(`SELECT takeovers, cancel_requested FROM {t}jobs WHERE id = ?`), []any{c.id}, &j.takeovers, &cancel); err != nil {
				return err
			}
			j.cancel = cancel != 0
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("jobs: %w", err)
		}
		if j.ID != "" {
			out = append(out, j)
		}
	}
	return out, nil
}

// renew extends runner's lease on job id and reports whether its cancellation was
// asked for; errLeaseLost if runner no longer holds it.
func (s *Store) renew(ctx context.Context, id, runner string, lease time.Duration) (cancel bool, err error) {
	err = s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		n, err := q.Exec(ctx, s.q.renew, lease.Nanoseconds(), id, runner)
		if err != nil {
			return err
		}
		if n == 0 {
			return errLeaseLost
		}
		return nil
	})
	if errors.Is(err, errLeaseLost) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("jobs: %w", err)
	}
	return s.cancelRequested(ctx, id)
}

// cancelRequested reports whether job id's cancellation was asked for.
func (s *Store) cancelRequested(ctx context.Context, id string) (bool, error) {
	var c int
	err := s.e.Read(ctx, func(q ledger.Querier) error {
		_, err := ledger.QueryRow(ctx, q, s.d.SQL(`SELECT cancel_requested FROM {t}jobs WHERE id = ?`), []any{id}, &c)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("jobs: %w", err)
	}
	return c != 0, nil
}

// requestCancel asks whichever manager runs job id to stop it.
func (s *Store) requestCancel(ctx context.Context, id string) error {
	err := s.e.Write(ctx, ledger.Lock{}, func(q ledger.Querier) error {
		_, err := q.Exec(ctx, s.q.cancel, id, s.dataset)
		return err
	})
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	return nil
}

// Reader reads a curator's job store for its operator — every identity's jobs, their
// events and their operator-only traces — without marking anything or running jobs, so
// it may be opened while the curator serves (SQLite WAL readers do not block it).
type Reader struct{ s *Store }

// OpenReader opens stateDir's jobs.db for reading.
func OpenReader(stateDir string) (*Reader, error) {
	path := filepath.Join(stateDir, "jobs.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	s, err := OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	return &Reader{s: s}, nil
}

// NewReader reads s (for instance a PostgreSQL store, OpenPostgres); Close closes s.
func NewReader(s *Store) *Reader { return &Reader{s: s} }

// Close closes the store.
func (r *Reader) Close() error { return r.s.Close() }

// Job returns job id (ErrNotFound if there is none).
func (r *Reader) Job(ctx context.Context, id string) (Job, error) { return r.s.get(ctx, id) }

// Events returns job id's events.
func (r *Reader) Events(ctx context.Context, id string) ([]Event, error) {
	return r.s.events(ctx, id, 0)
}

// Trace returns job id's operator-only trace (ErrNotFound if it left none).
func (r *Reader) Trace(ctx context.Context, id string) (*Trace, error) { return r.s.trace(ctx, id) }
