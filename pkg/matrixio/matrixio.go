// Package matrixio is privbo's one byte format for real matrices: row-major
// little-endian IEEE-754 binary64, no header. The curator stores released projections in
// it, streams them as it is, and the modeler decodes it.
package matrixio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"
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
	if littleEndian && len(dst) > 0 { // the bytes are the values' own
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(data)), data)
		return nil
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return nil
}

// littleEndian is whether this machine stores a float64 as the format does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// ReadFloat64s fills dst from r in the matrix byte format, decoding 64 KiB at a time
// into dst itself, so that a matrix read from a file or a stream is never held twice. r
// must hold exactly 8·len(dst) bytes.
func ReadFloat64s(dst []float64, r io.Reader) error {
	buf := make([]byte, 1<<16)
	for len(dst) > 0 {
		n := min(len(dst), len(buf)/8)
		if _, err := io.ReadFull(r, buf[:8*n]); err != nil {
			return fmt.Errorf("matrixio: %d values short: %w", len(dst), err)
		}
		_ = DecodeFloat64s(dst[:n], buf[:8*n]) // the lengths match
		dst = dst[n:]
	}
	switch _, err := io.ReadFull(r, buf[:1]); {
	case err == nil:
		return errors.New("matrixio: more bytes than the matrix holds")
	case err != io.EOF:
		return fmt.Errorf("matrixio: %w", err)
	}
	return nil
}

// NewReader returns a reader of vals in the matrix byte format, encoding a few
// thousand values at a time into one buffer of 64 KiB rather than the whole matrix at
// once.
func NewReader(vals []float64) io.Reader { return &reader{vals: vals} }

type reader struct {
	vals []float64 // not yet encoded
	buf  []byte    // encoded
	pos  int       // bytes of buf already read
}

func (r *reader) Read(p []byte) (int, error) {
	if r.pos == len(r.buf) {
		if len(r.vals) == 0 {
			return 0, io.EOF
		}
		n := min(len(r.vals), 1<<13)
		if r.buf == nil {
			r.buf = make([]byte, 0, 8*n)
		}
		// buf keeps its capacity: the next values are encoded where the last were.
		r.buf, r.pos = AppendFloat64s(r.buf[:0], r.vals[:n]), 0
		r.vals = r.vals[n:]
	}
	n := copy(p, r.buf[r.pos:])
	r.pos += n
	return n, nil
}
