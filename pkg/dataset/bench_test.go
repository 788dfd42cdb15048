package dataset

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"
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

// BenchmarkLoadFile loads the 100,000×30 table of BenchmarkParseCSV from a file, as CSV
// and as Parquet (DOUBLE columns, the writer's default row groups and pages), without
// scaling: the cost of the format.
func BenchmarkLoadFile(b *testing.B) {
	const n, d = 100_000, 30
	data := benchCSV(n, d)
	dir := b.TempDir()
	csvPath := filepath.Join(dir, "bench.csv")
	if err := os.WriteFile(csvPath, data, 0o600); err != nil {
		b.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		b.Fatal(err)
	}
	group := parquet.Group{}
	for _, h := range recs[0] {
		group[h] = parquet.Leaf(parquet.DoubleType)
	}
	schema := parquet.NewSchema("bench", group)
	pqPath := filepath.Join(dir, "bench.parquet")
	f, err := os.Create(pqPath)
	if err != nil {
		b.Fatal(err)
	}
	w := parquet.NewWriter(f, schema)
	for _, r := range recs[1:] {
		row := make(parquet.Row, len(r))
		for k, c := range schema.Columns() { // the group's columns, in name order
			v, _ := strconv.ParseFloat(r[slices.Index(recs[0], c[0])], 64)
			row[k] = parquet.ValueOf(v).Level(0, 0, k)
		}
		if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for _, path := range []string{csvPath, pqPath} {
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Ext(path)[1:], func(b *testing.B) {
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				r, err := LoadRaw(path, Options{Target: "y"})
				if err != nil {
					b.Fatal(err)
				}
				if r.N != n || r.D != d {
					b.Fatalf("LoadRaw: N %d D %d, want %d %d", r.N, r.D, n, d)
				}
			}
		})
	}
}
