package dataset

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchCSV returns a generated n×d CSV with a target column.
func benchCSV(n, d int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for j := range d {
		b.WriteString("x")
		b.WriteString(strconv.Itoa(j))
		b.WriteByte(',')
	}
	b.WriteString("y\n")
	buf := make([]byte, 0, 32)
	for range n {
		for range d {
			buf = strconv.AppendFloat(buf[:0], 100*rng.NormFloat64(), 'g', 8, 64)
			b.Write(buf)
			b.WriteByte(',')
		}
		buf = strconv.AppendFloat(buf[:0], rng.Float64(), 'g', 8, 64)
		b.Write(buf)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkParseCSV parses a generated 100,000×30 CSV (about 28 MB).
func BenchmarkParseCSV(b *testing.B) {
	data := benchCSV(100_000, 30)
	for _, mode := range []ScalingMode{ScaleStandardiseNonprivate, ScaleNone} {
		b.Run(string(mode), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				ds, err := ParseCSV(bytes.NewReader(data), "bench", Options{Scaling: Scaling{Mode: mode}})
				if err != nil {
					b.Fatal(err)
				}
				if ds.N != 100_000 || ds.D != 30 {
					b.Fatalf("ParseCSV: N %d D %d, want 100000 30", ds.N, ds.D)
				}
			}
		})
	}
}
