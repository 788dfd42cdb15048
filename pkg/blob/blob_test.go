package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/blob/blobtest"
)

func openDir(t *testing.T) blob.Store {
	d, err := blob.OpenDir(filepath.Join(t.TempDir(), "releases"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDir(t *testing.T) { blobtest.Run(t, openDir, 0) }

func TestFallback(t *testing.T) {
	ctx := context.Background()
	older, primary := openDir(t), openDir(t)
	if _, err := older.Put(ctx, "old", bytes.NewReader([]byte("old bytes"))); err != nil {
		t.Fatal(err)
	}
	s := blob.Fallback(primary, older)
	if _, err := s.Put(ctx, "new", bytes.NewReader([]byte("new bytes"))); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"old": "old bytes", "new": "new bytes"} {
		rc, err := s.Open(ctx, name)
		if err != nil {
			t.Fatalf("Open(%s): %v", name, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != want {
			t.Errorf("Open(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := older.Open(ctx, "new"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a Put through Fallback reached the older store: %v", err)
	}
	if _, err := s.Open(ctx, "neither"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open(neither) error = %v, want ErrNotFound", err)
	}
}

// zeros reads n zero bytes without allocating.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}

// TestFootprint checks what the stores state they hold per call (blob.Footprint)
// against the bytes a Put of 32 MiB and the reading of it back allocate
// (runtime.MemStats.TotalAlloc, never below the peak of live memory), and the defaults
// for a store that states nothing.
func TestFootprint(t *testing.T) {
	ctx := context.Background()
	d := openDir(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := d.Put(ctx, "big", &zeros{32 << 20}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got, limit := int64(after.TotalAlloc-before.TotalAlloc), blob.PutMemory(d); got > limit {
		t.Errorf("Dir.Put of 32 MiB allocated %d bytes, PutMemory = %d", got, limit)
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	rc, err := d.Open(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := rc.Read(buf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	rc.Close()
	runtime.ReadMemStats(&after)
	if got, limit := int64(after.TotalAlloc-before.TotalAlloc)-int64(len(buf)), blob.OpenMemory(d); got > limit {
		t.Errorf("reading 32 MiB from Dir allocated %d bytes besides the buffer, OpenMemory = %d", got, limit)
	}
	other := openDir(t)
	if f := blob.Fallback(d, other); blob.PutMemory(f) != blob.PutMemory(d) || blob.OpenMemory(f) != blob.OpenMemory(d) {
		t.Errorf("Fallback's footprint = %d, %d; want its stores' %d, %d", blob.PutMemory(f), blob.OpenMemory(f), blob.PutMemory(d), blob.OpenMemory(d))
	}
	var unknown struct{ blob.Store }
	if blob.PutMemory(unknown) != blob.DefaultCallMemory || blob.OpenMemory(unknown) != blob.DefaultCallMemory {
		t.Errorf("a store stating nothing: %d, %d; want DefaultCallMemory", blob.PutMemory(unknown), blob.OpenMemory(unknown))
	}
}
