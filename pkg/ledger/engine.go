package ledger

import (
	"context"
	"fmt"
	"strings"
)

// SchemaVersion is the version of the tables this code reads and writes.
// Version 1 had no relation: its records and totals were summed across
// neighbour relations. Version 2 records each charge's relation and keeps
// the totals per (dataset, identity, relation); opening a version 1 database
// upgrades it in place. Version 3 adds the limits table, the limits a server
// recorded for each dataset when it started (RecordLimits). Version 4 records
// each charge's whole-patient cost and keeps the whole-patient totals, keeps
// each dataset's totals in rows of their own (so that a charge reads a
// constant number of rows), and replaces the limits table by the history of
// limits; opening a version 1, 2 or 3 database upgrades it in place. Version 5
// adds the reservations table (Ledger.Reserve): a version 4 program, which would
// not count reservations, refuses it; opening a version 4 database adds the
// table. Version 6 records what each release stores for replay (Charge.Stored) and
// keeps its totals per identity and dataset (StoredQuota); opening an older
// database adds them, at zero.
const SchemaVersion = 6

// The engine interface below is for packages that open a Ledger over a
// database (OpenSQLite here; package pgledger for PostgreSQL, kept apart so
// that programs which never open PostgreSQL do not link its driver). The
// Ledger's logic — exact totals, the limit check, replays, migrations — lives
// here once; an engine only opens, serialises and commits transactions.

// Engine is what differs between databases: how transactions are opened,
// serialised and made durable.
type Engine interface {
	// Write runs fn in one transaction and commits it durably if fn returns
	// nil; otherwise it rolls back and returns fn's error. lock names what
	// the transaction must be serialised on. An engine may run fn again, in a
	// new transaction, when the first lost its connection before committing
	// (pgledger does): fn must start afresh each time, keeping nothing from an
	// earlier run.
	Write(ctx context.Context, lock Lock, fn func(q Querier) error) error
	// Read runs fn on a connection in autocommit mode; like Write, it may run
	// fn again on another connection.
	Read(ctx context.Context, fn func(q Querier) error) error
	// Close releases the database handle.
	Close() error
}

// Lock names what a writing transaction must be serialised on, for engines
// that do not serialise every writer.
type Lock struct {
	Migrate bool   // schema creation
	Dataset string // check-and-charge on this dataset
}

// Querier runs statements inside a transaction or on a connection.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
}

// Rows iterates over a query's result, as database/sql.Rows and pgx.Rows do.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// SchemaDDL is an engine's schema: statements run in the migrating
// transaction, through Dialect.SQL.
type SchemaDDL struct {
	// Base creates what holds the version (the schema_version table, and
	// for PostgreSQL the schema), if missing.
	Base []string
	// Tables creates the tables and indexes of the current version, if
	// missing.
	Tables []string
	// FromV1 turns version 1's entries table into version 2's, with an
	// empty relation on every record, and drops version 1's totals; it runs
	// before Tables. FromV1Done runs once every record has its relation.
	FromV1, FromV1Done []string
	// ToV4 adds version 4's columns to a version 2 or 3 entries table (the
	// whole-patient cost of each record, zero until set); it runs before Tables.
	ToV4 []string
}

// Dialect is how an engine's SQL differs from the statements the Ledger
// writes.
type Dialect struct {
	// Prefix qualifies table names: "" or `"schema".`.
	Prefix string
	// Dollar numbers placeholders $1, $2, ... instead of ?.
	Dollar bool
}

// SQL replaces {t} in q by the table prefix, {schema} by the prefix without its
// dot and, for a Dollar dialect, each ? by $1, $2, ... in order. q must not
// hold a ? that is not a placeholder.
func (d Dialect) SQL(q string) string {
	q = strings.ReplaceAll(strings.ReplaceAll(q, "{t}", d.Prefix), "{schema}", strings.TrimSuffix(d.Prefix, "."))
	if !d.Dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// OpenEngine returns the Ledger over e: it creates the tables of ddl if
// missing, upgrades an older schema version and refuses a newer one, in one
// transaction. On error e is left open; the caller closes it.
func OpenEngine(ctx context.Context, e Engine, d Dialect, ddl SchemaDDL, limits Limits) (*Ledger, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	s := newLedger(e, limits, d)
	if err := s.migrate(ctx, ddl); err != nil {
		return nil, err
	}
	return s, nil
}
