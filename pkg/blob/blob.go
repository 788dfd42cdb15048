// Package blob stores the curator's released byte strings (the projection
// matrices) under names, so that a release can be replayed byte for byte.
// The curator writes a blob durably before it charges the release that names
// it, and only the charge's commit lets anything leave (docs/DESIGN.md, "The
// release protocol"); a blob is never changed once written.
//
// Dir keeps the blobs as files in a directory (the curator's --state); with a
// PostgreSQL ledger the curator keeps them in the same database instead
// (pgledger.Blobs), so that every replica can replay every release without a
// shared disk. Fallback reads the releases made before such a switch.
package blob

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Store keeps immutable, named blobs. Implementations are safe for concurrent
// use.
type Store interface {
	// Put stores the bytes of r under name, which must pass CheckName and not
	// exist yet (an error wrapping ErrExists otherwise), and returns their
	// SHA-256. The blob is durable when Put returns nil; on error nothing is
	// left under name, or what is left is never read (names are not reused).
	Put(ctx context.Context, name string, r io.Reader) (sum []byte, err error)
	// Open returns the bytes of name, or an error wrapping ErrNotFound. The
	// reader may use ctx while it is read.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Delete removes name; removing a blob that does not exist is no error.
	Delete(ctx context.Context, name string) error
}

// Info describes a stored blob (Lister).
type Info struct {
	Name string
	Size int64
	// Created is when the blob was written: when its Put began (PostgreSQL), or
	// the file's modification time (Dir), which a Put in progress keeps recent.
	Created time.Time
}

// Lister is implemented by stores that can list their blobs, so that the curator
// can remove the matrices no ledger record names (curator.RemoveOrphans).
type Lister interface {
	List(ctx context.Context) ([]Info, error)
}

// Footprint is implemented by stores that know how much memory one Put, and one reader
// returned by Open, hold while they run (their buffers), so that the curator can count a
// release's memory before making it (package memory).
type Footprint interface {
	PutMemory() int64
	OpenMemory() int64
}

// DefaultCallMemory is the memory PutMemory and OpenMemory assume for a store that does
// not implement Footprint.
const DefaultCallMemory = 4 << 20

// PutMemory is the memory one Put of s holds besides the bytes it is given.
func PutMemory(s Store) int64 {
	if f, ok := s.(Footprint); ok {
		return f.PutMemory()
	}
	return DefaultCallMemory
}

// OpenMemory is the memory one reader returned by s's Open holds besides the buffer it
// is read into.
func OpenMemory(s Store) int64 {
	if f, ok := s.(Footprint); ok {
		return f.OpenMemory()
	}
	return DefaultCallMemory
}

var (
	// ErrNotFound is returned by Open for a name that holds no blob.
	ErrNotFound = errors.New("blob: not found")
	// ErrExists is returned by Put for a name that already holds a blob.
	ErrExists = errors.New("blob: already exists")
)

// MaxNameLen bounds a blob's name.
const MaxNameLen = 200

// CheckName reports whether name is a valid blob name: 1 to MaxNameLen bytes
// of [A-Za-z0-9._-], not starting with a dot, so that it is also a plain file
// name in any directory.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen || name[0] == '.' {
		return fmt.Errorf("blob: invalid name %q (1 to %d bytes, not starting with a dot)", name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			continue
		}
		return fmt.Errorf("blob: invalid name %q (only letters, digits, '.', '_' and '-')", name)
	}
	return nil
}

// Dir is a Store of files in one directory.
type Dir struct {
	dir string
}

// OpenDir returns the Store of the files in dir, creating dir (mode 0700) if
// missing.
func OpenDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Dir{dir: dir}, nil
}

// Put writes r to a new file, fsyncs the file and the directory, and returns
// the SHA-256 of the bytes written.
func (d *Dir) Put(ctx context.Context, name string, r io.Reader) (sum []byte, err error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := filepath.Join(d.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %s", ErrExists, name)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}()
	h := sha256.New()
	w := bufio.NewWriterSize(&writeback{f: f}, putBuffer)
	if _, err = io.Copy(io.MultiWriter(w, h), r); err != nil {
		return nil, fmt.Errorf("blob: write %s: %w", path, err)
	}
	if err = w.Flush(); err != nil {
		return nil, fmt.Errorf("blob: write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return nil, fmt.Errorf("blob: sync %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return nil, fmt.Errorf("blob: close %s: %w", path, err)
	}
	if err = syncDir(d.dir); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// writeback writes to f and has each write start on its way to disk at once
// (startWriteback), so that the fsync that ends Put waits for the last buffers rather
// than for the whole file, whose writing overlaps the computation of its bytes.
type writeback struct {
	f   *os.File
	off int64
}

func (w *writeback) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	startWriteback(w.f, w.off, int64(n))
	w.off += int64(n)
	return n, err
}

// putBuffer is the size of Put's write buffer.
const putBuffer = 1 << 20

// PutMemory is Put's write buffer and io.Copy's (Footprint).
func (d *Dir) PutMemory() int64 { return putBuffer + 64<<10 }

// OpenMemory is an open file's (Footprint): the bytes are read into the caller's buffer.
func (d *Dir) OpenMemory() int64 { return 4 << 10 }

// Open opens the file of name.
func (d *Dir) Open(_ context.Context, name string) (io.ReadCloser, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotFound, name, d.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return f, nil
}

// Delete removes the file of name.
func (d *Dir) Delete(_ context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(d.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob: %w", err)
	}
	return nil
}

// List returns the regular files of the directory whose names are blob names
// (CheckName), with their sizes and modification times (Lister).
func (d *Dir) List(_ context.Context) ([]Info, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	var out []Info
	for _, e := range ents {
		if !e.Type().IsRegular() || CheckName(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) { // removed meanwhile
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("blob: %w", err)
		}
		out = append(out, Info{Name: e.Name(), Size: fi.Size(), Created: fi.ModTime()})
	}
	return out, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("blob: sync dir %s: %w", dir, err)
	}
	return nil
}

// Fallback returns a Store that writes and deletes in primary and reads from
// primary, or, for a name primary does not hold, from older: a curator that
// moved its blobs (from the files of --state into PostgreSQL) still replays
// the releases stored before the move, on the replica that holds them.
func Fallback(primary, older Store) Store { return fallback{primary, older} }

type fallback struct{ primary, older Store }

func (f fallback) Put(ctx context.Context, name string, r io.Reader) ([]byte, error) {
	return f.primary.Put(ctx, name, r)
}

func (f fallback) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := f.primary.Open(ctx, name)
	if errors.Is(err, ErrNotFound) {
		if rc, err2 := f.older.Open(ctx, name); err2 == nil {
			return rc, nil
		}
	}
	return rc, err
}

func (f fallback) PutMemory() int64 { return PutMemory(f.primary) }

func (f fallback) OpenMemory() int64 { return max(OpenMemory(f.primary), OpenMemory(f.older)) }

func (f fallback) Delete(ctx context.Context, name string) error {
	return f.primary.Delete(ctx, name)
}
