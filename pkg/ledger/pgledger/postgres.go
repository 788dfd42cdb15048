// Package pgledger is the PostgreSQL engine of the privacy ledger (package
// ledger) through github.com/jackc/pgx/v5. It lives apart from package ledger
// so that programs that never open PostgreSQL (the modeler) do not link the
// driver; the ledger's logic and its conformance suite (package ledgertest)
// are shared with the SQLite store.
//
// Open is the ledger (*ledger.Ledger); OpenBlobs is the curator's store of
// released matrices (blob.Ledger) in the same schema, so that curator replicas
// sharing the ledger share the releases too, without a shared disk.
//
// Both keep their connections in a pgxpool.Pool whose connections are checked
// before use and replaced when the server drops them, bound every call by a
// call timeout (Options.CallTimeout), so that an unreachable database fails
// calls with ledger.ErrUnavailable instead of hanging, and run again a call
// whose connection was lost before anything was committed (pgEngine says
// which calls; docs/DESIGN.md, "A ledger that fails fast and recovers by
// itself").
package pgledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/privbo/privbo/pkg/ledger"
)

// Options configure Open.
type Options struct {
	// Schema holds the ledger's tables; it is created if missing. Empty
	// means "privbo". It must match [a-z_][a-z0-9_]* (at most 63 bytes)
	// and not start with "pg_".
	Schema string
	// MaxConns bounds the connections the Ledger opens; 0 means
	// DefaultMaxConns.
	MaxConns int
	// CallTimeout bounds each call on the Ledger (a charge, a balance, ...),
	// connecting and retries included; a call that gets no answer within it
	// fails with an error wrapping ledger.ErrUnavailable. It also bounds each
	// new connection's connect time (unless the DSN's connect_timeout is
	// shorter). For the blob store (OpenBlobs) it bounds each statement of a
	// Put, the commit and the wait for a connection, each on its own, and each
	// read of a chunk. 0 means DefaultCallTimeout; negative, no bound but the
	// caller's context.
	CallTimeout time.Duration
}

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = "privbo"

func (o Options) schema() (string, error) {
	s := cmp.Or(o.Schema, DefaultSchema)
	if len(s) > 63 || len(s) >= 3 && s[:3] == "pg_" {
		return "", fmt.Errorf("pgledger: postgres schema %q must be at most 63 bytes and not start with pg_", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return "", fmt.Errorf("pgledger: postgres schema %q must match [a-z_][a-z0-9_]*", s)
	}
	return s, nil
}

var postgresDDL = ledger.SchemaDDL{
	Base: []string{
		`CREATE SCHEMA IF NOT EXISTS {schema}`,
		`CREATE TABLE IF NOT EXISTS {t}schema_version (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		version INTEGER NOT NULL)`,
	},
	Tables: ledger.ColumnTypes{Serial: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
		Real: "DOUBLE PRECISION", Int: "BIGINT", Blob: "BYTEA"}.Tables(),
	ToV4: []string{
		`ALTER TABLE {t}entries ADD COLUMN IF NOT EXISTS patient_epsilon DOUBLE PRECISION NOT NULL DEFAULT 0`,
		`ALTER TABLE {t}entries ADD COLUMN IF NOT EXISTS patient_delta DOUBLE PRECISION NOT NULL DEFAULT 0`,
		`ALTER TABLE {t}entries ADD COLUMN IF NOT EXISTS patient_rho DOUBLE PRECISION NOT NULL DEFAULT 0`,
		`ALTER TABLE {t}entries ADD COLUMN IF NOT EXISTS patient_unbounded BIGINT NOT NULL DEFAULT 0`,
	},
	FromV1: []string{
		`ALTER TABLE {t}entries ADD COLUMN relation TEXT`,
		`DROP TABLE {t}totals`,
	},
	FromV1Done: []string{
		`ALTER TABLE {t}entries ALTER COLUMN relation SET NOT NULL`,
	},
}

// Open opens the ledger in a PostgreSQL database through
// github.com/jackc/pgx/v5, creating the schema and tables if missing.
// Several Ledgers, in one or several curator replicas, may share one schema
// and so one budget: each check-and-charge transaction first takes
// pg_advisory_xact_lock on (schema, dataset), which serialises the charges
// of a dataset until commit, and sets synchronous_commit=on so that the
// commit is flushed to the server's WAL before Charge returns (this relies on
// the server running with fsync=on, its default).
func Open(ctx context.Context, dsn string, opt Options, limits ledger.Limits) (*ledger.Ledger, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	e, err := connect(ctx, dsn, opt, false)
	if err != nil {
		return nil, err
	}
	s, err := ledger.OpenEngine(ctx, e, e.dialect(), postgresDDL, limits)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("%w (postgres schema %s)", err, e.schema)
	}
	return s, nil
}

// The pool's settings (pgxpool.Config). A connection that has been idle for more
// than a second is pinged before it is handed out (pgxpool's default ShouldPing),
// within PingTimeout; the health check closes connections past their lifetime or
// idle time every HealthCheckPeriod, so that connections through a proxy or a
// failed-over address do not live forever.
const (
	// DefaultMaxConns is Options.MaxConns's default.
	DefaultMaxConns = 8
	// DefaultCallTimeout is Options.CallTimeout's default.
	DefaultCallTimeout = 5 * time.Second

	healthCheckPeriod     = 5 * time.Second
	maxConnLifetime       = 30 * time.Minute
	maxConnLifetimeJitter = 5 * time.Minute
	maxConnIdleTime       = 5 * time.Minute
	pingTimeout           = time.Second
	// rollbackTimeout bounds the rollback of a failed transaction; a connection
	// whose rollback fails is closed (pgxpool closes a connection released inside
	// a transaction).
	rollbackTimeout = 2 * time.Second
	// applicationName is the connections' application_name (pg_stat_activity),
	// unless the DSN names one.
	applicationName = "privbo"
)

// connect returns an engine on opt's schema of the database at dsn, having
// connected once so that a wrong DSN fails here, not at the first use.
//
// With pingAlways every connection is pinged before it is handed out, not only
// those idle for a second: for a store whose transactions cannot be run again
// (a blob's Put), a connection the server dropped is found out before it is used.
func connect(ctx context.Context, dsn string, opt Options, pingAlways bool) (*pgEngine, error) {
	schema, err := opt.schema()
	if err != nil {
		return nil, err
	}
	if opt.MaxConns < 0 {
		return nil, fmt.Errorf("pgledger: postgres MaxConns must be non-negative, got %d", opt.MaxConns)
	}
	maxConns := cmp.Or(opt.MaxConns, DefaultMaxConns)
	timeout := opt.CallTimeout
	switch {
	case timeout == 0:
		timeout = DefaultCallTimeout
	case timeout < 0:
		timeout = 0
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgledger: postgres: %w", err)
	}
	cfg.MaxConns = int32(min(maxConns, math.MaxInt32))
	cfg.MinConns = 0
	cfg.HealthCheckPeriod = healthCheckPeriod
	cfg.MaxConnLifetime = maxConnLifetime
	cfg.MaxConnLifetimeJitter = maxConnLifetimeJitter
	cfg.MaxConnIdleTime = maxConnIdleTime
	cfg.PingTimeout = pingTimeout
	if pingAlways {
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	}
	cc := cfg.ConnConfig
	if timeout > 0 && (cc.ConnectTimeout == 0 || cc.ConnectTimeout > timeout) {
		// A connection is made within a call (its Acquire), or for the pool in
		// the background: neither may wait for longer than a call.
		cc.ConnectTimeout = timeout
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = applicationName
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgledger: postgres: %w", err)
	}
	e := &pgEngine{
		pool:        pool,
		schema:      schema,
		lockSpace:   "privbo.ledger:" + schema,
		timeout:     timeout,
		attempts:    maxConns + 1,
		retryWrites: true,
	}
	if err := e.Read(ctx, func(ledger.Querier) error { return nil }); err != nil {
		e.Close()
		return nil, fmt.Errorf("pgledger: connect to postgres: %w", err)
	}
	return e, nil
}

// pgEngine runs the ledger's transactions on a pgxpool.Pool.
//
// Every call (Read, Write) is bounded by the call timeout, connecting and
// retries included, so that an unreachable database fails a call within it
// (ErrUnavailable) instead of hanging until the caller's deadline; the schema's
// creation (Lock.Migrate) is bounded by the caller's context only.
//
// A call whose connection is lost before anything was committed — the server
// terminated its backend, the network dropped it — is run again on another
// connection, up to attempts times in all (one more than the pool holds, so
// that a pool of dead connections is drained and one fresh connection tried):
// a read changes nothing, and a transaction that never reached COMMIT was
// rolled back by the server, so running it again is running it once. A
// transaction whose COMMIT was sent and not acknowledged is never run again
// here: it may have committed, and the caller, who knows what it wrote, decides
// (a charge is idempotent by its key, so the client's retry of the request
// replays it at no cost).
type pgEngine struct {
	pool      *pgxpool.Pool
	schema    string
	lockSpace string
	// timeout bounds each call (0: none). With perStatement it bounds each
	// statement, the connection's acquisition and the commit separately
	// instead: a blob's transaction is as long as the blob.
	timeout      time.Duration
	perStatement bool
	// attempts bounds the runs of a call whose connection is lost; writes are
	// run again only with retryWrites (not a blob's Put, whose reader is spent).
	attempts    int
	retryWrites bool
}

// dialect qualifies table names with e's schema and numbers placeholders $1,
// $2, ...: the ledger's and the blobs' tables live side by side.
func (e *pgEngine) dialect() ledger.Dialect {
	return ledger.Dialect{Prefix: `"` + e.schema + `".`, Dollar: true}
}

// callTimeout is the cause of a call's context ending at the call timeout.
type callTimeout time.Duration

func (t callTimeout) Error() string {
	return fmt.Sprintf("no answer from postgres within %v (the ledger call timeout)", time.Duration(t))
}

// bound returns ctx bounded by e's call timeout.
func (e *pgEngine) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, e.timeout, callTimeout(e.timeout))
}

// failed classifies err, which ended a call of the caller's context ctx run
// under cctx (ctx bounded by the call timeout), on connection c (nil while
// acquiring one). It marks with ErrUnavailable the errors that mean the server
// could not be reached, did not answer within the call timeout, or dropped the
// connection, rather than that the statement failed: a connection error, a
// network error, a closed connection, an error pgx knows happened before
// anything was sent. The caller's own cancellation or deadline stays as it is.
func failed(ctx, cctx context.Context, c *pgxpool.Conn, err error) error {
	switch {
	case err == nil || errors.Is(err, ledger.ErrUnavailable) || ctx.Err() != nil:
		return err
	case cctx.Err() != nil:
		if t, ok := context.Cause(cctx).(callTimeout); ok {
			return fmt.Errorf("%w: %w (%v)", ledger.ErrUnavailable, t, err) // not the context's error: the caller's deadline did not pass
		}
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if c == nil || errors.As(err, &ce) || errors.As(err, &ne) || c.Conn().IsClosed() || pgconn.SafeToRetry(err) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// A bound of pgx's own (connect_timeout, the pool's ping timeout), not
			// the caller's context: it must not read as the caller's deadline.
			return fmt.Errorf("%w: %v", ledger.ErrUnavailable, err)
		}
		return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
	}
	return err
}

// lost reports whether the call on c failed with err because c was lost (and
// not because a context ended): running it again on another connection may
// succeed.
func lost(cctx context.Context, c *pgxpool.Conn, err error) bool {
	return err != nil && cctx.Err() == nil && c.Conn().IsClosed()
}

func (e *pgEngine) Write(ctx context.Context, lock ledger.Lock, fn func(q ledger.Querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cctx, cancel := e.bound(ctx)
	if lock.Migrate || e.perStatement {
		cancel()
		cctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	for attempt := 1; ; attempt++ {
		again, err := e.writeOnce(ctx, cctx, lock, fn)
		if !again || !e.retryWrites || attempt >= e.attempts {
			return err
		}
	}
}

// writeOnce runs fn in one transaction on one connection; again reports that
// the connection was lost before COMMIT was sent.
func (e *pgEngine) writeOnce(ctx, cctx context.Context, lock ledger.Lock, fn func(q ledger.Querier) error) (again bool, err error) {
	actx, cancel := cctx, context.CancelFunc(func() {})
	if e.perStatement {
		actx, cancel = e.bound(cctx)
	}
	c, err := e.pool.Acquire(actx)
	cancel()
	if err != nil {
		return false, failed(ctx, actx, nil, err)
	}
	defer c.Release() // closes c if it is broken or still inside the transaction
	bctx, cancel := cctx, context.CancelFunc(func() {})
	if e.perStatement {
		bctx, cancel = e.bound(cctx)
	}
	tx, err := c.Begin(bctx)
	if err != nil {
		defer cancel()
		return lost(bctx, c, err), failed(ctx, bctx, c, err)
	}
	cancel()
	q := pgQuerier{q: tx, ctx: cctx, e: e}
	run := func() error {
		if _, err := q.Exec(cctx, `SET LOCAL synchronous_commit TO on`); err != nil {
			return err
		}
		switch {
		case lock.Migrate:
			// Replicas starting together must not race on CREATE ... IF NOT EXISTS.
			if _, err := q.Exec(cctx, `SELECT pg_advisory_xact_lock(hashtext('privbo.ledger.migrate'), hashtext($1))`, e.schema); err != nil {
				return err
			}
		case lock.Dataset != "":
			if _, err := q.Exec(cctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, e.lockSpace, lock.Dataset); err != nil {
				return err
			}
		}
		return fn(q)
	}
	if err := run(); err != nil {
		if !c.Conn().IsClosed() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			tx.Rollback(rctx) //nolint:errcheck // fn's error is the one to report; Release closes c if it failed
			cancel()
		}
		return lost(cctx, c, err), failed(ctx, cctx, c, err)
	}
	cmctx, cancel := cctx, context.CancelFunc(func() {})
	if e.perStatement {
		cmctx, cancel = e.bound(cctx)
	}
	defer cancel()
	if err := tx.Commit(cmctx); err != nil {
		return false, failed(ctx, cmctx, c, err) // it may have committed: never run again here
	}
	return false, nil
}

func (e *pgEngine) Read(ctx context.Context, fn func(q ledger.Querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cctx, cancel := e.bound(ctx)
	defer cancel()
	for attempt := 1; ; attempt++ {
		again, err := e.readOnce(ctx, cctx, fn)
		if !again || attempt >= e.attempts {
			return err
		}
	}
}

func (e *pgEngine) readOnce(ctx, cctx context.Context, fn func(q ledger.Querier) error) (again bool, err error) {
	c, err := e.pool.Acquire(cctx)
	if err != nil {
		return false, failed(ctx, cctx, nil, err)
	}
	defer c.Release()
	err = fn(pgQuerier{q: c, ctx: cctx})
	return lost(cctx, c, err), failed(ctx, cctx, c, err)
}

func (e *pgEngine) Close() error {
	e.pool.Close()
	return nil
}

// pgQuerier adapts *pgxpool.Conn and pgx.Tx. Its statements run under the
// call's context (ctx: the caller's, bounded by the call timeout), whatever
// context they are given, unless that one has ended; with e set and
// e.perStatement, each statement is bounded by the call timeout on its own.
type pgQuerier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
	ctx context.Context
	e   *pgEngine
}

// stmt returns the context of one statement, given ctx.
func (p pgQuerier) stmt(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if p.e != nil && p.e.perStatement {
		c, cancel := p.e.bound(p.ctx)
		return c, cancel, nil
	}
	return p.ctx, func() {}, nil
}

func (p pgQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	sctx, cancel, err := p.stmt(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	tag, err := p.q.Exec(sctx, sql, args...)
	if err != nil {
		return 0, p.timedOut(sctx, err)
	}
	return tag.RowsAffected(), nil
}

func (p pgQuerier) Query(ctx context.Context, sql string, args ...any) (ledger.Rows, error) {
	sctx, cancel, err := p.stmt(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := p.q.Query(sctx, sql, args...)
	if err != nil {
		err = p.timedOut(sctx, err)
		cancel()
		return nil, err
	}
	return cancelRows{Rows: rows, cancel: cancel}, nil
}

// timedOut marks err with ErrUnavailable when the statement's own bound
// (perStatement) ended it.
func (p pgQuerier) timedOut(sctx context.Context, err error) error {
	if t, ok := context.Cause(sctx).(callTimeout); ok && sctx != p.ctx && p.ctx.Err() == nil {
		return fmt.Errorf("%w: %w (%v)", ledger.ErrUnavailable, t, err) // not the context's error: the caller's deadline did not pass
	}
	return err
}

// cancelRows ends its statement's context when closed.
type cancelRows struct {
	pgx.Rows
	cancel context.CancelFunc
}

func (r cancelRows) Close() {
	r.Rows.Close()
	r.cancel()
}
