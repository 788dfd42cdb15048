package dataset

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dataLines returns the non-blank lines after the first non-blank line: the
// data rows of a small test CSV.
func dataLines(csv string) []string {
	var out []string
	header := true
	for l := range strings.SplitSeq(csv, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(l, "\ufeff"))
		if l == "" {
			continue
		}
		if header {
			header = false
			continue
		}
		out = append(out, l)
	}
	return out
}

func TestParseCSVErrors(t *testing.T) {
	fixedAB := Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1, "b": 2}}
	tests := []struct {
		name     string
		csv      string
		opt      Options
		wantLine int
		wantCol  string
		wantText string // a fragment of the message
	}{
		{"empty file", "", Options{}, 0, "", "empty file"},
		{"blank lines only", "\n\n\r\n", Options{}, 0, "", "empty file"},
		{"blank header", "\n  \n1,2\n", Options{}, 2, "", "header field 1 is empty"},
		{"header only", "a,b,y\n", Options{}, 0, "", "header only"},
		{"one row", "a,b,y\n1,2,3\n", Options{}, 0, "", "only 1 data row"},
		{"short row", "a,b,y\n1,2,3\n4,5\n7,8,9\n", Options{}, 3, "", "row has 2 fields, the header has 3"},
		{"long row", "a,b,y\n1,2,3\n4,5,6\n7,8,9,10\n", Options{}, 4, "", "row has 4 fields, the header has 3"},
		{"text cell", "a,b,y\n1,2,3\n4,x7,6\n", Options{}, 3, "b", "not a number"},
		{"text in target", "a,b,y\n1,2,3\n4,5,high\n", Options{}, 3, "y", "not a number"},
		{"NaN cell", "a,b,y\n1,2,3\nNaN,5,6\n", Options{}, 0, "", `missing cells (empty or one of ["NA" "NaN" "N/A" "." "?"]) in feature columns with no declared value, counted in the rows with a present target: "a" (1 row)`},
		{"NaN cell, not a missing marker", "a,b,y\n1,2,3\nNaN,5,6\n", Options{MissingMarkers: []string{"NA"}}, 3, "a", "NaN or infinite"},
		{"missing cells counted", "a,b,y\nNA,2,3\n4,?,6\n.,N/A,6\nna,5,\n", Options{}, 0, "", `"a" (2 rows), "b" (2 rows). Either give`},
		{"Inf cell", "a,b,y\n1,2,3\n4,-Inf,6\n", Options{}, 3, "b", "NaN or infinite"},
		{"infinity target", "a,b,y\n1,2,3\n4,5,+infinity\n", Options{}, 3, "y", "NaN or infinite"},
		{"out of range", "a,b,y\n1,2,3\n4,1e400,6\n", Options{}, 3, "b", "too large"},
		{"empty cell", "a,b,y\n1,2,3\n4,,6\n", Options{}, 0, "", `"b" (1 row)`},
		{"blank cell", "a,b,y\n1,2,3\n4,   ,6\n", Options{}, 0, "", `"b" (1 row)`},
		{"empty target cell", "a,b,y\n1,2,3\n4,5,\n", Options{}, 0, "", "only 1 data row with a present target"},
		{"duplicate header", "a,b,a,y\n1,2,3,4\n5,6,7,8\n", Options{}, 1, "a", "appears twice"},
		{"duplicate header after trimming", "a, a ,y\n1,2,3\n5,6,7\n", Options{}, 1, "a", "appears twice"},
		{"empty header name", "a,,y\n1,2,3\n4,5,6\n", Options{}, 1, "", "header field 2 is empty"},
		{"unknown target", "a,b,y\n1,2,3\n4,5,6\n", Options{Target: "z"}, 1, "z", "target column not in the header"},
		{"unknown feature", "a,b,y\n1,2,3\n4,5,6\n", Options{Features: []string{"a", "c"}}, 1, "c", "feature column not in the header"},
		{"target among features", "a,b,y\n1,2,3\n4,5,6\n", Options{Features: []string{"a", "y"}}, 1, "y", "also listed as a feature"},
		{"feature twice", "a,b,y\n1,2,3\n4,5,6\n", Options{Features: []string{"a", "b", "a"}}, 1, "a", "listed twice"},
		{"no features", "y\n1\n2\n", Options{}, 1, "", "no feature columns"},
		{"constant columns standardise", "a,b,y\n1,2,3\n1,2,4\n1,2,5\n", Options{}, 0, "", "every feature column is constant"},
		{"identical rows maxnorm", "a,b,y\n1,2,3\n1,2,4\n", Options{Scaling: Scaling{Mode: ScaleMaxNormNonprivate}}, 0, "", "all rows are identical"},
		{"bare quote", "a,b,y\n1,2,3\n4,5\"x,6\n", Options{}, 3, "", "malformed CSV"},
		{"unterminated quote", "a,b,y\n1,2,3\n\"4,5,6\n7,8,9\n", Options{}, 4, "", "record starting on line 3"},
		{"line of a cell after a multi-line field", "a,b,y\n\"1\n\",2,3\n4,5,6\n\"7\n\",8x,9\n", Options{}, 6, "b", "not a number"},
		{"blank lines before header", "\n\na,b,y\n1,2,3\n4,x,6\n", Options{}, 5, "b", "not a number"},
		{"CRLF", "a,b,y\r\n1,2,3\r\n4,x,6\r\n", Options{}, 3, "b", "not a number"},
		{"BOM", "\ufeffa,b,y\n1,2,3\nx,5,6\n", Options{}, 3, "a", "not a number"},
		{"fixed scale missing", "a,b,y\n1,2,3\n4,5,6\n", Options{Scaling: Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1}}}, 0, "", `no scale for feature columns "b"`},
		{"fixed scale for non-feature", "a,b,y\n1,2,3\n4,5,6\n", Options{Features: []string{"a"}, Scaling: fixedAB}, 1, "b", "not a feature"},
		{"fixed scale for target", "a,b,y\n1,2,3\n4,5,6\n", Options{Scaling: Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1, "b": 1, "y": 1}}}, 1, "y", "not a feature"},
		{"fixed overflow", "a,b,y\n1,2,3\n1e300,5,6\n", Options{Scaling: Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1e-10, "b": 1}}}, 3, "a", "overflows"},
		{"bad MaxNorm", "a,b,y\n1,2,3\n4,5,6\n", Options{Scaling: Scaling{MaxNorm: -1}}, 0, "", "MaxNorm must be finite and positive"},
		{"unknown mode", "a,b,y\n1,2,3\n4,5,6\n", Options{Scaling: Scaling{Mode: "zscore"}}, 0, "", "unknown scaling mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := ParseCSV(strings.NewReader(tt.csv), "t.csv", tt.opt)
			if err == nil {
				t.Fatalf("ParseCSV = %+v, nil, want an error", ds)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseCSV error %q (%T) is not a *ParseError", err, err)
			}
			if pe.File != "t.csv" || pe.Line != tt.wantLine || pe.Column != tt.wantCol {
				t.Errorf("ParseCSV error at file %q line %d column %q, want \"t.csv\" line %d column %q (%v)",
					pe.File, pe.Line, pe.Column, tt.wantLine, tt.wantCol, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "dataset: t.csv") || !strings.Contains(msg, tt.wantText) {
				t.Errorf("ParseCSV error = %q, want prefix \"dataset: t.csv\" and text %q", msg, tt.wantText)
			}
			if tt.wantCol != "" && !strings.Contains(msg, `column "`+tt.wantCol+`"`) {
				t.Errorf("ParseCSV error = %q, want it to name column %q", msg, tt.wantCol)
			}
			for _, l := range dataLines(tt.csv) {
				if len(l) >= 3 && strings.Contains(msg, l) {
					t.Errorf("ParseCSV error = %q contains the data row %q", msg, l)
				}
			}
		})
	}
}

// TestErrorsNeverEchoData triggers every kind of cell and row error with
// distinctive values around the bad cell and checks that none of them, nor
// the bad cell itself, appears in the message.
func TestErrorsNeverEchoData(t *testing.T) {
	const header = "age,bmi,progression\n10,20,30\n"
	secrets := []string{"93817.25", "77123.5", "5550123", "patient-4821"}
	rows := []string{
		"93817.25,patient-4821,77123.5",     // text cell in the middle
		"93817.25,77123.5,patient-4821",     // text in the target
		"93817.25,5550123",                  // ragged
		"93817.25,5550123,77123.5,1",        // ragged, long
		"93817.25,NaN,5550123",              // NaN
		"93817.25,,5550123",                 // empty
		"93817.25,1e999,5550123",            // out of range
		"93817.25,\"5550123\"x,77123.5",     // malformed quoting
		"\"93817.25,patient-4821,77123.5\n", // unterminated quote
	}
	for _, row := range rows {
		_, err := ParseCSV(strings.NewReader(header+row+"\n"), "t.csv", Options{})
		if err == nil {
			t.Fatalf("ParseCSV(row %q) = nil error, want one", row)
		}
		msg := err.Error()
		for _, s := range secrets {
			if strings.Contains(msg, s) {
				t.Errorf("ParseCSV(row %q) error = %q, contains cell value %q", row, msg, s)
			}
		}
	}
}

func TestParseErrorFormat(t *testing.T) {
	inner := errors.New("not a number")
	tests := []struct {
		e    ParseError
		want string
	}{
		{ParseError{File: "f.csv", Line: 3, Column: "bmi", Err: inner}, `dataset: f.csv:3: column "bmi": not a number`},
		{ParseError{File: "f.csv", Line: 3, Err: inner}, `dataset: f.csv:3: not a number`},
		{ParseError{File: "f.csv", Err: inner}, `dataset: f.csv: not a number`},
		{ParseError{Line: 7, Column: "a b", Err: inner}, `dataset: line 7: column "a b": not a number`},
		{ParseError{Column: "x\n", Err: inner}, `dataset: column "x\n": not a number`},
		{ParseError{File: "f.csv", Column: strings.Repeat("é", 70), Err: inner}, `dataset: f.csv: column "` + strings.Repeat("é", 64) + `"…: not a number`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("ParseError%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
		if got := tt.e.Unwrap(); got != inner {
			t.Errorf("ParseError%+v.Unwrap() = %v, want %v", tt.e, got, inner)
		}
	}
}

func TestFeatureSelection(t *testing.T) {
	const data = "a,y,b,c\n1,10,100,1000\n2,20,200,2000\n3,30,300,3000\n"
	tests := []struct {
		opt          Options
		wantFeatures []string
		wantTarget   string
		wantRow1     []float64 // raw values of record 1 in feature order (scaling none)
		wantY        []float64
	}{
		{Options{Target: "y"}, []string{"a", "b", "c"}, "y", []float64{2, 200, 2000}, []float64{10, 20, 30}},
		{Options{Target: "y", Features: []string{"c", "a"}}, []string{"c", "a"}, "y", []float64{2000, 2}, []float64{10, 20, 30}},
		{Options{Target: " y ", Features: []string{" b "}}, []string{"b"}, "y", []float64{200}, []float64{10, 20, 30}},
		{Options{}, []string{"a", "y", "b"}, "c", []float64{2, 20, 200}, []float64{1000, 2000, 3000}},
		{Options{Target: "a", Features: []string{"c", "b", "y"}}, []string{"c", "b", "y"}, "a", []float64{2000, 200, 20}, []float64{1, 2, 3}},
	}
	for _, tt := range tests {
		opt := tt.opt
		opt.Scaling = Scaling{Mode: ScaleNone, ClipNorm: 1e9}
		ds, err := ParseCSV(strings.NewReader(data), "t", opt)
		if err != nil {
			t.Fatalf("ParseCSV(%+v) error: %v", tt.opt, err)
		}
		if !slices.Equal(ds.Features, tt.wantFeatures) || ds.Target != tt.wantTarget || ds.D != len(tt.wantFeatures) || ds.N != 3 {
			t.Errorf("ParseCSV(%+v) features %q target %q N %d D %d, want %q %q 3 %d",
				tt.opt, ds.Features, ds.Target, ds.N, ds.D, tt.wantFeatures, tt.wantTarget, len(tt.wantFeatures))
			continue
		}
		if got := ds.Row(1); !slices.Equal(got, tt.wantRow1) {
			t.Errorf("ParseCSV(%+v).Row(1) = %v, want %v", tt.opt, got, tt.wantRow1)
		}
		if !slices.Equal(ds.Y, tt.wantY) {
			t.Errorf("ParseCSV(%+v).Y = %v, want %v", tt.opt, ds.Y, tt.wantY)
		}
	}
}

// TestLenientInput checks what the format allows: BOM, spaces around fields
// and names, CRLF, quoting, blank lines, text in unselected columns.
func TestLenientInput(t *testing.T) {
	const data = "\ufeff id , a ,\"b\", y \r\n" +
		"\r\n" +
		"alice,  1.5 , \"2\",3\r\n" +
		"\"bob, jr\",-4e1,5,  6  \r\n"
	ds, err := ParseCSV(strings.NewReader(data), "t", Options{Target: "y", Features: []string{"a", "b"}, Scaling: Scaling{Mode: ScaleNone, ClipNorm: 1e9}})
	if err != nil {
		t.Fatalf("ParseCSV error: %v", err)
	}
	if want := []float64{1.5, 2, -40, 5}; !slices.Equal(ds.X, want) {
		t.Errorf("X = %v, want %v", ds.X, want)
	}
	if want := []float64{3, 6}; !slices.Equal(ds.Y, want) {
		t.Errorf("Y = %v, want %v", ds.Y, want)
	}
	// An unselected column with an empty header name is still an error,
	// but text in an unselected column is not (checked above with "id").
}

func TestRow(t *testing.T) {
	ds, err := ParseCSV(strings.NewReader("a,b,y\n1,2,0\n3,4,0\n5,6,0\n"), "t", Options{Scaling: Scaling{Mode: ScaleNone}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]float64{{1, 2}, {3, 4}, {5, 6}} {
		got := ds.Row(i)
		if !slices.Equal(got, want) || cap(got) != 2 {
			t.Errorf("Row(%d) = %v (cap %d), want %v (cap 2)", i, got, cap(got), want)
		}
	}
	for _, i := range []int{-1, 3} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Row(%d) did not panic", i)
				}
			}()
			ds.Row(i)
		}()
	}
}

func TestLoadCSVMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.csv")
	_, err := LoadCSV(path, Options{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != path || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadCSV(missing) error = %v, want a *ParseError for %q satisfying errors.Is(fs.ErrNotExist)", err, path)
	}
	if strings.Count(err.Error(), path) != 1 {
		t.Errorf("LoadCSV(missing) error = %q, want the path once", err)
	}
	dir := t.TempDir()
	_, err = LoadCSV(dir, Options{})
	if !errors.As(err, &pe) || strings.Count(err.Error(), dir) != 1 {
		t.Errorf("LoadCSV(directory) error = %v, want a *ParseError naming %q once", err, dir)
	}
}

// TestLoadRealFiles loads the two public data sets shipped in examples/data. Reference
// values: shape and class counts from the data sets' documentation (Efron et
// al. 2004, Table 1: 442 patients, 10 baseline variables; UCI WDBC: 569
// instances, 30 features, 357 benign and 212 malignant); the means of
// progression and bmi were computed independently with awk from the file
// (awk -F, 'NR>1{s+=$11} END{printf "%.10f", s/(NR-1)}').
func TestLoadRealFiles(t *testing.T) {
	tests := []struct {
		file, target  string
		n, d          int
		firstFeature  string
		wantMeanY     float64
		meanFeature   string
		wantMeanFeat  float64
		meanTolerance float64
	}{
		{"diabetes.csv", "progression", 442, 10, "age", 152.1334841629, "bmi", 26.3757918552, 1e-9},
		{"breast_cancer.csv", "benign", 569, 30, "mean_radius", 357.0 / 569, "mean_radius", 14.1272917399, 1e-9},
	}
	for _, tt := range tests {
		path := filepath.Join("..", "..", "examples", "data", tt.file)
		for _, mode := range []ScalingMode{ScaleStandardiseNonprivate, ScaleMaxNormNonprivate} {
			ds, err := LoadCSV(path, Options{Target: tt.target, Scaling: Scaling{Mode: mode}})
			if err != nil {
				t.Fatalf("LoadCSV(%s, %s) error: %v", tt.file, mode, err)
			}
			if want := strings.TrimSuffix(tt.file, ".csv"); ds.Name != want {
				t.Errorf("LoadCSV(%s).Name = %q, want %q", tt.file, ds.Name, want)
			}
			if ds.N != tt.n || ds.D != tt.d || ds.Features[0] != tt.firstFeature || ds.Target != tt.target || len(ds.X) != tt.n*tt.d || len(ds.Y) != tt.n {
				t.Fatalf("LoadCSV(%s): N %d D %d first feature %q target %q, want %d %d %q %q",
					tt.file, ds.N, ds.D, ds.Features[0], ds.Target, tt.n, tt.d, tt.firstFeature, tt.target)
			}
			if got := mean(ds.Y); math.Abs(got-tt.wantMeanY) > tt.meanTolerance*math.Abs(tt.wantMeanY) {
				t.Errorf("LoadCSV(%s): mean of %s = %.10f, want %.10f", tt.file, tt.target, got, tt.wantMeanY)
			}
			j := slices.Index(ds.Features, tt.meanFeature)
			if got := ds.Offset[j]; math.Abs(got-tt.wantMeanFeat) > tt.meanTolerance*tt.wantMeanFeat {
				t.Errorf("LoadCSV(%s, %s): Offset[%s] = %.10f, want the column mean %.10f", tt.file, mode, tt.meanFeature, got, tt.wantMeanFeat)
			}
			if got := maxRowNorm(ds.X, ds.N, ds.D); math.Abs(got-DefaultMaxNorm) > 1e-12*DefaultMaxNorm {
				t.Errorf("LoadCSV(%s, %s): max row norm = %.15g, want %d", tt.file, mode, got, DefaultMaxNorm)
			}
		}
	}
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestCountLines: the CSV row hint is the line ends plus one, read without moving the
// file's offset (the CSV reader has already consumed the header through it).
func TestCountLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte("a,b\n1,2\n3,4"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(4, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n := countLines(f); n != 3 {
		t.Errorf("countLines = %d, want 3", n)
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off != 4 {
		t.Errorf("offset %d after countLines, want 4", off)
	}
}

// TestLoadRawFromPipe: a CSV file that can be read only once (a pipe: --data <(zcat f))
// loads without a row hint.
func TestLoadRawFromPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.WriteString("a,b\n1,2\n3,4\n5,6\n")
		w.Close()
	}()
	defer r.Close()
	raw, err := LoadRaw(fmt.Sprintf("/dev/fd/%d", r.Fd()), Options{Target: "b"})
	if err != nil || raw.N != 3 {
		t.Fatalf("LoadRaw of a pipe: %v, %+v", err, raw)
	}
}
