package curator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/ledger"
)

// memBlobs is a blob.Store in memory that records the order of its writes into log,
// shared with a recordingLedger.
type memBlobs struct {
	mu      sync.Mutex
	blobs   map[string][]byte
	log     *[]string
	failPut error
}

func (m *memBlobs) Put(_ context.Context, name string, r io.Reader) ([]byte, error) {
	if m.failPut != nil {
		return nil, m.failPut
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blobs[name]; ok {
		return nil, blob.ErrExists
	}
	m.blobs[name] = b
	*m.log = append(*m.log, "put")
	sum := sha256.Sum256(b)
	return sum[:], nil
}

func (m *memBlobs) Open(_ context.Context, name string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[name]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memBlobs) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.blobs, name)
	*m.log = append(*m.log, "delete")
	return nil
}

// recordingLedger logs each Charge into the shared log, and can fail them without
// recording anything.
type recordingLedger struct {
	Ledger
	log        *[]string
	failCharge error
}

func (l *recordingLedger) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	*l.log = append(*l.log, "charge")
	if l.failCharge != nil {
		return ledger.Receipt{}, l.failCharge
	}
	return l.Ledger.Charge(ctx, c)
}

func (l *recordingLedger) Commit(ctx context.Context, r *ledger.Reservation, cs []ledger.Charge) ([]ledger.Receipt, error) {
	*l.log = append(*l.log, "charge")
	if l.failCharge != nil {
		return nil, l.failCharge
	}
	return l.Ledger.Commit(ctx, r, cs)
}

// TestReleaseStoredBeforeCharged checks the release protocol through the blob store:
// the matrix is stored durably before the charge that names it, a replay reads it back
// without a charge, a matrix that cannot be stored is never charged, and one whose
// charge fails is removed.
func TestReleaseStoredBeforeCharged(t *testing.T) {
	ctx := context.Background()
	_, _, ds := testCurator(t, Evaluation{})
	led, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	var log []string
	blobs := &memBlobs{blobs: map[string][]byte{}, log: &log}
	rl := &recordingLedger{Ledger: led, log: &log}
	c, err := New(Config{Dataset: ds, Ledger: rl, Releases: blobs})
	if err != nil {
		t.Fatalf("New with Releases and no StateDir: %v", err)
	}
	read := func(p *Projection) []byte {
		t.Helper()
		rc, err := p.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := ProjectionRequest{R: 2, Epsilon: 0.25, Delta: 1e-5}
	p, err := c.ReleaseProjection(ctx, "vendor", req)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(log) != "[put charge]" {
		t.Errorf("a new release did %v, want [put charge]: stored, then charged", log)
	}
	first := read(p)
	if sum := sha256.Sum256(first); !bytes.Equal(sum[:], p.SHA256) || len(first) != 8*p.Rows*p.Cols {
		t.Errorf("stored matrix: %d bytes, SHA-256 %x; want %d bytes, %x", len(first), sum, 8*p.Rows*p.Cols, p.SHA256)
	}

	log = nil
	again, err := c.ReleaseProjection(ctx, "vendor", req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || len(log) != 0 || !bytes.Equal(read(again), first) {
		t.Errorf("replay: replayed %v, did %v, same bytes %v; want a replay of the same bytes that stores and charges nothing",
			again.Replayed, log, bytes.Equal(read(again), first))
	}

	log = nil
	blobs.failPut = errors.New("disk full")
	if _, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 2, Epsilon: 0.25, Delta: 1e-5, Label: "unstored"}); err == nil {
		t.Error("release whose matrix cannot be stored: error = nil")
	}
	if len(log) != 0 {
		t.Errorf("release whose matrix cannot be stored did %v, want nothing (never charged)", log)
	}
	blobs.failPut = nil

	log = nil
	rl.failCharge = errors.New("ledger down")
	if _, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 2, Epsilon: 0.25, Delta: 1e-5, Label: "uncharged"}); err == nil {
		t.Error("release whose charge fails: error = nil")
	}
	if fmt.Sprint(log) != "[put charge delete]" || len(blobs.blobs) != 1 {
		t.Errorf("release whose charge fails did %v and left %d matrices; want [put charge delete] and only the first release's", log, len(blobs.blobs))
	}
	if b, err := led.Balance(ctx, ledger.Account{Dataset: ds.Name, Identity: "vendor"}, ledger.RelationFeatureUnit); err != nil || b.Spent.Epsilon != 0.25 {
		t.Errorf("vendor spent %+v, %v; want the first release's 0.25 only", b.Spent, err)
	}
}

// TestAdoptReleases moves the releases of a curator's state directory into another
// store: matching copies are kept, damaged ones refused, absent ones counted.
func TestAdoptReleases(t *testing.T) {
	ctx := context.Background()
	_, _, ds := testCurator(t, Evaluation{})
	dir := t.TempDir()
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Projection
	for _, label := range []string{"kept", "damaged", "lost"} {
		p, err := c.ReleaseProjection(ctx, "vendor", ProjectionRequest{R: 2, Epsilon: 0.1, Delta: 1e-5, Label: label})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	files, err := blob.OpenDir(filepath.Join(dir, "releases"))
	if err != nil {
		t.Fatal(err)
	}
	// Damage the second release's file (same length), lose the third's.
	if err := files.Delete(ctx, ps[1].blob); err != nil {
		t.Fatal(err)
	}
	if _, err := files.Put(ctx, ps[1].blob, bytes.NewReader(make([]byte, 8*ps[1].Rows*ps[1].Cols))); err != nil {
		t.Fatal(err)
	}
	if err := files.Delete(ctx, ps[2].blob); err != nil {
		t.Fatal(err)
	}

	var log []string
	to := &memBlobs{blobs: map[string][]byte{}, log: &log}
	got, err := AdoptReleases(ctx, led, ds.Name, to, files)
	if got != (Adopted{Copied: 1, Missing: 1}) || err == nil || !strings.Contains(err.Error(), ps[1].blob) {
		t.Errorf("AdoptReleases = %+v, %v; want 1 copied, 1 missing and an error naming the damaged %s", got, err, ps[1].blob)
	}
	if len(to.blobs) != 1 || to.blobs[ps[0].blob] == nil {
		t.Fatalf("the store holds %d releases after adoption, want the undamaged %s only", len(to.blobs), ps[0].blob)
	}
	if sum := sha256.Sum256(to.blobs[ps[0].blob]); !bytes.Equal(sum[:], ps[0].SHA256) {
		t.Errorf("adopted release SHA-256 %x, want %x", sum, ps[0].SHA256)
	}
	// Adopting again copies nothing already there.
	if got, _ := AdoptReleases(ctx, led, ds.Name, to, files); got.Copied != 0 {
		t.Errorf("second AdoptReleases copied %d, want 0", got.Copied)
	}
	if b, err := led.Balance(ctx, ledger.Account{Dataset: ds.Name, Identity: "vendor"}, ledger.RelationFeatureUnit); err != nil || b.Charges != 3 {
		t.Errorf("after adoption vendor has %d charges, %v; want the 3 releases, none added", b.Charges, err)
	}
}
