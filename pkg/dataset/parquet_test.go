package dataset

import (
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// writeParquet writes the CSV file csvPath as a Parquet file in dir, named after it,
// with the column types a warehouse export would give: INT64 for a column of whole
// numbers, DOUBLE for numbers, dictionary-encoded STRING for text, every column
// optional with an empty or NA cell written as null. Row groups of 50 rows and small
// pages make a table of a few hundred rows span several of both.
func writeParquet(t *testing.T, csvPath, dir string) string {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header, rows := recs[0], recs[1:]
	null := func(cell string) bool { return cell == "" || cell == "NA" }
	fields := make([]reflect.StructField, len(header))
	for k, h := range header {
		kind := reflect.Int64
		for _, r := range rows {
			if null(r[k]) {
				continue
			}
			if _, err := strconv.ParseInt(r[k], 10, 64); err != nil && kind == reflect.Int64 {
				kind = reflect.Float64
			}
			if _, err := strconv.ParseFloat(r[k], 64); err != nil {
				kind = reflect.String
				break
			}
		}
		tag := h
		if kind == reflect.String {
			tag += ",dict"
		}
		fields[k] = reflect.StructField{Name: "F" + strconv.Itoa(k), Type: reflect.PointerTo(reflect.TypeOf(map[reflect.Kind]any{
			reflect.Int64: int64(0), reflect.Float64: 0.0, reflect.String: ""}[kind])), Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	typ := reflect.StructOf(fields)
	path := filepath.Join(dir, strings.TrimSuffix(filepath.Base(csvPath), ".csv")+".parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := parquet.NewWriter(out, parquet.SchemaOf(reflect.New(typ).Interface()), parquet.MaxRowsPerRowGroup(50), parquet.PageBufferSize(512))
	for _, r := range rows {
		row := reflect.New(typ).Elem()
		for k, cell := range r {
			if null(cell) {
				continue
			}
			p := reflect.New(fields[k].Type.Elem())
			switch p.Elem().Kind() {
			case reflect.Int64:
				v, _ := strconv.ParseInt(cell, 10, 64)
				p.Elem().SetInt(v)
			case reflect.Float64:
				v, _ := strconv.ParseFloat(cell, 64)
				p.Elem().SetFloat(v)
			default:
				p.Elem().SetString(cell)
			}
			row.Field(k).Set(p)
		}
		if err := w.Write(row.Addr().Interface()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// bitsEqual reports whether a and b hold the same float64 values bit for bit.
func bitsEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestParquetSameAsCSV: a Parquet copy of a shipped example loads as the same Dataset as
// its CSV, bit for bit: airquality has NA cells in a feature and in the target and a
// categorical text column (dictionary-encoded in the copy), diabetes integer and float
// columns, breast_cancer_labelled a categorical target.
func TestParquetSameAsCSV(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, target, schema string
	}{
		{"airquality", "Ozone", "airquality.schema.csv"},
		{"diabetes", "progression", "diabetes.schema.csv"},
		{"diabetes", "progression", ""},
		{"breast_cancer_labelled", "", "breast_cancer_labelled.schema.csv"},
	} {
		csvPath := filepath.Join("..", "..", "examples", "data", tt.name+".csv")
		opt := Options{Target: tt.target}
		if tt.schema != "" {
			s, err := LoadSchema(filepath.Join("..", "..", "examples", "data", tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			opt.Scaling = Scaling{Mode: ScaleSchema, Schema: s}
		}
		want, err := LoadCSV(csvPath, opt)
		if err != nil {
			t.Fatal(err)
		}
		pq := writeParquet(t, csvPath, dir)
		got, err := LoadCSV(pq, opt)
		if err != nil {
			t.Fatalf("%s: LoadCSV(Parquet copy) = %v", tt.name, err)
		}
		if got.Name != want.Name || !slices.Equal(got.Features, want.Features) || got.Target != want.Target ||
			!slices.Equal(got.TargetCategories, want.TargetCategories) || got.N != want.N || got.D != want.D {
			t.Errorf("%s: Parquet copy = %s %v → %s %v, %d × %d; CSV = %s %v → %s %v, %d × %d", tt.name, got.Name, got.Features, got.Target,
				got.TargetCategories, got.N, got.D, want.Name, want.Features, want.Target, want.TargetCategories, want.N, want.D)
		}
		if !bitsEqual(got.X, want.X) || !bitsEqual(got.Y, want.Y) || !bitsEqual(got.Offset, want.Offset) || !bitsEqual(got.Scale, want.Scale) ||
			!bitsEqual(got.raw, want.raw) || got.Unit != want.Unit || !reflect.DeepEqual(got.TargetRange, want.TargetRange) || got.Clipped != want.Clipped {
			t.Errorf("%s (schema %q): the Parquet copy's values differ from the CSV's", tt.name, tt.schema)
		}
		if tt.name == "airquality" && got.N != 116 {
			t.Errorf("airquality: %d rows, want 116 (37 dropped for a missing target)", got.N)
		}
	}
}

// TestParquetTypes: booleans, 32-bit integers and floats, unsigned integers and
// decimals read as the numbers a CSV export of the column would show.
func TestParquetTypes(t *testing.T) {
	type row struct {
		B   bool    `parquet:"b"`
		I   int32   `parquet:"i"`
		F   float32 `parquet:"f"`
		U   uint32  `parquet:"u"`
		Dec int64   `parquet:"dec,decimal(2:10)"`
		Y   float64 `parquet:"y"`
	}
	path := filepath.Join(t.TempDir(), "types.parquet")
	if err := parquet.WriteFile(path, []row{{true, -3, 0.1, 4e9, -12345, 1}, {false, 7, 2.5, 1, 5, 2}}); err != nil {
		t.Fatal(err)
	}
	want, err := ParseRaw(strings.NewReader("b,i,f,u,dec,y\n1,-3,0.1,4000000000,-123.45,1\n0,7,2.5,1,0.05,2\n"), "types", Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadRaw(path, Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Features, want.Features) || !bitsEqual(got.X, want.X) || !bitsEqual(got.Y, want.Y) {
		t.Errorf("LoadRaw(Parquet) = %v %v %v, want %v %v %v", got.Features, got.X, got.Y, want.Features, want.X, want.Y)
	}
}

// TestParquetErrors: bad Parquet input gives the errors CSV gives, naming the column (and
// the row), never a cell's content, with a fix; a truncated file an error, not a panic.
func TestParquetErrors(t *testing.T) {
	dir := t.TempDir()
	type row struct {
		A    *float64 `parquet:"a"`
		Name string   `parquet:"name"`
		Y    float64  `parquet:"y"`
		When int32    `parquet:"when,date"`
	}
	one := 1.0
	good := filepath.Join(dir, "good.parquet")
	if err := parquet.WriteFile(good, []row{{&one, "secret-a", 1, 0}, {nil, "secret-b", 2, 0}, {&one, "secret-c", 3, 0}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.parquet")
	if err := os.WriteFile(truncated, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	// The footer intact, a data page's bytes overwritten.
	damaged := filepath.Join(dir, "damaged.parquet")
	bad := slices.Clone(b)
	for k := 4; k < len(b)/3; k++ {
		bad[k] = 0xff
	}
	if err := os.WriteFile(damaged, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		opt        Options
		want       []string
	}{
		{"text feature", good, Options{Target: "y", Features: []string{"name"}}, []string{`good.parquet: row 1: column "name": not a number (a text column? exclude it`}},
		{"missing column", good, Options{Target: "z"}, []string{`column "z": target column not in the header; columns are "a", "name", "y", "when"`}},
		{"missing cell", good, Options{Target: "y", Features: []string{"a"}}, []string{`missing cells`, `"a" (1 row)`}},
		{"date column", good, Options{Target: "y", Features: []string{"when"}}, []string{`column "when": a column of Parquet type DATE is not read`, "exclude it"}},
		{"truncated", truncated, Options{Target: "y"}, []string{"truncated.parquet: not a readable Parquet file", "write it again"}},
		{"damaged", damaged, Options{Target: "y", Features: []string{"a"}}, []string{"damaged.parquet: not a readable Parquet file", "write it again"}},
		{"empty", filepath.Join(dir, "empty.parquet"), Options{}, []string{"not a readable Parquet file"}},
	} {
		if tt.name == "empty" {
			if err := os.WriteFile(tt.path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := LoadRaw(tt.path, tt.opt)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: LoadRaw = %v, want a *ParseError", tt.name, err)
			continue
		}
		msg := err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: LoadRaw error\n%s\nwant it to contain %q", tt.name, msg, w)
			}
		}
		t.Log(msg)
		// The missing-cell message is CSV's, with a schema template after its sentence.
		if strings.Contains(msg, "secret") || len(msg) > 300 && tt.name != "missing cell" {
			t.Errorf("%s: error repeats a cell or runs over 300 characters: %s", tt.name, msg)
		}
	}
}

// FuzzLoadParquet checks that LoadRaw of a damaged Parquet file never panics and returns
// a *ParseError or a Raw of at least two rows. The seeds are valid files, so the fuzzer
// damages real footers and pages.
func FuzzLoadParquet(f *testing.F) {
	type row struct {
		A *float64 `parquet:"a"`
		C string   `parquet:"c,dict"`
		Y int64    `parquet:"y"`
	}
	var rows []row
	for i := range 40 {
		v := float64(i) / 3
		rows = append(rows, row{&v, []string{"u", "v"}[i%2], int64(i)})
	}
	rows[3].A = nil
	seed := filepath.Join(f.TempDir(), "seed.parquet")
	for _, opts := range [][]parquet.WriterOption{nil, {parquet.MaxRowsPerRowGroup(7), parquet.PageBufferSize(64)}} {
		if err := parquet.WriteFile(seed, rows, opts...); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.parquet")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		raw, err := LoadRaw(path, Options{Target: "y", Exclude: []string{"c"}, MissingMarkers: []string{}})
		var pe *ParseError
		switch {
		case err != nil && !errors.As(err, &pe):
			t.Fatalf("LoadRaw = %v, want a *ParseError", err)
		case err == nil && (raw.N < 2 || len(raw.X) != raw.N*raw.D):
			t.Fatalf("LoadRaw = %d rows, %d values; want at least 2 rows of %d", raw.N, len(raw.X), raw.D)
		}
	})
}
