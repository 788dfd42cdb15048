// Package blobtest is the conformance suite of blob.Store implementations:
// the file store (blob.Dir) and the PostgreSQL one (pgledger.Blobs) run the
// same tests through Run. Only tests import it.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/privbo/privbo/pkg/blob"
)

// Run runs the behaviour every blob.Store must have, as subtests of t; open
// returns a new, empty store that is removed when the test ends. large is a
// size, in bytes, that spans several of the store's internal chunks (0 for 3
// MiB).
func Run(t *testing.T, open func(t *testing.T) blob.Store, large int) {
	if large == 0 {
		large = 3<<20 + 12345
	}
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) {
		s := open(t)
		for _, size := range []int{0, 1, 8 * 442 * 3, large} {
			data := randomBytes(size, uint64(size))
			name := fmt.Sprintf("blob-%d.f64", size)
			sum, err := s.Put(ctx, name, bytes.NewReader(data))
			if err != nil {
				t.Fatalf("Put(%d bytes): %v", size, err)
			}
			want := sha256.Sum256(data)
			if !bytes.Equal(sum, want[:]) {
				t.Errorf("Put(%d bytes) sum = %x, want %x", size, sum, want)
			}
			if got := read(t, s, name); !bytes.Equal(got, data) {
				t.Errorf("Open(%s) = %d bytes, not the %d bytes put", name, len(got), size)
			}
		}
	})
	t.Run("Immutable", func(t *testing.T) {
		s := open(t)
		first := []byte("first")
		if _, err := s.Put(ctx, "x", bytes.NewReader(first)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "x", bytes.NewReader([]byte("second"))); !errors.Is(err, blob.ErrExists) {
			t.Errorf("second Put(x) error = %v, want ErrExists", err)
		}
		if got := read(t, s, "x"); !bytes.Equal(got, first) {
			t.Errorf("after a refused Put, Open(x) = %q, want %q", got, first)
		}
	})
	t.Run("NotFoundAndDelete", func(t *testing.T) {
		s := open(t)
		if _, err := s.Open(ctx, "missing"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Open(missing) error = %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "missing"); err != nil {
			t.Errorf("Delete(missing) = %v, want nil", err)
		}
		if _, err := s.Put(ctx, "gone", bytes.NewReader(randomBytes(large, 7))); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "gone"); err != nil {
			t.Fatalf("Delete(gone): %v", err)
		}
		if _, err := s.Open(ctx, "gone"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Open after Delete error = %v, want ErrNotFound", err)
		}
		// A deleted name can be written again.
		if _, err := s.Put(ctx, "gone", bytes.NewReader([]byte("again"))); err != nil {
			t.Errorf("Put after Delete: %v", err)
		}
	})
	t.Run("InvalidName", func(t *testing.T) {
		s := open(t)
		for _, name := range []string{"", ".hidden", "a/b", "../x", "a b", "ä"} {
			if _, err := s.Put(ctx, name, bytes.NewReader(nil)); err == nil {
				t.Errorf("Put(%q) error = nil, want an invalid name", name)
			}
			if _, err := s.Open(ctx, name); err == nil || errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Open(%q) error = %v, want an invalid name", name, err)
			}
		}
	})
	t.Run("FailedPutLeavesNothing", func(t *testing.T) {
		s := open(t)
		broken := io.MultiReader(bytes.NewReader(randomBytes(large, 3)), errReader{})
		if _, err := s.Put(ctx, "half", broken); err == nil {
			t.Fatal("Put from a failing reader: error = nil")
		}
		if _, err := s.Open(ctx, "half"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Open after a failed Put error = %v, want ErrNotFound", err)
		}
		if _, err := s.Put(ctx, "half", bytes.NewReader([]byte("whole"))); err != nil {
			t.Errorf("Put after a failed Put: %v", err)
		}
	})
	t.Run("ConcurrentPut", func(t *testing.T) {
		s := open(t)
		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = s.Put(ctx, "race", bytes.NewReader(randomBytes(1<<16, uint64(i))))
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("Puts %d and %d of one name both succeeded", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, blob.ErrExists):
				t.Errorf("losing Put %d: %v, want ErrExists", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no Put of the name succeeded")
		}
		if got := read(t, s, "race"); !bytes.Equal(got, randomBytes(1<<16, uint64(won))) {
			t.Error("the stored blob is not the winner's bytes")
		}
	})
}

func read(t *testing.T, s blob.Store, name string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return b
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("reader broke") }
