// Package sqlitedb opens the SQLite databases that hold privbo's durable state — the
// privacy ledger, the curator's jobs, the modeler's studies — one way: write-ahead log,
// synchronous=FULL (a commit is on disk before it returns), BEGIN IMMEDIATE for every
// write transaction (so a check-then-write is atomic also across processes sharing the
// file), writers waiting up to BusyTimeout for the lock, and a check at open that these
// settings took effect. The driver is the pure-Go modernc.org/sqlite; the file must be
// on a local file system (the WAL needs shared memory between processes).
package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// BusyTimeout is how long a writer waits for another connection's write lock.
const BusyTimeout = 30 * time.Second

// Open opens (creating if needed) the database file at path with the durability
// settings above and any extra pragmas (e.g. "foreign_keys(1)").
func Open(path string, pragmas ...string) (*sql.DB, error) {
	switch {
	case path == "":
		return nil, fmt.Errorf("sqlite path must not be empty")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return nil, fmt.Errorf("sqlite path must name a file, got %q", path)
	case strings.ContainsAny(path, "?#\x00"):
		return nil, fmt.Errorf("sqlite path must not contain '?', '#' or NUL, got %q", path)
	}
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate",
		path, BusyTimeout.Milliseconds())
	for _, p := range pragmas {
		dsn += "&_pragma=" + p
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if err := checkDurable(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return db, nil
}

// checkDurable verifies that the durability settings took effect on a connection.
func checkDurable(db *sql.DB) error {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var mode string
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") || sync != 2 {
		return fmt.Errorf("journal_mode=%s synchronous=%d, want wal and 2 (FULL)", mode, sync)
	}
	return nil
}
