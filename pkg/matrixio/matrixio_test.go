package matrixio

import (
	"bytes"
	"math"
	"testing"
	"testing/iotest"
)

func TestRoundTrip(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1.5, -2.25e300, math.SmallestNonzeroFloat64, math.Inf(1), math.MaxFloat64}
	data := AppendFloat64s(nil, vals)
	if len(data) != 8*len(vals) {
		t.Fatalf("len(AppendFloat64s) = %d, want %d", len(data), 8*len(vals))
	}
	// Little-endian 1.5 = 0x3FF8000000000000.
	if got, want := data[16:24], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}; !bytes.Equal(got, want) {
		t.Errorf("encoding of 1.5 = % x, want % x", got, want)
	}
	got := make([]float64, len(vals))
	if err := DecodeFloat64s(got, data); err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		if math.Float64bits(got[i]) != math.Float64bits(vals[i]) {
			t.Errorf("value %d = %v, want %v", i, got[i], vals[i])
		}
	}
	if err := DecodeFloat64s(got[:2], data); err == nil {
		t.Error("DecodeFloat64s with wrong length: no error")
	}
}

func TestRowsPerChunk(t *testing.T) {
	for _, tc := range []struct{ cols, want int }{{20, MaxChunkBytes / 160}, {1 << 20, 1}, {1, MaxChunkBytes / 8}} {
		if got := RowsPerChunk(tc.cols); got != tc.want {
			t.Errorf("RowsPerChunk(%d) = %d, want %d", tc.cols, got, tc.want)
		}
	}
}

func TestNewReader(t *testing.T) {
	for _, n := range []int{0, 1, 1<<13 - 1, 1 << 13, 20001} {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i) / 7
		}
		// A small buffer, so that reads end inside the encoded values.
		var got bytes.Buffer
		buf := make([]byte, 13)
		r := NewReader(vals)
		for {
			k, err := r.Read(buf)
			got.Write(buf[:k])
			if err != nil {
				break
			}
		}
		if want := AppendFloat64s(nil, vals); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("NewReader of %d values read %d bytes differing from AppendFloat64s (%d bytes)", n, got.Len(), len(want))
		}
	}
}

// TestNewReaderReusesItsBuffer: reading a matrix allocates one buffer of 8192 values,
// not one per 8192 values (the reader once grew a fresh buffer for every batch,
// allocating about four times the matrix).
func TestNewReaderReusesItsBuffer(t *testing.T) {
	vals := make([]float64, 1<<20) // 8 MiB encoded
	buf := make([]byte, 32<<10)
	allocs := testing.AllocsPerRun(3, func() {
		r := NewReader(vals)
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
	})
	if allocs > 2 { // the reader and its buffer
		t.Errorf("reading 2²⁰ values made %v allocations, want 2", allocs)
	}
}

// TestReadFloat64s: a matrix read in 64 KiB pieces equals the one encoded, bit for bit,
// from a reader that returns few bytes at a time; a stream too short or too long is an
// error.
func TestReadFloat64s(t *testing.T) {
	for _, n := range []int{0, 1, 1<<13 - 1, 1 << 13, 20001} {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i)/7 - 3
		}
		got := make([]float64, n)
		if err := ReadFloat64s(got, iotest.HalfReader(NewReader(vals))); err != nil {
			t.Fatalf("ReadFloat64s of %d values: %v", n, err)
		}
		for i := range vals {
			if math.Float64bits(got[i]) != math.Float64bits(vals[i]) {
				t.Fatalf("ReadFloat64s of %d values: value %d = %v, want %v", n, i, got[i], vals[i])
			}
		}
		data := AppendFloat64s(nil, vals)
		if err := ReadFloat64s(make([]float64, n+1), bytes.NewReader(data)); err == nil {
			t.Errorf("ReadFloat64s of %d values into %d: no error", n, n+1)
		}
		if err := ReadFloat64s(got, bytes.NewReader(append(data, 0))); err == nil {
			t.Errorf("ReadFloat64s of %d values and one byte more: no error", n)
		}
	}
}
