package curator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/ledger"
)

// readCounting is a ledger that counts its result reads. RemoveOrphans takes a
// ResultLister, so a Get per record or a listing of every record cannot happen: the
// type rules them out, and the test counts the one read it may make.
type readCounting struct {
	*ledger.Ledger
	results atomic.Int64
}

func (r *readCounting) KindResults(ctx context.Context, kind string, fn func(ledger.Account, string, []byte) error) error {
	r.results.Add(1)
	return r.Ledger.KindResults(ctx, kind, fn)
}

// TestRemoveOrphansReads: the sweep removes exactly the old matrices no projection
// record names, in every dataset, and finds the named ones with one read of the
// projection records' results — no Get per record, no listing of every record — however
// many records the ledger holds; a record it cannot read stops it removing anything.
func TestRemoveOrphansReads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{
		PerIdentity: ledger.Cost{Epsilon: 100, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 100, Delta: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	files, err := blob.OpenDir(filepath.Join(dir, "releases"))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * OrphanGrace)
	plant := func(name string, at time.Time) {
		t.Helper()
		p := filepath.Join(dir, "releases", name)
		if err := os.WriteFile(p, []byte("matrix"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	name := func(i int) string { return fmt.Sprintf("proj-%024x-%016x.f64", i, i) }
	charge := func(dataset, key, kind string, result []byte) {
		t.Helper()
		if _, err := led.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: dataset, Identity: "acme"}, Key: key, Kind: kind,
			Relation: ledger.RelationFeatureUnit, Result: result}); err != nil {
			t.Fatal(err)
		}
	}
	const charged = 12
	for i := range charged {
		res, _ := json.Marshal(projectionRecord{File: name(i), Rows: 1, Cols: 1})
		charge([]string{"d1", "d2"}[i%2], fmt.Sprintf("projection/%d", i), ledger.KindProjection, res)
		charge("d1", fmt.Sprintf("q/%d", i), "query", []byte("answer"))
		plant(name(i), old)
	}
	orphan, fresh := name(100), name(101)
	plant(orphan, old)
	plant(fresh, time.Now())

	rc := &readCounting{Ledger: led}
	removed, err := RemoveOrphans(ctx, rc, OrphanGrace, nil, ReleaseStore{Where: "dir", Store: files})
	if err != nil || len(removed) != 1 || removed[0].Name != orphan {
		t.Fatalf("RemoveOrphans = %+v, %v; want %s only", removed, err, orphan)
	}
	if r := rc.results.Load(); r != 1 {
		t.Errorf("RemoveOrphans made %d result reads; want 1 whatever the number of records", r)
	}
	for _, n := range []string{name(0), name(charged - 1), fresh} {
		if _, err := os.Stat(filepath.Join(dir, "releases", n)); err != nil {
			t.Errorf("%s: %v, want kept", n, err)
		}
	}

	// A projection record that cannot be read may name any matrix: none is removed.
	charge("d2", "projection/bad", ledger.KindProjection, []byte("not json"))
	plant(name(102), old)
	if removed, err := RemoveOrphans(ctx, rc, OrphanGrace, nil, ReleaseStore{Where: "dir", Store: files}); err == nil || len(removed) != 0 {
		t.Errorf("RemoveOrphans with an unreadable record = %+v, %v; want an error and nothing removed", removed, err)
	}
}
