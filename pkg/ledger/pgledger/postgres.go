// Package pgledger is the PostgreSQL engine of the privacy ledger (package
// ledger) through github.com/jackc/pgx/v5. It lives apart from package ledger
// so that programs that never open PostgreSQL (the modeler) do not link the
// driver; the ledger's logic and its conformance suite (package ledgertest)
// are shared with the SQLite store.
//
// Open is the ledger (ledger.Store); OpenBlobs is the curator's store of
// released matrices (blob.Store) in the same schema, so that curator replicas
// sharing the ledger share the releases too, without a shared disk.
package pgledger

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/privbo/privbo/pkg/ledger"
)

// Options configure Open.
type Options struct {
	// Schema holds the ledger's tables; it is created if missing. Empty
	// means "privbo". It must match [a-z_][a-z0-9_]* (at most 63 bytes)
	// and not start with "pg_".
	Schema string
	// MaxConns bounds the connections the Store opens; 0 means 8.
	MaxConns int
}

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = "privbo"

func (o Options) schema() (string, error) {
	s := o.Schema
	if s == "" {
		s = DefaultSchema
	}
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
	Tables: []string{
		`CREATE TABLE IF NOT EXISTS {t}entries (
		seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		entry_key TEXT NOT NULL,
		kind TEXT NOT NULL,
		description TEXT NOT NULL,
		epsilon DOUBLE PRECISION NOT NULL CHECK (epsilon >= 0),
		delta DOUBLE PRECISION NOT NULL CHECK (delta >= 0 AND delta < 1),
		result BYTEA,
		created_ns BIGINT NOT NULL,
		relation TEXT NOT NULL,
		patient_epsilon DOUBLE PRECISION NOT NULL DEFAULT 0,
		patient_delta DOUBLE PRECISION NOT NULL DEFAULT 0,
		patient_rho DOUBLE PRECISION NOT NULL DEFAULT 0,
		patient_unbounded BIGINT NOT NULL DEFAULT 0,
		UNIQUE (dataset, identity, entry_key))`,
		`CREATE INDEX IF NOT EXISTS entries_dataset_seq ON {t}entries (dataset, seq)`,
		`CREATE TABLE IF NOT EXISTS {t}totals (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		relation TEXT NOT NULL,
		epsilon TEXT NOT NULL,
		delta TEXT NOT NULL,
		charges BIGINT NOT NULL,
		PRIMARY KEY (dataset, identity, relation))`,
		`CREATE TABLE IF NOT EXISTS {t}patient_totals (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		epsilon TEXT NOT NULL,
		delta TEXT NOT NULL,
		rho TEXT NOT NULL,
		rho_delta TEXT NOT NULL,
		unbounded BIGINT NOT NULL,
		charges BIGINT NOT NULL,
		PRIMARY KEY (dataset, identity))`,
		`CREATE TABLE IF NOT EXISTS {t}limits_history (
		id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		dataset TEXT NOT NULL,
		identity_epsilon DOUBLE PRECISION NOT NULL,
		identity_delta DOUBLE PRECISION NOT NULL,
		dataset_epsilon DOUBLE PRECISION NOT NULL,
		dataset_delta DOUBLE PRECISION NOT NULL,
		patient_identity_epsilon DOUBLE PRECISION NOT NULL,
		patient_identity_delta DOUBLE PRECISION NOT NULL,
		patient_dataset_epsilon DOUBLE PRECISION NOT NULL,
		patient_dataset_delta DOUBLE PRECISION NOT NULL,
		recorded_ns BIGINT NOT NULL,
		confirmed_ns BIGINT NOT NULL,
		starts BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS limits_history_dataset ON {t}limits_history (dataset, id)`,
		`CREATE TABLE IF NOT EXISTS {t}reservations (
		dataset TEXT NOT NULL,
		identity TEXT NOT NULL,
		entry_key TEXT NOT NULL,
		token TEXT NOT NULL,
		owner TEXT NOT NULL,
		kind TEXT NOT NULL,
		relation TEXT NOT NULL,
		epsilon DOUBLE PRECISION NOT NULL,
		delta DOUBLE PRECISION NOT NULL,
		patient_epsilon DOUBLE PRECISION NOT NULL,
		patient_delta DOUBLE PRECISION NOT NULL,
		patient_rho DOUBLE PRECISION NOT NULL,
		patient_unbounded BIGINT NOT NULL,
		created_ns BIGINT NOT NULL,
		expires_ns BIGINT NOT NULL,
		PRIMARY KEY (dataset, identity, entry_key))`,
		`CREATE INDEX IF NOT EXISTS reservations_token ON {t}reservations (dataset, token)`,
	},
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
// Several Stores, in one or several curator replicas, may share one schema
// and so one budget: each check-and-charge transaction first takes
// pg_advisory_xact_lock on (schema, dataset), which serialises the charges
// of a dataset until commit, and sets synchronous_commit=on so that the
// commit is flushed to the server's WAL before Charge returns (this relies on
// the server running with fsync=on, its default).
func Open(ctx context.Context, dsn string, opt Options, limits ledger.Limits) (ledger.Store, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	e, err := connect(ctx, dsn, opt)
	if err != nil {
		return nil, err
	}
	ddl := postgresDDL
	ddl.Base = make([]string, len(postgresDDL.Base))
	for i, q := range postgresDDL.Base {
		ddl.Base[i] = strings.ReplaceAll(q, "{schema}", e.quotedSchema())
	}
	s, err := ledger.OpenEngine(ctx, e, e.dialect(), ddl, limits)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("%w (postgres schema %s)", err, e.schema)
	}
	return s, nil
}

// connect returns an engine on opt's schema of the database at dsn, having
// connected once so that a wrong DSN fails here, not at the first use.
func connect(ctx context.Context, dsn string, opt Options) (*pgEngine, error) {
	schema, err := opt.schema()
	if err != nil {
		return nil, err
	}
	if opt.MaxConns < 0 {
		return nil, fmt.Errorf("pgledger: postgres MaxConns must be non-negative, got %d", opt.MaxConns)
	}
	maxConns := opt.MaxConns
	if maxConns == 0 {
		maxConns = 8
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgledger: postgres: %w", err)
	}
	e := &pgEngine{
		cfg:       cfg,
		slots:     make(chan struct{}, maxConns),
		idle:      make(chan *pgx.Conn, maxConns),
		schema:    schema,
		lockSpace: "privbo.ledger:" + schema,
	}
	if err := e.Read(ctx, func(ledger.Querier) error { return nil }); err != nil {
		e.Close()
		return nil, fmt.Errorf("pgledger: connect to postgres: %w", err)
	}
	return e, nil
}

// pgEngine keeps a small pool of pgx connections (at most cap(slots)).
type pgEngine struct {
	cfg       *pgx.ConnConfig
	slots     chan struct{}  // one token per connection in use
	idle      chan *pgx.Conn // connections ready for reuse
	schema    string
	lockSpace string

	mu     sync.Mutex
	closed bool
}

var errClosed = errors.New("store is closed")

// quotedSchema is e's schema as an SQL identifier, for {schema} in DDL.
func (e *pgEngine) quotedSchema() string { return `"` + e.schema + `"` }

// dialect qualifies table names with e's schema and numbers placeholders $1,
// $2, ...: the ledger's and the blobs' tables live side by side.
func (e *pgEngine) dialect() ledger.Dialect {
	return ledger.Dialect{Prefix: e.quotedSchema() + ".", Dollar: true}
}

// acquire returns an idle connection or opens one, waiting for a free slot.
func (e *pgEngine) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		<-e.slots
		return nil, errClosed
	}
	select {
	case c := <-e.idle:
		return c, nil
	default:
	}
	c, err := pgx.ConnectConfig(ctx, e.cfg)
	if err != nil {
		<-e.slots
		return nil, unavailable(nil, err)
	}
	return c, nil
}

// unavailable marks err with ErrUnavailable when it means the server could not
// be reached or the connection c (nil while connecting) was lost, rather than
// that the statement failed: a connection error, a network error, a closed
// connection, or an error pgx knows happened before anything was sent. Context
// errors stay as they are.
func unavailable(c *pgx.Conn, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if c == nil || errors.As(err, &ce) || errors.As(err, &ne) || c.IsClosed() || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
	}
	return err
}

// release returns c to the pool, or closes it if it is broken or the
// engine is closed.
func (e *pgEngine) release(c *pgx.Conn, broken bool) {
	defer func() { <-e.slots }()
	e.mu.Lock()
	defer e.mu.Unlock()
	if broken || e.closed || c.IsClosed() {
		closeConn(c)
		return
	}
	e.idle <- c // never blocks: at most cap(slots) connections exist
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close(ctx) //nolint:errcheck // nothing to do about a failed goodbye
}

func (e *pgEngine) Write(ctx context.Context, lock ledger.Lock, fn func(q ledger.Querier) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := e.acquire(ctx)
	if err != nil {
		return err
	}
	broken := false
	defer func() {
		err = unavailable(c, err)
		e.release(c, broken)
	}()
	tx, err := c.Begin(ctx)
	if err != nil {
		broken = true
		return err
	}
	run := func() error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO on`); err != nil {
			return err
		}
		switch {
		case lock.Migrate:
			// Replicas starting together must not race on CREATE ... IF NOT EXISTS.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('privbo.ledger.migrate'), hashtext($1))`, e.schema); err != nil {
				return err
			}
		case lock.Dataset != "":
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, e.lockSpace, lock.Dataset); err != nil {
				return err
			}
		}
		return fn(pgQuerier{tx})
	}
	if err := run(); err != nil {
		if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil {
			broken = true
		}
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		broken = true
		return err
	}
	return nil
}

func (e *pgEngine) Read(ctx context.Context, fn func(q ledger.Querier) error) error {
	c, err := e.acquire(ctx)
	if err != nil {
		return err
	}
	err = unavailable(c, fn(pgQuerier{c}))
	e.release(c, false) // release checks IsClosed: pgx closes a connection it cannot trust
	return err
}

func (e *pgEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	for {
		select {
		case c := <-e.idle:
			closeConn(c)
		default:
			return nil
		}
	}
}

// pgQuerier adapts *pgx.Conn and pgx.Tx.
type pgQuerier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

func (p pgQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := p.q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (p pgQuerier) Query(ctx context.Context, sql string, args ...any) (ledger.Rows, error) {
	rows, err := p.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}
