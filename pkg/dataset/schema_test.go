package dataset

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantLine int
		wantText string
	}{
		{"empty", "", 0, "empty file"},
		{"unknown header", "column,lower,upper,width\n", 1, `header field 4 ("width")`},
		{"header twice", "column,lower,upper,lower\n", 1, `names "lower" twice`},
		{"no column", "lower,upper\n", 1, `no "column" field`},
		{"half bounds header", "column,lower,scale\n", 1, "only one of lower and upper"},
		{"nothing to give", "column,offset\n", 1, "neither lower and upper, nor scale, nor categories"},
		{"no lines", "# c\ncolumn,lower,upper\n# only comments\n", 0, "no column lines"},
		{"lower ≥ upper", "column,lower,upper\nage,18,90\nbmi,50,15\n", 3, "lower 50 must be below upper 15"},
		{"lower = upper", "column,lower,upper\nage,18,18\n", 2, "lower 18 must be below upper 18"},
		{"NaN", "column,lower,upper\nage,NaN,90\n", 2, `lower "NaN" is not a finite number`},
		{"Inf", "column,lower,upper\nage,18,+Inf\n", 2, `upper "+Inf" is not a finite number`},
		{"text", "column,lower,upper\nage,eighteen,90\n", 2, "not a finite number"},
		{"overflow", "column,lower,upper\nage,1,1e999\n", 2, "not a finite number"},
		{"zero scale", "column,scale,offset\nage,0,50\n", 2, "scale must be finite and positive, got 0"},
		{"negative scale", "column,scale\nage,-2\n", 2, "scale must be finite and positive"},
		{"named twice", "column,lower,upper\nage,18,90\nsex,1,2\nage,0,100\n", 4, "column named twice (first on line 2)"},
		{"bounds and scale", "column,lower,upper,scale\nage,18,90,10\n", 2, "both bounds (lower, upper) and a scale"},
		{"bounds and offset", "column,lower,upper,scale,offset\nage,18,90,,5\n", 2, "both bounds"},
		{"neither", "column,lower,upper,scale\nage,,,\n", 2, "neither bounds (lower, upper), nor a scale, nor categories"},
		{"only lower", "column,lower,upper\nage,18,\n", 2, "only one of lower and upper"},
		{"offset only", "column,scale,offset\nage,,3\n", 2, "offset but no scale"},
		{"short line", "column,lower,upper\nage,18\n", 2, "line has 2 fields, the header has 3"},
		{"empty name", "column,lower,upper\n,18,90\n", 2, "empty column name"},
		{"comments count lines", "# a comment\ncolumn,lower,upper\n# another\nage,90,18\n", 4, "must be below"},
		{"too far apart", "column,lower,upper\nage,-1e308,1e308\n", 2, "too far apart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchema(strings.NewReader(tt.text), "d.schema.csv")
			if err == nil {
				t.Fatalf("ParseSchema = %+v, nil, want an error", s)
			}
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSchema error %q (%T) is not a *SchemaError", err, err)
			}
			if se.File != "d.schema.csv" || se.Line != tt.wantLine {
				t.Errorf("ParseSchema error at %q line %d, want d.schema.csv line %d (%v)", se.File, se.Line, tt.wantLine, err)
			}
			msg := err.Error()
			wantPrefix := "dataset: schema d.schema.csv"
			if tt.wantLine > 0 {
				wantPrefix += ":" + formatFloat(float64(tt.wantLine)) + ": "
			}
			if !strings.HasPrefix(msg, wantPrefix) || !strings.Contains(msg, tt.wantText) {
				t.Errorf("ParseSchema error = %q, want prefix %q and text %q", msg, wantPrefix, tt.wantText)
			}
		})
	}
}

func TestParseSchema(t *testing.T) {
	const text = "\ufeff# public ranges\n Offset , SCALE,column , upper,lower\n,,age,90,18\n50,10,weight,,\n,0.5,dose,,\n"
	s, err := ParseSchema(strings.NewReader(text), "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []SchemaColumn{
		{Name: "age", Line: 3, HasBounds: true, Lower: 18, Upper: 90},
		{Name: "weight", Line: 4, Scale: 10, Offset: 50},
		{Name: "dose", Line: 5, Scale: 0.5},
	}
	if len(s.Columns) != len(want) {
		t.Fatalf("ParseSchema columns = %+v, want %+v", s.Columns, want)
	}
	for i := range want {
		if !reflect.DeepEqual(s.Columns[i], want[i]) {
			t.Errorf("column %d = %+v, want %+v", i, s.Columns[i], want[i])
		}
	}
	if c, ok := s.Column("weight"); !ok || c.Scale != 10 {
		t.Errorf("Column(weight) = %+v, %v", c, ok)
	}
	if _, ok := s.Column("height"); ok {
		t.Error("Column(height) found, want none")
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestLoadSchemaMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.schema.csv")
	_, err := LoadSchema(path)
	var se *SchemaError
	if !errors.As(err, &se) || se.File != path || !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), path) != 1 {
		t.Fatalf("LoadSchema(missing) error = %v, want a *SchemaError naming %q once, satisfying errors.Is(fs.ErrNotExist)", err, path)
	}
}

// TestSchemaApplied checks the fit of a schema to a data file: a missing
// feature, a scale line for the target, and the scaled values.
func TestSchemaApplied(t *testing.T) {
	const data = "a,b,c,y\n0,10,100,5\n2,30,300,6\n4,20,500,7\n"
	sch := func(text string) *Schema {
		s, err := ParseSchema(strings.NewReader(text), "abc.schema.csv")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Missing feature c: the error names the schema file and the data file.
	_, err := ParseCSV(strings.NewReader(data), "abc.csv", Options{Scaling: Scaling{Mode: ScaleSchema, Schema: sch("column,lower,upper\na,0,4\nb,10,30\nextra,0,1\n")}})
	var se *SchemaError
	if !errors.As(err, &se) || se.File != "abc.schema.csv" || !strings.Contains(err.Error(), `"c"`) || !strings.Contains(err.Error(), "abc.csv") {
		t.Fatalf("missing feature: error = %v, want a *SchemaError naming abc.schema.csv, column \"c\" and abc.csv", err)
	}
	// Only the selected features need a line.
	if _, err := ParseCSV(strings.NewReader(data), "abc.csv", Options{Features: []string{"a", "b"}, Scaling: Scaling{Mode: ScaleSchema, Schema: sch("column,lower,upper\na,0,4\nb,10,30\n")}}); err != nil {
		t.Fatalf("schema covering the selected features: %v", err)
	}
	// A scale line for the target.
	_, err = ParseCSV(strings.NewReader(data), "abc.csv", Options{Scaling: Scaling{Mode: ScaleSchema, Schema: sch("column,lower,upper,scale\na,0,4,\nb,10,30,\nc,,,100\ny,,,2\n")}})
	if !errors.As(err, &se) || se.Line != 5 || !strings.Contains(err.Error(), "abc.schema.csv:5") || !strings.Contains(err.Error(), "target") {
		t.Fatalf("target with a scale: error = %v, want one at abc.schema.csv:5 about the target", err)
	}
	// Values: a in [0, 4] and b in [10, 25] (30 clamps to 25) map onto
	// [−c, c], c = 3/√3 = √3 with ClipNorm 3; c has scale 100, offset 300.
	s := sch("column,lower,upper,scale,offset\na,0,4,,\nb,10,25,,\nc,,,100,300\ny,0,10,,\n")
	ds, err := ParseCSV(strings.NewReader(data), "abc.csv", Options{Scaling: Scaling{Mode: ScaleSchema, Schema: s, ClipNorm: 3}})
	if err != nil {
		t.Fatal(err)
	}
	c := math.Sqrt(3)
	wantRows := [][]float64{{-c, -c, -2}, {0, c, 0}, {c, c / 3, 2}}
	for i, w := range wantRows {
		// Row 0 has norm √(3+3+4) = √10 > 3 and is clipped; the others are within.
		nrm := math.Sqrt(w[0]*w[0] + w[1]*w[1] + w[2]*w[2])
		f := math.Min(1, 3/nrm)
		for j := range w {
			if got := ds.Row(i)[j]; math.Abs(got-f*w[j]) > 1e-12 {
				t.Errorf("Row(%d)[%d] = %.15g, want %.15g", i, j, got, f*w[j])
			}
		}
	}
	if ds.Clipped != 1 {
		t.Errorf("Clipped = %d, want 1 (row 0 has norm √10 > 3; rows 1 and 2 have √3 and √(3 + 1/3 + 4) < 3)", ds.Clipped)
	}
	if ds.TargetRange == nil || *ds.TargetRange != (Bounds{0, 10}) {
		t.Errorf("TargetRange = %v, want [0, 10]", ds.TargetRange)
	}
	if got := ds.RawRow(1); got[0] != 2 || got[1] != 30 || got[2] != 300 {
		t.Errorf("RawRow(1) = %v, want the raw values [2 30 300]", got)
	}
}

// TestShippedSchemas loads examples/data/*.schema.csv, checks that they hold
// every record of their data file (nothing is clamped, so the public ranges
// are wide enough) and that the scaled rows stay within ClipNorm without
// clipping (every column lies in [−c, c] with c = ClipNorm/√d).
func TestShippedSchemas(t *testing.T) {
	for _, tt := range []struct{ data, target string }{{"diabetes", "progression"}, {"breast_cancer", "benign"}, {"breast_cancer_labelled", "worst_area"}, {"airquality", "Ozone"}} {
		dir := filepath.Join("..", "..", "examples", "data")
		spec := "schema:" + filepath.Join(dir, tt.data+".schema.csv")
		sc, err := ParseScaling(spec)
		if err != nil {
			t.Fatal(err)
		}
		if sc.String() != spec {
			t.Errorf("ParseScaling(%q).String() = %q", spec, sc.String())
		}
		raw, err := LoadRaw(filepath.Join(dir, tt.data+".csv"), Options{Target: tt.target, Scaling: sc})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := raw.Scale(sc)
		if err != nil {
			t.Fatal(err)
		}
		if !ds.Private || ds.Clipped != 0 || ds.TargetRange == nil {
			t.Errorf("%s: Private %v, Clipped %d, TargetRange %v; want true, 0, set", tt.data, ds.Private, ds.Clipped, ds.TargetRange)
		}
		for i, y := range raw.Y {
			if y < ds.TargetRange.Lower || y > ds.TargetRange.Upper {
				t.Fatalf("%s: target of row %d outside the schema's range", tt.data, i)
			}
		}
		for j, f := range raw.Features {
			col, _ := sc.Schema.Column(f)
			for i := range raw.N {
				if v := raw.X[i*raw.D+j]; v < col.Lower || v > col.Upper {
					t.Fatalf("%s: column %s of row %d outside the schema's range", tt.data, f, i)
				}
			}
		}
		if got := maxRowNorm(ds.X, ds.N, ds.D); got > DefaultClipNorm {
			t.Errorf("%s: maximal row norm %g above %d", tt.data, got, DefaultClipNorm)
		}
	}
	// The schema file states where its ranges come from.
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "data", "diabetes.schema.csv"))
	if err != nil || !strings.Contains(string(b), "NOT read from the data") {
		t.Errorf("diabetes.schema.csv does not say its ranges are not read from the data (%v)", err)
	}
}

// TestSchemaUnknownColumn: a schema line for a column the data file lacks is an
// error naming the schema file, the line and the column (a misspelt name would
// otherwise go unnoticed); a line for a column of the file that is not a
// feature (excluded, or the target) is fine.
func TestSchemaUnknownColumn(t *testing.T) {
	data := "a,b,c,y\n1,2,x,3\n4,5,z,6\n"
	sch, err := ParseSchema(strings.NewReader("column,lower,upper\na,0,10\nb,0,10\nc,0,1\nd,0,1\ny,0,10\n"), "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	sc := Scaling{Mode: ScaleSchema, Schema: sch}
	raw, err := ParseRaw(strings.NewReader(data), "d.csv", Options{Exclude: []string{"c"}, Scaling: sc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Scale(sc)
	var se *SchemaError
	if !errors.As(err, &se) || se.File != "s.csv" || se.Line != 5 || se.Column != "d" || !strings.Contains(err.Error(), `no such column in data file d.csv (its columns are "a", "b", "c", "y")`) {
		t.Errorf("Scale with a line for column d: %v, want a SchemaError at s.csv:5 naming d and the file's columns", err)
	}
	ok, err := ParseSchema(strings.NewReader("column,lower,upper\na,0,10\nb,0,10\nc,0,1\ny,0,10\n"), "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	sc.Schema = ok
	if _, err := raw.Scale(sc); err != nil {
		t.Errorf("Scale with lines for an excluded column and the target: %v", err)
	}
}

// TestSchemaLineFor: the line a message asks an operator to add follows the
// schema's own header.
func TestSchemaLineFor(t *testing.T) {
	for _, tc := range []struct{ text, header, line string }{
		{"column,lower,upper\na,0,1\n", "column,lower,upper", "y,L,U"},
		{"upper,column,lower,scale\n1,a,0,\n", "upper,column,lower,scale", "U,y,L,"},
		{"column,scale,offset\na,2,0\n", "column,scale,offset", "y,L,U"},
	} {
		s, err := ParseSchema(strings.NewReader(tc.text), "s.csv")
		if err != nil {
			t.Fatal(err)
		}
		if s.HeaderLine() != tc.header || s.LineFor("y", "L", "U") != tc.line {
			t.Errorf("schema %q: HeaderLine %q, LineFor %q; want %q and %q", tc.text, s.HeaderLine(), s.LineFor("y", "L", "U"), tc.header, tc.line)
		}
	}
	if s := SchemaFromBounds("code", []string{"a"}, []Bounds{{0, 1}}); s.HeaderLine() != "column,lower,upper" || s.LineFor("y", "0", "9") != "y,0,9" {
		t.Errorf("schema built in code: HeaderLine %q, LineFor %q", s.HeaderLine(), s.LineFor("y", "0", "9"))
	}
}
