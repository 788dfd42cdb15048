package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/privbo/privbo/pkg/sqlitedb"
)

// sqliteTypes are SQLite's column types; seq and id must be INTEGER PRIMARY KEY to
// be the rowid.
var sqliteTypes = ColumnTypes{Serial: "INTEGER PRIMARY KEY AUTOINCREMENT", Real: "REAL", Int: "INTEGER", Blob: "BLOB"}

var sqliteDDL = SchemaDDL{
	Base: []string{
		`CREATE TABLE IF NOT EXISTS schema_version (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		version INTEGER NOT NULL)`,
	},
	Tables: sqliteTypes.Tables(),
	ToV4: func() []string {
		var out []string
		for _, c := range sqliteTypes.v4Columns() {
			out = append(out, "ALTER TABLE entries ADD COLUMN "+c)
		}
		return out
	}(),
	// SQLite cannot add a NOT NULL column without a default, so the entries
	// table is rebuilt (https://www.sqlite.org/lang_altertable.html, "Making
	// Other Kinds Of Table Schema Changes"), keeping every seq; the rename
	// carries the AUTOINCREMENT counter along.
	FromV1: []string{
		sqliteTypes.entries("entries_v2", false),
		`INSERT INTO entries_v2
		(seq, dataset, identity, entry_key, kind, description, epsilon, delta, result, created_ns, relation)
		SELECT seq, dataset, identity, entry_key, kind, description, epsilon, delta, result, created_ns, ''
		FROM entries ORDER BY seq`,
		`DROP TABLE entries`,
		`ALTER TABLE entries_v2 RENAME TO entries`,
		`DROP TABLE totals`,
	},
}

// OpenSQLite opens (creating if needed) the ledger in the SQLite file at
// path, with the settings of package sqlitedb: a commit is on disk before
// Charge returns, and every write transaction starts with BEGIN IMMEDIATE,
// so the check-and-charge is atomic also across processes sharing the file.
func OpenSQLite(path string, limits Limits) (*Ledger, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	e := newSQLiteEngine(db)
	s, err := OpenEngine(context.Background(), e, Dialect{}, sqliteDDL, limits)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w (sqlite %s)", err, path)
	}
	return s, nil
}

// SQLEngine returns an Engine running transactions on db, a database/sql SQLite handle
// opened by package sqlitedb (every write transaction BEGIN IMMEDIATE), for stores that
// keep tables of their own in SQLite with the ledger's Querier (the jobs of package
// jobs). Its writers queue in the process, as the ledger's own do.
func SQLEngine(db *sql.DB) Engine { return newSQLiteEngine(db) }

func newSQLiteEngine(db *sql.DB) *sqliteEngine {
	return &sqliteEngine{db: db, sem: make(chan struct{}, 1)}
}

// sqliteEngine runs transactions through database/sql. Writers of one
// Ledger queue on sem in the process, so that the database's busy handler
// (a sleep-and-retry loop) only arbitrates between processes or Ledgers.
//
// Its statements are prepared once per connection and kept (stmts): compiling a
// statement is about a third of a charge's CPU in the pure-Go SQLite driver
// (docs/EXPERIMENTS.md, "Charge latency"), and a charge runs the same dozen
// statements every time. A text seen for the first time runs unprepared and is
// prepared at the start of the next transaction or read (preparePending), never
// inside one: preparing takes a connection from the pool, which may be the one the
// transaction holds (the job store has one). Tx.StmtContext then reuses the
// statement already prepared on the transaction's connection (database/sql prepares a
// cached statement lazily on each pooled connection). At most maxCachedStmts distinct
// texts are kept (an IN list is one text per length); texts beyond them run
// unprepared.
type sqliteEngine struct {
	db  *sql.DB
	sem chan struct{}

	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool // seen, to be prepared
	closed  bool
}

// maxCachedStmts bounds the engine's statement cache.
const maxCachedStmts = 256

// stmt is the cached statement of query, or nil: a text not prepared yet is queued
// for preparePending while there is room.
func (e *sqliteEngine) stmt(query string) *sql.Stmt {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st, ok := e.stmts[query]; ok {
		return st
	}
	if !e.closed && len(e.stmts)+len(e.pending) < maxCachedStmts {
		if e.pending == nil {
			e.pending = make(map[string]bool)
		}
		e.pending[query] = true
	}
	return nil
}

// preparePending prepares the texts queued by stmt. It runs outside any transaction
// of the engine. A text that fails to prepare is dropped: it keeps running
// unprepared, where its error is reported as before.
func (e *sqliteEngine) preparePending(ctx context.Context) {
	e.mu.Lock()
	if len(e.pending) == 0 {
		e.mu.Unlock()
		return
	}
	queries := make([]string, 0, len(e.pending))
	for q := range e.pending {
		queries = append(queries, q)
	}
	clear(e.pending)
	e.mu.Unlock()
	for _, q := range queries {
		st, err := e.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		e.mu.Lock()
		if _, dup := e.stmts[q]; dup || e.closed {
			st.Close()
		} else {
			if e.stmts == nil {
				e.stmts = make(map[string]*sql.Stmt)
			}
			e.stmts[q] = st
		}
		e.mu.Unlock()
	}
}

func (e *sqliteEngine) Write(ctx context.Context, _ Lock, fn func(q Querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.sem }()
	e.preparePending(ctx)
	tx, err := e.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	if err := fn(sqlQuerier{e: e, tx: tx}); err != nil {
		tx.Rollback() //nolint:errcheck // fn's error is the one to report
		return err
	}
	return tx.Commit()
}

func (e *sqliteEngine) Read(ctx context.Context, fn func(q Querier) error) error {
	e.preparePending(ctx)
	return fn(sqlQuerier{e: e})
}

func (e *sqliteEngine) Close() error {
	e.mu.Lock()
	for _, st := range e.stmts {
		st.Close()
	}
	e.stmts, e.closed = nil, true // preparePending closes what it prepares from now on
	e.mu.Unlock()
	return e.db.Close()
}

// sqlQuerier runs statements in the transaction tx, or on the pool when tx is nil,
// through the engine's cached statements.
type sqlQuerier struct {
	e  *sqliteEngine
	tx *sql.Tx
}

// prepared is query's cached statement bound to the querier's transaction, or nil.
func (s sqlQuerier) prepared(ctx context.Context, query string) *sql.Stmt {
	st := s.e.stmt(query)
	if st == nil || s.tx == nil {
		return st
	}
	return s.tx.StmtContext(ctx, st)
}

func (s sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	switch st := s.prepared(ctx, query); {
	case st != nil:
		res, err = st.ExecContext(ctx, args...)
	case s.tx != nil:
		res, err = s.tx.ExecContext(ctx, query, args...)
	default:
		res, err = s.e.db.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	var rows *sql.Rows
	var err error
	switch st := s.prepared(ctx, query); {
	case st != nil:
		rows, err = st.QueryContext(ctx, args...)
	case s.tx != nil:
		rows, err = s.tx.QueryContext(ctx, query, args...)
	default:
		rows, err = s.e.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
