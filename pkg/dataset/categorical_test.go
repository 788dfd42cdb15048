package dataset

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// labelled is examples/data/breast_cancer_labelled.csv: ten numeric features, a text
// column diagnosis (benign or malignant) and the target worst_area.
var (
	labelledCSV    = filepath.Join("..", "..", "examples", "data", "breast_cancer_labelled.csv")
	labelledSchema = filepath.Join("..", "..", "examples", "data", "breast_cancer_labelled.schema.csv")
)

// TestTextColumnExcluded loads the shipped CSV with a text label column: without help
// the text is refused with a message that names file, line and column and says what to
// do; with Exclude the column is left out and the rest loads.
func TestTextColumnExcluded(t *testing.T) {
	_, err := LoadRaw(labelledCSV, Options{Target: "worst_area"})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Column != "diagnosis" || !strings.Contains(err.Error(), "exclude it") {
		t.Fatalf("text column without Exclude: %v, want a ParseError on line 2, column diagnosis, saying how to go on", err)
	}
	if strings.Contains(err.Error(), "malignant") {
		t.Errorf("the error repeats the cell's content: %v", err)
	}
	raw, err := LoadRaw(labelledCSV, Options{Target: "worst_area", Exclude: []string{"diagnosis"}})
	if err != nil {
		t.Fatal(err)
	}
	if raw.N != 569 || raw.D != 10 || slices.Contains(raw.Features, "diagnosis") {
		t.Errorf("with Exclude: %d rows, %d features %v; want 569, the 10 numeric ones", raw.N, raw.D, raw.Features)
	}
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Target: "worst_area", Exclude: []string{"nope"}}, "excluded column not in the header"},
		{Options{Target: "worst_area", Exclude: []string{"worst_area"}}, "target column cannot be excluded"},
		{Options{Target: "worst_area", Exclude: []string{"diagnosis"}, Features: []string{"mean_area"}}, "not both"},
	} {
		if _, err := LoadRaw(labelledCSV, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
}

// TestCategoricalOneHot loads the same file with the diagnosis as a categorical feature
// from the public schema: one one-hot feature per category, each in [0, 1] before
// scaling and scaled with those public bounds, exactly one of them hot per row and the
// hot one the row's category.
func TestCategoricalOneHot(t *testing.T) {
	sc, err := ParseScaling("schema:" + labelledSchema)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := LoadRaw(labelledCSV, Options{Target: "worst_area", Scaling: sc})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mean_radius", "mean_texture", "mean_perimeter", "mean_area", "mean_smoothness", "mean_compactness",
		"mean_concavity", "mean_concave_points", "mean_symmetry", "mean_fractal_dimension", "diagnosis=benign", "diagnosis=malignant"}
	if !slices.Equal(raw.Features, want) || raw.D != 12 {
		t.Fatalf("features %v (D %d), want %v", raw.Features, raw.D, want)
	}
	// Row 0 of the file is malignant, and the file has 357 benign rows (the
	// breast_cancer.csv target's count of 1s).
	benign := 0
	for i := range raw.N {
		b, m := raw.X[i*raw.D+10], raw.X[i*raw.D+11]
		if b+m != 1 || b*m != 0 {
			t.Fatalf("row %d: one-hot (%g, %g)", i, b, m)
		}
		benign += int(b)
	}
	if raw.X[10] != 0 || raw.X[11] != 1 || benign != 357 {
		t.Errorf("row 0 one-hot (%g, %g), %d benign rows; want (0, 1), 357", raw.X[10], raw.X[11], benign)
	}
	ds, err := raw.Scale(sc)
	if err != nil {
		t.Fatal(err)
	}
	// [0, 1] maps onto [−c, c], c = ClipNorm/√12, with off 1/2 and scale 1/(2c).
	for j := 10; j < 12; j++ {
		if got := ds.Scale[j] * 2 * DefaultClipNorm / math.Sqrt(12); ds.Offset[j] != 0.5 || math.Abs(got-1) > 1e-12 {
			t.Errorf("feature %s: offset %g scale %g, want 0.5 and 1/(2c)", ds.Features[j], ds.Offset[j], ds.Scale[j])
		}
	}
	if !ds.Private {
		t.Error("a schema with categories is not a private scaling")
	}
}

// TestUnknownCategory checks that a category the schema does not list is refused,
// naming file, line and column, and neither the value nor the other cells.
func TestUnknownCategory(t *testing.T) {
	sch, err := ParseSchema(strings.NewReader("column,lower,upper,categories\nx,0,1,\nlabel,,,pos|neg\ny,0,10,\n"), "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	data := "x,label,y\n0.5,pos,1\n0.25,maybe,2\n"
	_, err = ParseRaw(strings.NewReader(data), "d.csv", Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: sch}})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != "d.csv" || pe.Line != 3 || pe.Column != "label" || !strings.Contains(err.Error(), "s.csv") {
		t.Fatalf("unknown category: %v, want a ParseError naming d.csv, line 3, column label and the schema", err)
	}
	if strings.Contains(err.Error(), "maybe") || strings.Contains(err.Error(), "0.25") {
		t.Errorf("the error repeats data: %v", err)
	}
	for _, tc := range []struct{ schema, want string }{
		{"column,lower,upper,categories\nlabel,0,1,a|b\n", "only its categories"},
		{"column,categories\nlabel,a||b\n", "empty category"},
		{"column,categories\nlabel,a|b|a\n", "listed twice"},
	} {
		if _, err := ParseSchema(strings.NewReader(tc.schema), "s.csv"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("schema %q: %v, want %q", tc.schema, err, tc.want)
		}
	}
	catTarget, err := ParseSchema(strings.NewReader("column,lower,upper,categories\nx,0,1,\ny,,,a|b\n"), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	// A categorical target is a class label, read as its category's index; a category
	// the schema does not list is refused without repeating the cell.
	raw, err := ParseRaw(strings.NewReader("x,y\n0,b\n1,a\n0.5,b\n"), "d.csv", Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: catTarget}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(raw.Y, []float64{1, 0, 1}) || !slices.Equal(raw.TargetCategories, []string{"a", "b"}) {
		t.Errorf("categorical target: Y = %v, categories %v; want [1 0 1] and [a b]", raw.Y, raw.TargetCategories)
	}
	ds, err := raw.Scale(Scaling{Mode: ScaleSchema, Schema: catTarget})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ds.TargetCategories, []string{"a", "b"}) || ds.TargetRange == nil || *ds.TargetRange != (Bounds{0, 1}) {
		t.Errorf("scaled categorical target: categories %v, range %v; want [a b] and [0, 1]", ds.TargetCategories, ds.TargetRange)
	}
	_, err = ParseRaw(strings.NewReader("x,y\n0,a\n1,secret\n"), "d.csv", Options{Target: "y", Scaling: Scaling{Mode: ScaleSchema, Schema: catTarget}})
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Column != "y" || strings.Contains(err.Error(), "secret") {
		t.Errorf("unknown target category: %v, want a ParseError on line 3, column y, not repeating the cell", err)
	}
}

// TestTargetSpreadOverflow refuses at load a target whose values are further apart than
// float64 holds (the modeler could not model them, and a curator would have charged a
// release before finding out).
func TestTargetSpreadOverflow(t *testing.T) {
	_, err := ParseRaw(strings.NewReader("a,y\n1,1.7e308\n2,-1.7e308\n"), "x.csv", Options{Target: "y"})
	if err == nil || !strings.Contains(err.Error(), "rescale the target") {
		t.Errorf("target spread overflowing float64: %v", err)
	}
	if _, err := ParseRaw(strings.NewReader("a,y\n1,1.7e308\n2,1e308\n"), "x.csv", Options{Target: "y"}); err != nil {
		t.Errorf("large target values whose spread fits: %v", err)
	}
}
