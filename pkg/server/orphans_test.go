package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// orphanName is a fresh name of the form the curator gives release matrices.
func orphanName(t *testing.T) string {
	var id [12]byte
	var nonce [8]byte
	rand.Read(id[:])
	rand.Read(nonce[:])
	return "proj-" + hex.EncodeToString(id[:]) + "-" + hex.EncodeToString(nonce[:]) + ".f64"
}

// TestOrphansRemovedAtStart plants, beside a charged release, matrices no ledger record
// names — older than curator.OrphanGrace, and one fresh — and a file that is no release,
// in the state directory and (PostgreSQL) in the ledger's blobs table, then restarts
// the curator: only the old orphans are gone, each logged by name and size, and the
// charged release still replays byte for byte.
func TestOrphansRemovedAtStart(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			opts := curatortest.Options{StateDir: t.TempDir()}
			var conn *pgx.Conn
			if kind == "postgres" {
				opts.Ledger = curatortest.PostgresLedger(t)
				var err error
				if conn, err = pgx.Connect(ctx, opts.Ledger.DSN); err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
			}
			a := curatortest.Start(t, opts)
			req := &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5, Label: "kept"}
			first, err := curatorclient.FetchProjection(ctx, a.Client(t, "acme"), req)
			if err != nil {
				t.Fatal(err)
			}
			a.Stop(t)

			old := time.Now().Add(-curator.OrphanGrace - time.Hour)
			dir := curator.ReleasesDir(opts.StateDir)
			plantFile := func(name string, at time.Time) {
				t.Helper()
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, bytes.Repeat([]byte{7}, 4096), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
			}
			oldFile, freshFile, notRelease := orphanName(t), orphanName(t), "operator-notes.txt"
			plantFile(oldFile, old)
			plantFile(freshFile, time.Now())
			plantFile(notRelease, old)
			var charged, oldBlob, freshBlob string
			switch kind {
			case "sqlite":
				ents, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), first.ReleaseID+"-") {
						charged = e.Name()
					}
				}
				if charged == "" {
					t.Fatalf("the charged release's matrix is not in %s", dir)
				}
				if err := os.Chtimes(filepath.Join(dir, charged), old, old); err != nil {
					t.Fatal(err)
				}
			case "postgres":
				lc := opts.Ledger
				blobs, err := pgledger.OpenBlobs(ctx, lc.DSN, pgledger.Options{Schema: lc.Schema})
				if err != nil {
					t.Fatal(err)
				}
				oldBlob, freshBlob = orphanName(t), orphanName(t)
				for _, n := range []string{oldBlob, freshBlob} {
					if _, err := blobs.Put(ctx, n, bytes.NewReader(bytes.Repeat([]byte{9}, 3<<20))); err != nil {
						t.Fatal(err)
					}
				}
				blobs.Close()
				if err := conn.QueryRow(ctx, `SELECT name FROM "`+lc.Schema+`".blobs WHERE name LIKE $1 || '-%'`, first.ReleaseID).Scan(&charged); err != nil {
					t.Fatal(err)
				}
				// The charged matrix and the old orphan were stored long ago.
				if _, err := conn.Exec(ctx, `UPDATE "`+lc.Schema+`".blobs SET created_ns = $1 WHERE name = ANY($2)`,
					old.UnixNano(), []string{charged, oldBlob}); err != nil {
					t.Fatal(err)
				}
			}

			b := curatortest.Start(t, opts)
			for name, want := range map[string]bool{oldFile: false, freshFile: true, notRelease: true} {
				_, err := os.Stat(filepath.Join(dir, name))
				if got := err == nil; got != want {
					t.Errorf("state directory file %s present %v after the restart, want %v (%v)", name, got, want, err)
				}
			}
			if kind == "sqlite" {
				if _, err := os.Stat(filepath.Join(dir, charged)); err != nil {
					t.Errorf("the charged release's matrix: %v", err)
				}
			} else {
				for name, want := range map[string]bool{oldBlob: false, freshBlob: true, charged: true} {
					var n int
					if err := conn.QueryRow(ctx, `SELECT count(*) FROM "`+opts.Ledger.Schema+`".blob_chunks WHERE name = $1`, name).Scan(&n); err != nil {
						t.Fatal(err)
					}
					var present bool
					if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM "`+opts.Ledger.Schema+`".blobs WHERE name = $1)`, name).Scan(&present); err != nil {
						t.Fatal(err)
					}
					if present != want || (n > 0) != want {
						t.Errorf("blob %s present %v (%d chunks) after the restart, want %v", name, present, n, want)
					}
				}
			}
			// The removals are logged by name and size.
			logs := b.Logs.String()
			removed := []string{oldFile}
			if kind == "postgres" {
				removed = append(removed, oldBlob)
			}
			for _, n := range removed {
				if !strings.Contains(logs, `"name":"`+n+`"`) {
					t.Errorf("the removal of %s is not logged", n)
				}
			}
			if got := strings.Count(logs, "removed an orphaned release matrix"); got != len(removed) {
				t.Errorf("%d removals logged, want %d", got, len(removed))
			}
			again, err := curatorclient.FetchProjection(ctx, b.Client(t, "acme"), req)
			if err != nil {
				t.Fatal(err)
			}
			if !again.Replayed || again.ReleaseID != first.ReleaseID || len(again.Z) != len(first.Z) {
				t.Fatalf("replay after the restart: %+v", again)
			}
			for i := range again.Z {
				if again.Z[i] != first.Z[i] {
					t.Fatal("the replay after the restart differs from the release")
				}
			}
		})
	}
}
