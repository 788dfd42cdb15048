// Package storage opens what a curator keeps: its privacy ledger, its released
// matrices and its tuning jobs, each by the ledger's kind (SQLite files in the state
// directory, or tables of the PostgreSQL ledger's schema), and takes over at start what
// a curator left behind (Adopt*, RemoveOrphans).
package storage

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
)

// Ledger selects the ledger store, and with it where the releases and the jobs are kept.
type Ledger struct {
	// Kind is "sqlite" (DefaultKind; file StateDir/ledger.db) or "postgres".
	Kind string
	// DSN of PostgreSQL, for Kind "postgres".
	DSN string
	// Schema of the PostgreSQL tables; default "privbo".
	Schema string
	// CallTimeout bounds each call on a PostgreSQL ledger, connecting included: a call
	// the database does not answer within it fails at once, UNAVAILABLE to the client.
	// Default pgledger.DefaultCallTimeout; see pgledger.Options.CallTimeout.
	CallTimeout time.Duration
}

// DefaultKind is the ledger store of a Ledger that names none: SQLite, in stateDir.
const DefaultKind = "sqlite"

// pgOptions are the options of the PostgreSQL ledger and blob store of lc.
func pgOptions(lc Ledger) pgledger.Options {
	return pgledger.Options{Schema: lc.Schema, CallTimeout: lc.CallTimeout}
}

// OpenLedger opens the configured ledger store (the SQLite file lives in stateDir).
func OpenLedger(ctx context.Context, lc Ledger, stateDir string, limits ledger.Limits) (*ledger.Ledger, error) {
	var store *ledger.Ledger
	var err error
	switch lc.Kind {
	case "", DefaultKind:
		store, err = ledger.OpenSQLite(filepath.Join(stateDir, "ledger.db"), limits)
	case "postgres":
		store, err = pgledger.Open(ctx, lc.DSN, pgOptions(lc), limits)
	default:
		return nil, fmt.Errorf("server: unknown ledger kind %q (want sqlite or postgres)", lc.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("server: opening the privacy ledger: %w", err)
	}
	return store, nil
}

// Releases is where a curator keeps its released matrices.
type Releases struct {
	// Store is the curator's Config.Releases; nil keeps them as files in
	// StateDir/releases (blob.Dir, the curator's default).
	Store blob.Store
	// Moved, when set, is the store the releases are moving into, from Files: server.Start
	// copies into it what the ledger records and it lacks (curator.AdoptReleases).
	Moved, Files blob.Store
	close        func() error
}

// Close releases the store's database handle, if it has one.
func (r Releases) Close() error {
	if r.close == nil {
		return nil
	}
	return r.close()
}

// AdoptReleases copies the releases of the state directory that the ledger records into
// the store they moved to, so that the other replicas can replay them too. A release
// that cannot be copied is logged and still replayed from the state directory by this
// replica.
func AdoptReleases(ctx context.Context, log *zap.Logger, store *ledger.Ledger, dataset string, r Releases) {
	got, err := curator.AdoptReleases(ctx, store, dataset, r.Moved, r.Files)
	if got.Copied > 0 || got.Missing > 0 {
		log.Info("releases copied from the state directory into the PostgreSQL ledger's database",
			zap.Int("copied", got.Copied), zap.Int("in_neither", got.Missing))
	}
	if err != nil {
		log.Error("some releases of the state directory could not be copied into PostgreSQL; this replica still replays them from its state directory",
			zap.Error(err))
	}
}

// RemoveOrphans removes, at start, the release matrices no ledger record names that are
// older than curator.OrphanGrace (curator.RemoveOrphans), from the state directory and,
// with PostgreSQL, the ledger's schema: what a curator killed between storing a matrix
// and charging it left behind. A failure is logged and the curator serves anyway.
func RemoveOrphans(ctx context.Context, log *zap.Logger, store *ledger.Ledger, lc Ledger, stateDir string, r Releases) {
	var stores []curator.ReleaseStore
	if r.Moved != nil {
		stores = append(stores, curator.ReleaseStore{Where: "postgres schema " + cmp.Or(lc.Schema, pgledger.DefaultSchema), Store: r.Moved})
	}
	dir := curator.ReleasesDir(stateDir)
	files := r.Files
	if files == nil {
		d, err := blob.OpenDir(dir)
		if err != nil {
			log.Error("orphaned release matrices not removed", zap.Error(err))
			return
		}
		files = d
	}
	stores = append(stores, curator.ReleaseStore{Where: dir, Store: files})
	removed, err := curator.RemoveOrphans(ctx, store, curator.OrphanGrace, log, stores...)
	if len(removed) > 0 {
		var bytes int64
		for _, o := range removed {
			bytes += o.Size
		}
		log.Info("removed orphaned release matrices: stored more than the grace window ago and charged by no ledger record",
			zap.Int("matrices", len(removed)), zap.Int64("bytes", bytes), zap.Duration("grace", curator.OrphanGrace))
	}
	if err != nil {
		log.Error("orphaned release matrices not (all) removed; the curator serves anyway", zap.Error(err))
	}
}

// OpenReleases opens where the curator keeps its released matrices, by ledger kind.
// With SQLite they stay files in stateDir/releases (Store nil): the ledger is a file of
// the same directory, so a curator and its releases live on one disk. With PostgreSQL
// they are blobs in the ledger's schema (pgledger.Blobs), so that every replica sharing
// the ledger replays every release. Releases a curator stored as files before it used
// PostgreSQL blobs are copied into PostgreSQL when it starts (server.Start, with
// curator.AdoptReleases), and read from stateDir/releases (blob.Fallback) until then.
func OpenReleases(ctx context.Context, lc Ledger, stateDir string) (Releases, error) {
	if lc.Kind != "postgres" {
		return Releases{}, nil
	}
	blobs, err := pgledger.OpenBlobs(ctx, lc.DSN, pgOptions(lc))
	if err != nil {
		return Releases{}, fmt.Errorf("server: opening the release store: %w", err)
	}
	files, err := blob.OpenDir(curator.ReleasesDir(stateDir))
	if err != nil {
		blobs.Close()
		return Releases{}, fmt.Errorf("server: opening the release store: %w", err)
	}
	return Releases{Store: blob.Fallback(blobs, files), Moved: blobs, Files: files, close: blobs.Close}, nil
}

// OpenJobs opens where the curator keeps its tuning jobs, by ledger kind. With SQLite
// they are in stateDir/jobs.db, this curator's alone. With PostgreSQL they are tables
// in the ledger's schema (jobs.OpenPostgres), keyed by dataset, so that every replica
// sharing the ledger serves, cancels and takes over every job of the dataset.
func OpenJobs(ctx context.Context, lc Ledger, stateDir, dataset string) (st *jobs.Store, err error) {
	defer func() {
		if err != nil {
			st, err = nil, fmt.Errorf("server: opening the job store: %w", err)
		}
	}()
	if lc.Kind != "postgres" {
		return jobs.OpenSQLite(filepath.Join(stateDir, "jobs.db"))
	}
	e, d, err := pgledger.OpenEngine(ctx, lc.DSN, pgOptions(lc))
	if err != nil {
		return nil, err
	}
	if st, err = jobs.OpenPostgres(ctx, e, d, dataset); err != nil {
		e.Close()
	}
	return st, err
}

// AdoptJobs copies the jobs of stateDir/jobs.db, if there is one, into the shared job
// store (jobs.Adopt), so that a curator moving to PostgreSQL keeps answering for the jobs
// it accepted before. A failure is logged; those jobs then stay in the file only.
func AdoptJobs(ctx context.Context, log *zap.Logger, to *jobs.Store, led jobs.Ledger, stateDir string) {
	path := filepath.Join(stateDir, "jobs.db")
	if _, err := os.Stat(path); err != nil {
		return
	}
	from, err := jobs.OpenSQLite(path)
	if err != nil {
		log.Error("the jobs of the state directory could not be read to copy them into PostgreSQL", zap.String("path", path), zap.Error(err))
		return
	}
	defer from.Close()
	got, err := jobs.Adopt(ctx, to, from, led)
	if got.Jobs > 0 || got.Skipped > 0 {
		log.Info("jobs copied from the state directory into the PostgreSQL ledger's schema", zap.Int("copied", got.Jobs),
			zap.Int("interrupted", got.Interrupted), zap.Int("not_charged_to_this_dataset", got.Skipped))
	}
	if err != nil {
		log.Error("some jobs of the state directory could not be copied into PostgreSQL; retries of them on this replica will not find them", zap.Error(err))
	}
}
