package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/privbo/privbo/pkg/sqlitedb"
)

// store keeps jobs and their events in a SQLite file (WAL, synchronous=FULL).
type store struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS jobs (
	id TEXT PRIMARY KEY,
	identity TEXT NOT NULL,
	idem_key TEXT NOT NULL,
	spec TEXT NOT NULL,
	state TEXT NOT NULL,
	cost_epsilon REAL NOT NULL,
	cost_delta REAL NOT NULL,
	guarantee TEXT NOT NULL,
	result TEXT,
	error TEXT NOT NULL DEFAULT '',
	created_ns INTEGER NOT NULL,
	updated_ns INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_identity ON jobs(identity, created_ns);
CREATE TABLE IF NOT EXISTS job_events (
	job_id TEXT NOT NULL,
	seq INTEGER NOT NULL,
	time_ns INTEGER NOT NULL,
	state TEXT NOT NULL,
	step INTEGER NOT NULL,
	total INTEGER NOT NULL,
	message TEXT NOT NULL,
	PRIMARY KEY (job_id, seq)
);
CREATE TABLE IF NOT EXISTS job_traces (
	job_id TEXT PRIMARY KEY,
	trace TEXT NOT NULL
);`

func openStore(path string) (*store, error) {
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	db.SetMaxOpenConns(1) // one writer; SQLite serialises anyway
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("jobs: initialise %s: %w", path, err)
	}
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

const jobColumns = `id, identity, idem_key, spec, state, cost_epsilon, cost_delta, guarantee, result, error, created_ns, updated_ns`

func scanJob(row interface{ Scan(...any) error }) (Job, error) {
	var (
		j                Job
		spec, state      string
		result           sql.NullString
		created, updated int64
	)
	if err := row.Scan(&j.ID, &j.Identity, &j.Key, &spec, &state, &j.Cost.Epsilon, &j.Cost.Delta, &j.Guarantee, &result, &j.Error, &created, &updated); err != nil {
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

// insert stores a new job with its first event, or returns the existing job with that id.
func (s *store) insert(ctx context.Context, j Job) (Job, bool, error) {
	spec, err := json.Marshal(j.Spec)
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	defer tx.Rollback()
	existing, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, j.ID))
	if err == nil {
		return existing, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	now := j.Created.UnixNano()
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (`+jobColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '', ?, ?)`,
		j.ID, j.Identity, j.Key, string(spec), string(j.State), j.Cost.Epsilon, j.Cost.Delta, j.Guarantee, now, now); err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO job_events VALUES (?, 1, ?, ?, 0, 0, ?)`, j.ID, now, string(j.State), "accepted; privacy cost charged"); err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Job{}, false, fmt.Errorf("jobs: %w", err)
	}
	return j, true, nil
}

func (s *store) get(ctx context.Context, id string) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, fmt.Errorf("jobs: %w", err)
	}
	return j, nil
}

func (s *store) list(ctx context.Context, identity string) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE identity = ? ORDER BY created_ns DESC, id`, identity)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// unfinished returns the ids of jobs not in a terminal state.
func (s *store) unfinished(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM jobs WHERE state IN (?, ?)`, string(Queued), string(Running))
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// appendEvent records an event (and the job's new state, result or error) in one
// transaction, and returns the event with its sequence number.
func (s *store) appendEvent(ctx context.Context, e Event, result *Result, errMsg string) (Event, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Event{}, fmt.Errorf("jobs: %w", err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM job_events WHERE job_id = ?`, e.JobID).Scan(&e.Seq); err != nil {
		return Event{}, fmt.Errorf("jobs: %w", err)
	}
	now := e.Time.UnixNano()
	if _, err := tx.ExecContext(ctx, `INSERT INTO job_events VALUES (?, ?, ?, ?, ?, ?, ?)`, e.JobID, e.Seq, now, string(e.State), e.Step, e.Total, e.Message); err != nil {
		return Event{}, fmt.Errorf("jobs: %w", err)
	}
	var res sql.NullString
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			return Event{}, fmt.Errorf("jobs: %w", err)
		}
		res = sql.NullString{String: string(b), Valid: true}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, updated_ns = ?, result = COALESCE(?, result), error = CASE WHEN ? = '' THEN error ELSE ? END WHERE id = ?`,
		string(e.State), now, res, errMsg, errMsg, e.JobID); err != nil {
		return Event{}, fmt.Errorf("jobs: %w", err)
	}
	if result != nil && result.Trace != nil {
		b, err := json.Marshal(result.Trace)
		if err != nil {
			return Event{}, fmt.Errorf("jobs: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO job_traces VALUES (?, ?)`, e.JobID, string(b)); err != nil {
			return Event{}, fmt.Errorf("jobs: %w", err)
		}
	}
	return e, tx.Commit()
}

// trace returns a job's operator-only trace, ErrNotFound if it has none.
func (s *store) trace(ctx context.Context, id string) (*Trace, error) {
	var b string
	err := s.db.QueryRowContext(ctx, `SELECT trace FROM job_traces WHERE job_id = ?`, id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	t := new(Trace)
	if err := json.Unmarshal([]byte(b), t); err != nil {
		return nil, fmt.Errorf("jobs: stored trace of %s: %w", id, err)
	}
	return t, nil
}

func (s *store) events(ctx context.Context, id string, after uint64) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, time_ns, state, step, total, message FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq`, id, after)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{JobID: id}
		var t int64
		var state string
		if err := rows.Scan(&e.Seq, &t, &state, &e.Step, &e.Total, &e.Message); err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		e.Time, e.State = time.Unix(0, t).UTC(), State(state)
		out = append(out, e)
	}
	return out, rows.Err()
}

// countByState returns how many jobs are in each state.
func (s *store) countByState(ctx context.Context) (map[State]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM jobs GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	defer rows.Close()
	out := map[State]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		out[State(st)] = n
	}
	return out, rows.Err()
}

// Reader reads a curator's job store for its operator — every identity's jobs, their
// events and their operator-only traces — without marking anything or running jobs, so
// it may be opened while the curator serves (SQLite WAL readers do not block it).
type Reader struct{ s *store }

// OpenReader opens stateDir's jobs.db for reading.
func OpenReader(stateDir string) (*Reader, error) {
	path := filepath.Join(stateDir, "jobs.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	s, err := openStore(path)
	if err != nil {
		return nil, err
	}
	return &Reader{s: s}, nil
}

// Close closes the store.
func (r *Reader) Close() error { return r.s.close() }

// Job returns job id (ErrNotFound if there is none).
func (r *Reader) Job(ctx context.Context, id string) (Job, error) { return r.s.get(ctx, id) }

// Events returns job id's events.
func (r *Reader) Events(ctx context.Context, id string) ([]Event, error) {
	return r.s.events(ctx, id, 0)
}

// Trace returns job id's operator-only trace (ErrNotFound if it left none).
func (r *Reader) Trace(ctx context.Context, id string) (*Trace, error) { return r.s.trace(ctx, id) }
