package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
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
