package dataset

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// loadSchema parses a schema given as text, or fails the test.
func loadSchema(t *testing.T, text string) *Schema {
	t.Helper()
	sch, err := ParseSchema(strings.NewReader(text), "m.schema.csv")
	if err != nil {
		t.Fatalf("ParseSchema: %v", err)
	}
	return sch
}

// rowDistance is ‖a.Row(i) − b.Row(k)‖₂.
func rowDistance(a *Dataset, i int, b *Dataset, k int) float64 {
	var s float64
	for j, v := range a.Row(i) {
		s += (v - b.Row(k)[j]) * (v - b.Row(k)[j])
	}
	return math.Sqrt(s)
}

// TestMissingIsPerRecord pins what docs/PRIVACY.md ("Missing values and transforms")
// states, through the real loader: two files differing in one record, whose cell is
// present in one and missing in the other, give scaled rows that differ only in that
// row, by at most the clip diameter; the missing cell takes the schema's public value
// and its indicator is 1.
func TestMissingIsPerRecord(t *testing.T) {
	sch := loadSchema(t, "column,lower,upper,missing,missing_indicator,transform\n"+
		"a,1,1000,10,yes,log\nb,0,100,,,\ny,0,10,,,\n")
	opt := Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: sch}}
	for _, marker := range []string{"NA", "", " nan ", ".", "?", "N/A"} {
		x := "a,b,y\n5,1,1\n900,80,2\n3,3,3\n"
		xm := "a,b,y\n5,1,1\n" + marker + ",80,2\n3,3,3\n"
		ds, err := ParseCSV(strings.NewReader(x), "x.csv", opt)
		if err != nil {
			t.Fatal(err)
		}
		dm, err := ParseCSV(strings.NewReader(xm), "xm.csv", opt)
		if err != nil {
			t.Fatalf("marker %q: %v", marker, err)
		}
		if want := []string{"a", "a=missing", "b"}; !slices.Equal(dm.Features, want) {
			t.Fatalf("Features = %q, want %q", dm.Features, want)
		}
		for i := range ds.N {
			d := rowDistance(ds, i, dm, i)
			if i != 1 && d != 0 {
				t.Errorf("marker %q: row %d moved by %g, want 0 (only the changed record's row may move)", marker, i, d)
			}
			if i == 1 && !(d > 0 && d <= dm.ClipDiameterUnits()) {
				t.Errorf("marker %q: the changed row moved by %g, want in (0, %g]", marker, d, dm.ClipDiameterUnits())
			}
		}
		if raw := dm.RawRow(1); raw[0] != 10 || raw[1] != 1 || ds.RawRow(1)[1] != 0 {
			t.Errorf("marker %q: raw row %v (present: %v), want a = 10 (the schema's value) and indicator 1 (0 when present)", marker, raw, ds.RawRow(1))
		}
	}
}

// TestMissingTargetDropped: a record whose target is missing is no candidate. The file
// loads with n one less and every other row as before (a removal, which the
// replacement relation does not cover: docs/PRIVACY.md).
func TestMissingTargetDropped(t *testing.T) {
	sch := loadSchema(t, "column,lower,upper\na,0,10\nb,0,10\ny,0,10\n")
	opt := Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: sch}}
	full := "a,b,y\n1,2,3\n4,5,6\n7,8,9\n2,2,2\n"
	cut := "a,b,y\n1,2,3\n4,5,NA\n7,8,9\n2,2,2\n"
	ds, err := ParseCSV(strings.NewReader(full), "full.csv", opt)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ParseRaw(strings.NewReader(cut), "cut.csv", opt)
	if err != nil {
		t.Fatal(err)
	}
	if raw.N != ds.N-1 || raw.MissingTarget != 1 {
		t.Fatalf("N = %d, MissingTarget = %d, want %d and 1", raw.N, raw.MissingTarget, ds.N-1)
	}
	dc, err := raw.Scale(opt.Scaling)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []int{0, 2, 3} {
		if d := rowDistance(ds, k, dc, i); d != 0 || ds.Y[k] != dc.Y[i] {
			t.Errorf("row %d of the cut file differs from row %d of the full one (by %g)", i, k, d)
		}
	}
}

// TestMissingCategorical: a categorical column's missing cell takes its declared
// category, and a category that looks like a marker stays a category.
func TestMissingCategorical(t *testing.T) {
	sch := loadSchema(t, "column,lower,upper,categories,missing\nc,,,x|NA,x\ny,0,10,,\n")
	ds, err := ParseCSV(strings.NewReader("c,y\nNA,1\n?,2\nx,3\n"), "c.csv", Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: sch}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{0, 1}, {1, 0}, {1, 0}}
	for i, w := range want {
		if got := ds.RawRow(i); !slices.Equal(got, w) {
			t.Errorf("row %d = %v, want %v", i, got, w)
		}
	}
}

// TestTransform: a log column is clamped in its own units, then mapped with log(lower)
// and log(upper): the geometric midpoint goes to 0, the bounds to ±c.
func TestTransform(t *testing.T) {
	sch := loadSchema(t, "column,lower,upper,transform\na,1,10000,log\nb,0,100,sqrt\ny,0,10,\n")
	ds, err := ParseCSV(strings.NewReader("a,b,y\n100,25,1\n1e6,0,2\n0.5,100,3\n"), "t.csv", Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: sch}})
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultClipNorm / math.Sqrt2
	want := [][]float64{{0, 0}, {c, -c}, {-c, c}}
	for i, w := range want {
		for j, v := range ds.Row(i) {
			if math.Abs(v-w[j]) > 1e-9 {
				t.Errorf("Row(%d)[%d] = %g, want %g", i, j, v, w[j])
			}
		}
	}
}

func TestMissingAndTransformSchemaErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"column,lower,upper,transform\na,0,10,log\n", "log needs lower > 0"},
		{"column,lower,upper,transform\na,-1,10,log1p\n", "log1p lower > −1"},
		{"column,lower,upper,transform\na,-0.5,10,sqrt\n", "sqrt lower ≥ 0"},
		{"column,lower,upper,transform\na,1,10,exp\n", `transform "exp": want log, log1p or sqrt`},
		{"column,scale,transform\na,2,log\n", "a transform needs the column's bounds"},
		{"column,categories,transform\na,x|y,sqrt\n", "a transform needs the column's bounds"},
		{"column,lower,upper,missing\na,0,10,lots\n", `missing "lots" must be a finite number within the column's bounds`},
		{"column,lower,upper,missing\na,0,10,11\n", "within the column's bounds"},
		{"column,categories,missing\na,x|y,z\n", `missing "z" is not one of the column's categories`},
		{"column,lower,upper,missing_indicator\na,0,10,yes\n", "missing_indicator needs a missing value"},
		{"column,lower,upper,missing,missing_indicator\na,0,10,1,perhaps\n", "want yes or no"},
		{"column,categories,missing,missing_indicator\na,x|missing,x,yes\n", "would both make the feature column=missing"},
	} {
		_, err := ParseSchema(strings.NewReader(tt.text), "e.csv")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSchema(%q) = %v, want an error containing %q", tt.text, err, tt.want)
		}
	}
	sch := loadSchema(t, "column,lower,upper,missing\na,0,10,\ny,0,10,5\n")
	_, err := ParseRaw(strings.NewReader("a,y\n1,2\n3,4\n"), "d.csv", Options{Scaling: Scaling{Mode: ScaleSchema, Schema: sch}})
	if err == nil || !strings.Contains(err.Error(), "the target's line gives a missing value") {
		t.Errorf("a missing value on the target's line: %v, want it refused", err)
	}
}
