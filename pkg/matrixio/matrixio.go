// Package matrixio is privbo's one byte format for real matrices: row-major
// little-endian IEEE-754 binary64, no header. The curator stores released projections in
// it, streams them as it is, and the modeler decodes it.
package matrixio

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// MaxChunkBytes bounds the matrix bytes in one stream message, well below gRPC's default
// 4 MiB message limit.
const MaxChunkBytes = 2 << 20

// RowsPerChunk returns how many rows of a cols-wide matrix fit in one chunk (at least one).
func RowsPerChunk(cols int) int {
	if cols <= 0 {
		panic(fmt.Sprintf("matrixio: RowsPerChunk of %d columns", cols))
	}
	return max(1, MaxChunkBytes/(8*cols))
}

// AppendFloat64s appends vals to dst in the matrix byte format.
func AppendFloat64s(dst []byte, vals []float64) []byte {
	for _, v := range vals {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

// DecodeFloat64s decodes data into dst, which must have exactly len(data)/8 elements.
func DecodeFloat64s(dst []float64, data []byte) error {
	if len(data) != 8*len(dst) {
		return fmt.Errorf("matrixio: %d bytes for %d values, want %d bytes", len(data), len(dst), 8*len(dst))
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return nil
}

// NewReader returns a reader of vals in the matrix byte format, encoding a few
// thousand values at a time rather than the whole matrix at once.
func NewReader(vals []float64) io.Reader { return &reader{vals: vals} }

type reader struct {
	vals []float64 // not yet encoded
	buf  []byte    // encoded, not yet read
}

func (r *reader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if len(r.vals) == 0 {
			return 0, io.EOF
		}
		n := min(len(r.vals), 1<<13)
		r.buf = AppendFloat64s(r.buf[:0], r.vals[:n])
		r.vals = r.vals[n:]
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// WriteFileDurable writes vals to a new file at path (which must not exist), fsyncs the
// file and its directory, and returns the SHA-256 of the bytes written.
func WriteFileDurable(path string, vals []float64) (sum []byte, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("matrixio: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}()
	h := sha256.New()
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 0, 1<<16)
	for i := 0; i < len(vals); i += 1 << 13 {
		buf = AppendFloat64s(buf[:0], vals[i:min(len(vals), i+1<<13)])
		h.Write(buf)
		if _, err = w.Write(buf); err != nil {
			return nil, fmt.Errorf("matrixio: write %s: %w", path, err)
		}
	}
	if err = w.Flush(); err != nil {
		return nil, fmt.Errorf("matrixio: write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return nil, fmt.Errorf("matrixio: sync %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return nil, fmt.Errorf("matrixio: close %s: %w", path, err)
	}
	if err = syncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("matrixio: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("matrixio: sync dir %s: %w", dir, err)
	}
	return nil
}
