package dataset

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseScaling(t *testing.T) {
	tests := []struct {
		spec    string
		want    Scaling
		wantErr string // fragment of the error; empty for success
	}{
		{"", Scaling{Mode: ScaleStandardiseNonprivate, MaxNorm: 25}, ""},
		{"standardise-nonprivate", Scaling{Mode: ScaleStandardiseNonprivate, MaxNorm: 25}, ""},
		{" Standardize-Nonprivate : 12.5 ", Scaling{Mode: ScaleStandardiseNonprivate, MaxNorm: 12.5}, ""},
		{"standardise-nonprivate:25", Scaling{Mode: ScaleStandardiseNonprivate, MaxNorm: 25}, ""},
		{"maxnorm-nonprivate", Scaling{Mode: ScaleMaxNormNonprivate, MaxNorm: 25}, ""},
		{"maxnorm-nonprivate:10", Scaling{Mode: ScaleMaxNormNonprivate, MaxNorm: 10}, ""},
		{"fixed:age=10,bmi=5", Scaling{Mode: ScaleFixed, ClipNorm: 25, Unit: 1, Scales: map[string]float64{"age": 10, "bmi": 5}}, ""},
		{"fixed: age = 10@50 , bmi=0.5@-2.5", Scaling{Mode: ScaleFixed, ClipNorm: 25, Unit: 1, Scales: map[string]float64{"age": 10, "bmi": 0.5}, Offsets: map[string]float64{"age": 50, "bmi": -2.5}}, ""},
		{"fixed:a=b=2", Scaling{Mode: ScaleFixed, ClipNorm: 25, Unit: 1, Scales: map[string]float64{"a=b": 2}}, ""},
		{"fixed:age=10;clip=5;unit=0.5", Scaling{Mode: ScaleFixed, ClipNorm: 5, Unit: 0.5, Scales: map[string]float64{"age": 10}}, ""},
		{"none", Scaling{Mode: ScaleNone, ClipNorm: 25, Unit: 1}, ""},
		{"None; Unit = 2 ; CLIP=100", Scaling{Mode: ScaleNone, ClipNorm: 100, Unit: 2}, ""},
		{"private", Scaling{Mode: ScalePrivate, ClipNorm: 25, Unit: 1}, ""},
		{"private:0.5;clip=10", Scaling{Mode: ScalePrivate, ClipNorm: 10, Unit: 1, Epsilon: 0.5}, ""},
		// The old data-dependent names are refused, naming the replacements.
		{"standardise", Scaling{}, "standardise-nonprivate"},
		{"Standardize:12.5", Scaling{}, "standardise-nonprivate"},
		{"maxnorm", Scaling{}, "maxnorm-nonprivate"},
		{"maxnorm:10", Scaling{}, "schema:FILE"},
		{"standardise", Scaling{}, "private"},
		{"zscore", Scaling{}, "unknown mode"},
		{"standardise-nonprivate:0", Scaling{}, "finite positive"},
		{"standardise-nonprivate:-3", Scaling{}, "finite positive"},
		{"maxnorm-nonprivate:NaN", Scaling{}, "finite positive"},
		{"maxnorm-nonprivate:Inf", Scaling{}, "finite positive"},
		{"maxnorm-nonprivate:ten", Scaling{}, "finite positive"},
		{"standardise-nonprivate;clip=3", Scaling{}, "apply to schema, private, fixed and none only"},
		{"none;clip=0", Scaling{}, "clip must be a finite positive number"},
		{"none;unit=-1", Scaling{}, "unit must be a finite positive number"},
		{"none;unit=NaN", Scaling{}, "unit must be a finite positive number"},
		{"none;radius=3", Scaling{}, "not clip=R or unit=U"},
		{"none;unit=2;unit=3", Scaling{}, "given twice"},
		{"private:0", Scaling{}, "finite positive"},
		{"private:x", Scaling{}, "finite positive"},
		{"schema", Scaling{}, "needs a schema file"},
		{"schema:/nonexistent/s.csv", Scaling{}, "/nonexistent/s.csv"},
		{"fixed", Scaling{}, "needs column scales"},
		{"fixed:", Scaling{}, "needs column scales"},
		{"fixed:age", Scaling{}, "not column=scale"},
		{"fixed:=3", Scaling{}, "no column name"},
		{"fixed:age=0", Scaling{}, "finite positive"},
		{"fixed:age=-1", Scaling{}, "finite positive"},
		{"fixed:age=inf", Scaling{}, "finite positive"},
		{"fixed:age=1,age=2", Scaling{}, "given twice"},
		{"fixed:age=1@x", Scaling{}, "offset of column"},
		{"fixed:age=1@NaN", Scaling{}, "offset of column"},
		{"fixed:age=1,", Scaling{}, "not column=scale"},
		{"none:1", Scaling{}, "no argument"},
	}
	for _, tt := range tests {
		got, err := ParseScaling(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "dataset: ") {
				t.Errorf("ParseScaling(%q) = %+v, %v, want an error containing %q", tt.spec, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !equalScaling(got, tt.want) {
			t.Errorf("ParseScaling(%q) = %+v, %v, want %+v", tt.spec, got, err, tt.want)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("ParseScaling(%q).Validate() = %v, want nil", tt.spec, err)
		}
		// String round-trips.
		back, err := ParseScaling(got.String())
		if err != nil || !equalScaling(back, got) {
			t.Errorf("ParseScaling(%q) = %+v, want %+v (round trip of %q)", got.String(), back, got, tt.spec)
		}
	}
}

func equalScaling(a, b Scaling) bool {
	return a.Mode == b.Mode && a.MaxNorm == b.MaxNorm && a.ClipNorm == b.ClipNorm && a.Unit == b.Unit &&
		a.Epsilon == b.Epsilon && a.TargetEpsilon == b.TargetEpsilon && a.Schema == b.Schema &&
		maps.Equal(a.Scales, b.Scales) && maps.Equal(a.Offsets, b.Offsets)
}

func TestScalingValidate(t *testing.T) {
	tests := []struct {
		s       Scaling
		wantErr string
	}{
		{Scaling{}, ""},
		{Scaling{MaxNorm: 3}, ""},
		{Scaling{Mode: ScaleMaxNormNonprivate}, ""},
		{Scaling{Mode: ScaleNone}, ""},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1}, Offsets: map[string]float64{"a": -3}}, ""},
		{Scaling{MaxNorm: math.NaN()}, "MaxNorm"},
		{Scaling{MaxNorm: math.Inf(1)}, "MaxNorm"},
		{Scaling{Mode: ScaleMaxNormNonprivate, MaxNorm: -1}, "MaxNorm"},
		{Scaling{Scales: map[string]float64{"a": 1}}, "fixed mode only"},
		{Scaling{Mode: ScaleNone, MaxNorm: 25}, "MaxNorm applies to the *-nonprivate modes only"},
		{Scaling{Mode: ScaleNone, ClipNorm: -1}, "ClipNorm must be finite and positive"},
		{Scaling{Mode: ScaleNone, Unit: math.Inf(1)}, "Unit must be finite and positive"},
		{Scaling{Mode: ScaleStandardiseNonprivate, ClipNorm: 3}, "private modes only"},
		{Scaling{Mode: ScaleNone, Schema: &Schema{}}, "Schema applies to schema and private mode only"},
		{Scaling{Mode: ScaleNone, Epsilon: 1}, "Epsilon and Delta apply to private mode only"},
		{Scaling{Mode: ScaleSchema}, "Schema must give"},
		{Scaling{Mode: ScaleSchema, Schema: SchemaFromBounds("s", []string{"a"}, []Bounds{{2, 1}})}, "lower 2 must be below upper 1"},
		{Scaling{Mode: ScaleSchema, Schema: SchemaFromBounds("s", []string{"a"}, []Bounds{{1, 2}})}, ""},
		{Scaling{Mode: ScalePrivate}, ""},
		{Scaling{Mode: ScalePrivate, Epsilon: -1}, "≥ 0"},
		{Scaling{Mode: ScalePrivate, Schema: &Schema{Columns: []SchemaColumn{{Name: "a", Scale: 1}}}}, "estimated bounds only"},
		{Scaling{Mode: ScaleNone, Scales: map[string]float64{"a": 1}}, "fixed mode only"},
		{Scaling{Mode: ScaleFixed}, "every feature"},
		{Scaling{Mode: ScaleFixed, MaxNorm: 25, Scales: map[string]float64{"a": 1}}, "MaxNorm applies to the *-nonprivate modes only"},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"": 1}}, "empty column name"},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 0}}, "finite and positive"},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": math.Inf(1)}}, "finite and positive"},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1}, Offsets: map[string]float64{"b": 1}}, "no scale"},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"a": 1}, Offsets: map[string]float64{"a": math.NaN()}}, "offset"},
		{Scaling{Mode: "Standardise"}, "unknown scaling mode"},
		{Scaling{Mode: "standardise"}, "no longer accepted"},
		{Scaling{Mode: "maxnorm"}, "standardise-nonprivate"},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%+v.Validate() = %v, want nil", tt.s, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%+v.Validate() = %v, want an error containing %q", tt.s, err, tt.wantErr)
		}
	}
}

// synthetic returns a CSV of n records with columns of very different
// location and spread, one constant column, and a target, together with the
// raw values (row-major n×5) and targets.
func synthetic(n int, seed uint64) (csv string, raw, y []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("height,weight,flag,dose,const,outcome\n")
	for range n {
		row := []float64{
			170 + 10*rng.NormFloat64(),
			1e4 + 3e3*rng.ExpFloat64(),
			float64(rng.IntN(2)),
			1e-3 * rng.Float64(),
			42,
		}
		t := rng.NormFloat64()
		for j, v := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		fmt.Fprintf(&b, ",%s\n", strconv.FormatFloat(t, 'g', -1, 64))
		raw = append(raw, row...)
		y = append(y, t)
	}
	return b.String(), raw, y
}

// TestScalingModes checks every mode against a direct two-pass computation
// of its definition (package doc) on synthetic data, and the resulting
// maximal row norm and column statistics.
func TestScalingModes(t *testing.T) {
	const n, d = 300, 5
	csv, raw, y := synthetic(n, 7)
	mean := make([]float64, d)
	sd := make([]float64, d)
	for j := range d {
		for i := range n {
			mean[j] += raw[i*d+j]
		}
		mean[j] /= n
		for i := range n {
			c := raw[i*d+j] - mean[j]
			sd[j] += c * c
		}
		sd[j] = math.Sqrt(sd[j] / n)
	}
	// want returns the expected X: (raw − off)/sc, then times the factor that
	// makes the maximal row norm maxNorm (0: no factor).
	want := func(off, sc []float64, maxNorm float64) []float64 {
		x := make([]float64, n*d)
		for i := range n {
			for j := range d {
				x[i*d+j] = (raw[i*d+j] - off[j]) / sc[j]
			}
		}
		if maxNorm > 0 {
			f := maxNorm / maxRowNorm(x, n, d)
			for k := range x {
				x[k] *= f
			}
		}
		return x
	}
	ones := []float64{1, 1, 1, 1, 1}
	sdOr1 := append([]float64(nil), sd...)
	sdOr1[4] = 1 // the constant column
	// A clip radius far above every row's norm: this test checks the affine
	// part; TestClipping checks the clip.
	fixed := Scaling{Mode: ScaleFixed, ClipNorm: 1e9,
		Scales:  map[string]float64{"height": 10, "weight": 1000, "flag": 1, "dose": 1e-4, "const": 7},
		Offsets: map[string]float64{"height": 170, "const": 40}}
	tests := []struct {
		s       Scaling
		want    []float64
		maxNorm float64 // wanted maximal row norm; 0: not fixed by the mode
	}{
		{Scaling{}, want(mean, sdOr1, 25), 25},
		{Scaling{Mode: ScaleStandardiseNonprivate, MaxNorm: 3}, want(mean, sdOr1, 3), 3},
		{Scaling{Mode: ScaleMaxNormNonprivate, MaxNorm: 10}, want(mean, ones, 10), 10},
		{fixed, want([]float64{170, 0, 0, 0, 40}, []float64{10, 1000, 1, 1e-4, 7}, 0), 0},
		{Scaling{Mode: ScaleNone, ClipNorm: 1e9}, raw, 0},
	}
	const tol = 1e-12 // relative to the maximal row norm (or 1): rounding only
	for _, tt := range tests {
		ds, err := ParseCSV(strings.NewReader(csv), "synthetic", Options{Target: "outcome", Scaling: tt.s})
		if err != nil {
			t.Fatalf("ParseCSV(%v) error: %v", tt.s, err)
		}
		scale := math.Max(tt.maxNorm, 1)
		for k := range tt.want {
			if math.Abs(ds.X[k]-tt.want[k]) > tol*scale*math.Max(1, math.Abs(tt.want[k])) {
				t.Fatalf("ParseCSV(%v).X[%d] = %.17g, want %.17g", tt.s, k, ds.X[k], tt.want[k])
			}
		}
		for i := range n {
			if ds.Y[i] != y[i] {
				t.Fatalf("ParseCSV(%v).Y[%d] = %v, want raw %v", tt.s, i, ds.Y[i], y[i])
			}
		}
		// X = (raw − Offset)/Scale for every mode.
		for i := range n {
			for j := range d {
				got := (raw[i*d+j] - ds.Offset[j]) / ds.Scale[j]
				if math.Abs(got-ds.X[i*d+j]) > 1e-9*scale {
					t.Fatalf("ParseCSV(%v): (raw − Offset)/Scale at (%d,%d) = %.17g, want X = %.17g", tt.s, i, j, got, ds.X[i*d+j])
				}
			}
		}
		if tt.maxNorm == 0 {
			continue
		}
		if got := maxRowNorm(ds.X, n, d); math.Abs(got-tt.maxNorm) > tol*tt.maxNorm {
			t.Errorf("ParseCSV(%v): max row norm = %.17g, want %g", tt.s, got, tt.maxNorm)
		}
		// Column statistics of X: mean 0; under standardise every varying
		// column has the same sd (the common factor), under maxnorm the sds
		// keep their raw ratios.
		var ratio0 float64
		for j := range d {
			var m, v float64
			for i := range n {
				m += ds.X[i*d+j]
			}
			m /= n
			for i := range n {
				v += (ds.X[i*d+j] - m) * (ds.X[i*d+j] - m)
			}
			s := math.Sqrt(v / n)
			if math.Abs(m) > tol*tt.maxNorm {
				t.Errorf("ParseCSV(%v): mean of column %s = %g, want 0", tt.s, ds.Features[j], m)
			}
			if j == 4 {
				if s != 0 {
					t.Errorf("ParseCSV(%v): sd of constant column = %g, want 0", tt.s, s)
				}
				continue
			}
			ratio := s
			if tt.s.Mode == ScaleMaxNormNonprivate {
				ratio = s / sd[j]
			}
			if j == 0 {
				ratio0 = ratio
			} else if math.Abs(ratio-ratio0) > 1e-9*ratio0 {
				t.Errorf("ParseCSV(%v): column %s sd ratio %.12g, want %.12g as for column %s", tt.s, ds.Features[j], ratio, ratio0, ds.Features[0])
			}
		}
	}
}

// TestScalingExtremeValues checks that inputs near the limits of float64
// still give finite data with the wanted maximal norm.
func TestScalingExtremeValues(t *testing.T) {
	tests := []struct {
		name, csv string
		errMode   ScalingMode // the mode that must fail, if any
	}{
		{"huge", "a,b,y\n1.7e308,1,0\n-1.7e308,2,0\n1e308,3,0\n", ""},
		{"tiny", "a,b,y\n1e-300,3e-300,0\n2e-300,1e-300,0\n0,0,0\n", ""},
		{"mixed", "a,b,y\n1.7e308,1e-300,0\n-1.7e308,2e-300,0\n0,3e-300,0\n", ""},
		// Subnormal data: the standardise scale sd/f underflows to zero, which
		// must give a clear error, not zeros or NaN; maxnorm's scale stays
		// (barely) representable.
		{"subnormal", "a,b,y\n5e-324,1e-320,0\n1e-323,3e-320,0\n0,0,0\n", ScaleStandardiseNonprivate},
	}
	for _, tt := range tests {
		for _, mode := range []ScalingMode{ScaleStandardiseNonprivate, ScaleMaxNormNonprivate} {
			ds, err := ParseCSV(strings.NewReader(tt.csv), tt.name, Options{Scaling: Scaling{Mode: mode}})
			if mode == tt.errMode {
				if err == nil || !strings.Contains(err.Error(), "floating-point range") {
					t.Errorf("ParseCSV(%s, %s) error = %v, want a floating-point range error", tt.name, mode, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("ParseCSV(%s, %s) error: %v", tt.name, mode, err)
				continue
			}
			for k, v := range ds.X {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("ParseCSV(%s, %s).X[%d] = %v, want finite", tt.name, mode, k, v)
				}
			}
			if got := maxRowNorm(ds.X, ds.N, ds.D); math.Abs(got-DefaultMaxNorm) > 1e-12*DefaultMaxNorm {
				t.Errorf("ParseCSV(%s, %s): max row norm = %.17g, want %d", tt.name, mode, got, DefaultMaxNorm)
			}
		}
	}
}

func TestUnitPerMode(t *testing.T) {
	// Means 1234.5 and 9876.5 appear in no Unit text: Unit states the
	// scaling, not the data's statistics.
	const data = "age,bmi,y\n1230,9870,1\n1239,9883,2\n"
	sch := &Schema{File: "ab.schema.csv", Columns: []SchemaColumn{{Name: "age", HasBounds: true, Lower: 1000, Upper: 2000}, {Name: "bmi", HasBounds: true, Lower: 9000, Upper: 11000}}}
	tests := []struct {
		s        Scaling
		private  bool
		contains []string
	}{
		{Scaling{}, false, []string{"standardised", "maximal norm of 25", "1/25", "does NOT hold", "data's own statistics"}},
		{Scaling{MaxNorm: 10}, false, []string{"standardised", "maximal norm of 10", "1/10", "does NOT hold"}},
		{Scaling{Mode: ScaleMaxNormNonprivate}, false, []string{"centred", "common factor", "1/25", "raw units", "does NOT hold"}},
		{Scaling{Mode: ScaleFixed, Scales: map[string]float64{"age": 10, "bmi": 5}, Offsets: map[string]float64{"age": 50}}, true,
			[]string{"public", "age by 10 after subtracting 50", "bmi by 5", "change of 10 in age alone", "clipped to norm 25", "at most 50 units", "no statistic of the data"}},
		{Scaling{Mode: ScaleNone, Unit: 2}, true, []string{"raw units", "no scaling", "change of 2 in the raw value", "divided by 2", "at most 25 units", "No statistic of the data"}},
		{Scaling{Mode: ScaleSchema, Schema: sch}, true, []string{"public range from the schema ab.schema.csv", "[−c, c] with c = 25/√2", "1/35.36 of a column's public range", "at most 50 units", "no statistic of the data"}},
		{Scaling{Mode: ScalePrivate, Epsilon: 0.5, Schema: sch, ClipNorm: 10}, true, []string{"estimated from the data with ε = 0.5", "replacement of one record", "not released", "c = 10/√2", "at most 20 units"}},
	}
	seen := make(map[string]bool)
	for _, tt := range tests {
		ds, err := ParseCSV(strings.NewReader(data), "t", Options{Scaling: tt.s})
		if err != nil {
			t.Fatalf("ParseCSV(%v) error: %v", tt.s, err)
		}
		u := ds.Unit
		if seen[u] {
			t.Errorf("ParseCSV(%v).Unit = %q, the same as for another scaling", tt.s, u)
		}
		seen[u] = true
		if ds.Private != tt.private {
			t.Errorf("ParseCSV(%v).Private = %v, want %v", tt.s, ds.Private, tt.private)
		}
		if !strings.HasPrefix(u, "Neighbouring datasets differ in one record's feature vector by at most 1 in Euclidean norm") {
			t.Errorf("ParseCSV(%v).Unit = %q, want it to state the neighbouring relation", tt.s, u)
		}
		for _, c := range tt.contains {
			if !strings.Contains(u, c) {
				t.Errorf("ParseCSV(%v).Unit = %q, want it to contain %q", tt.s, u, c)
			}
		}
		for _, stat := range []string{"1234.5", "9876.5"} {
			if strings.Contains(u, stat) {
				t.Errorf("ParseCSV(%v).Unit = %q, contains the column mean %s", tt.s, u, stat)
			}
		}
		if n := strings.Count(u, ". "); n > 2 {
			t.Errorf("ParseCSV(%v).Unit has %d sentences, want at most three: %q", tt.s, n+1, u)
		}
		wantDiam := math.Inf(1)
		if tt.private {
			wantDiam = 2 * ds.Scaling.ClipNorm / ds.Scaling.Unit
		}
		if got := ds.ClipDiameterUnits(); got != wantDiam {
			t.Errorf("ParseCSV(%v).ClipDiameterUnits() = %g, want %g", tt.s, got, wantDiam)
		}
	}
}

func TestClipping(t *testing.T) {
	x := []float64{
		3, 4, // norm 5: clipped to 2
		0.6, 0.8, // norm 1: kept
		0, 0, // kept
		1.5e308, -1.5e308, // norm overflows a naive sum of squares: clipped
		2, 0, // exactly on the sphere: kept
	}
	orig := slices.Clone(x)
	if got := clipRows(x, 5, 2, 2); got != 2 {
		t.Errorf("clipRows clipped %d rows, want 2", got)
	}
	want := [][]float64{{1.2, 1.6}, {0.6, 0.8}, {0, 0}, {math.Sqrt2, -math.Sqrt2}, {2, 0}}
	for i, w := range want {
		r := x[2*i : 2*i+2]
		if a, s := normParts(r); a*math.Sqrt(s) > 2 {
			t.Errorf("row %d norm %.17g after clipping to 2", i, rowNorm(r))
		}
		for j := range w {
			if math.Abs(r[j]-w[j]) > 1e-14 {
				t.Errorf("row %d = %v, want %v", i, r, w)
				break
			}
		}
		// Direction is kept.
		if i != 2 && math.Abs(r[0]*orig[2*i+1]-r[1]*orig[2*i])/rowNorm(orig[2*i:2*i+2]) > 1e-12 {
			t.Errorf("row %d = %v changed direction from %v", i, r, orig[2*i:2*i+2])
		}
	}
	if got := rowNorm([]float64{1e-300, 1e-300}); math.Abs(got-math.Sqrt2*1e-300) > 1e-314 {
		t.Errorf("rowNorm of tiny values = %g, want %g", got, math.Sqrt2*1e-300)
	}
}

// TestUnitDividesClippedRows: Unit U divides the clipped rows, so the data
// at Unit U are the data at Unit 1 divided by U, and Scale grows by U.
func TestUnitDividesClippedRows(t *testing.T) {
	const data = "a,b,y\n30,40,0\n3,4,0\n-1,2,0\n"
	one, err := ParseCSV(strings.NewReader(data), "t", Options{Scaling: Scaling{Mode: ScaleNone, ClipNorm: 10}})
	if err != nil {
		t.Fatal(err)
	}
	four, err := ParseCSV(strings.NewReader(data), "t", Options{Scaling: Scaling{Mode: ScaleNone, ClipNorm: 10, Unit: 4}})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []float64{6, 8, 3, 4, -1, 2} {
		if math.Abs(one.X[k]-want) > 1e-14 {
			t.Errorf("none, clip 10: X[%d] = %.17g, want %g", k, one.X[k], want)
		}
	}
	for k := range one.X {
		if four.X[k] != one.X[k]/4 {
			t.Errorf("unit 4: X[%d] = %g, want %g", k, four.X[k], one.X[k]/4)
		}
	}
	if four.Scale[0] != 4 || four.ClipDiameterUnits() != 5 || one.ClipDiameterUnits() != 20 || one.Clipped != 1 {
		t.Errorf("unit 4: Scale %v, diameters %g and %g, Clipped %d; want 4, 5, 20, 1", four.Scale, four.ClipDiameterUnits(), one.ClipDiameterUnits(), one.Clipped)
	}
}
