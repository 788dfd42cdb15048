package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteBusyTimeoutMS is how long a writer waits for another connection or
// process holding the write lock before failing with SQLITE_BUSY.
const sqliteBusyTimeoutMS = 30000

var sqliteDDL = []string{
	`CREATE TABLE IF NOT EXISTS schema_version (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS entries (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		entry_key TEXT NOT NULL,
		kind TEXT NOT NULL,
		description TEXT NOT NULL,
		epsilon REAL NOT NULL CHECK (epsilon >= 0),
		delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
		result BLOB,
		created_ns INTEGER NOT NULL,
		UNIQUE (dataset, identity, entry_key))`,
	`CREATE INDEX IF NOT EXISTS entries_dataset_seq ON entries (dataset, seq)`,
	`CREATE TABLE IF NOT EXISTS totals (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		epsilon TEXT NOT NULL,
		delta TEXT NOT NULL,
		charges INTEGER NOT NULL,
		PRIMARY KEY (dataset, identity))`,
}

// OpenSQLite opens (creating if needed) the ledger in the SQLite file at
// path, with the modernc.org/sqlite driver. The database runs in WAL mode
// with synchronous=FULL, so a commit is on disk (the WAL is fsynced) before
// Charge returns, and every write transaction starts with BEGIN IMMEDIATE,
// so the check-and-charge is atomic also across processes sharing the
// file. Writers wait up to 30 s for the write lock. The file must be on a
// local file system (SQLite's WAL needs shared memory between processes).
func OpenSQLite(path string, limits Limits) (Store, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	switch {
	case path == "":
		return nil, fmt.Errorf("ledger: sqlite path must not be empty")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return nil, fmt.Errorf("ledger: sqlite path must name a file, got %q", path)
	case strings.ContainsAny(path, "?#\x00"):
		return nil, fmt.Errorf("ledger: sqlite path must not contain '?', '#' or NUL, got %q", path)
	}
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate",
		path, sqliteBusyTimeoutMS)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	e := &sqliteEngine{db: db, sem: make(chan struct{}, 1)}
	if err := e.checkPragmas(); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w (sqlite %s)", err, path)
	}
	s := newStore(e, limits, "", false)
	if err := s.migrate(context.Background(), sqliteDDL); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w (sqlite %s)", err, path)
	}
	return s, nil
}

// sqliteEngine runs transactions through database/sql. Writers of one
// Store queue on sem in the process, so that the database's busy handler
// (a sleep-and-retry loop) only arbitrates between processes or Stores.
type sqliteEngine struct {
	db  *sql.DB
	sem chan struct{}
}

func (e *sqliteEngine) write(ctx context.Context, _ lockKey, fn func(q querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.sem }()
	tx, err := e.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	if err := fn(sqlQuerier{tx}); err != nil {
		tx.Rollback() //nolint:errcheck // fn's error is the one to report
		return err
	}
	return tx.Commit()
}

func (e *sqliteEngine) read(_ context.Context, fn func(q querier) error) error {
	return fn(sqlQuerier{e.db})
}

func (e *sqliteEngine) close() error { return e.db.Close() }

// checkPragmas verifies that the durability settings took effect.
func (e *sqliteEngine) checkPragmas() error {
	ctx := context.Background()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("ledger: sqlite: %w", err)
	}
	defer conn.Close()
	var mode string
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("ledger: sqlite: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("ledger: sqlite: %w", err)
	}
	if !strings.EqualFold(mode, "wal") || sync != 2 {
		return fmt.Errorf("ledger: sqlite: journal_mode=%s synchronous=%d, want wal and 2 (FULL)", mode, sync)
	}
	return nil
}

// sqlQuerier adapts *sql.DB and *sql.Tx.
type sqlQuerier struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (s sqlQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) query(ctx context.Context, query string, args ...any) (rowIter, error) {
	rows, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
