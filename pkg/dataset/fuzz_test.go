package dataset

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// fuzzScalings are the scalings FuzzParseCSV picks from; the fixed one fits
// a header "a,b,y".
var fuzzScalings = []Scaling{
	{},
	{Mode: ScaleMaxNormNonprivate, MaxNorm: 10},
	{Mode: ScaleFixed, Scales: map[string]float64{"a": 2, "b": 0.5}, Offsets: map[string]float64{"a": 1}},
	{Mode: ScaleNone},
	{Mode: ScaleNone, ClipNorm: 3, Unit: 0.5},
	{Mode: ScaleSchema, Schema: &Schema{File: "f.schema.csv", Columns: []SchemaColumn{
		{Name: "a", HasBounds: true, Lower: -1, Upper: 5}, {Name: "b", Scale: 1e-3, Offset: 7}, {Name: "y", HasBounds: true, Lower: 0, Upper: 1}}}},
	{Mode: ScaleSchema, Schema: &Schema{File: "m.schema.csv", Columns: []SchemaColumn{
		{Name: "a", HasBounds: true, Lower: 0.5, Upper: 5, Missing: "1", MissingIndicator: true, Transform: "log"},
		{Name: "b", HasBounds: true, Lower: 0, Upper: 9, Transform: "sqrt"}, {Name: "y", HasBounds: true, Lower: 0, Upper: 1}}}},
}

// FuzzParseCSV checks that ParseCSV never panics and returns either a
// *ParseError that repeats no data row, or a consistent dataset with finite X
// and Y and, for the *-nonprivate modes, the wanted maximal row norm, for
// the private modes rows within ClipNorm/Unit.
func FuzzParseCSV(f *testing.F) {
	seeds := []string{
		"a,b,y\n1,2,3\n4,5,6\n",
		"a,b,y\n1,2,3\n4,5,6\n7,8,9\n",
		"\ufeff a , b ,y\r\n\"1\",2.5e3,-3\r\n\r\n4,5,6\r\n",
		"a,b,y\n1,2,3\n4,x,6\n",
		"a,b,y\n1,2,3\n4,5\n",
		"a,b,y\n1,NaN,3\n4,5,6\n",
		"a,a,y\n1,2,3\n4,5,6\n",
		"a,b,y\n1,2,3\n1,2,3\n",
		"a,b,y\n1.7e308,2,3\n-1.7e308,5,6\n",
		"a,b,y\n5e-324,1e-320,0\n1e-323,3e-320,0\n",
		"a,b,y\n\"1\n\",2,3\n\"4,5,6\n",
		"y\n1\n2\n",
		"a,b,y\nNA,2,3\n4,.,6\n?,5,NA\n",
		"a,b,y\n,1,2\nn/a,3,4\n",
		"",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		sc := fuzzScalings[int(mode)%len(fuzzScalings)]
		ds, err := ParseCSV(bytes.NewReader(data), "fuzz.csv", Options{Scaling: sc})
		if err != nil {
			var pe *ParseError
			var se *SchemaError // a schema line for a column the file lacks
			msg := err.Error()
			switch {
			case errors.As(err, &se):
			case !errors.As(err, &pe):
				t.Fatalf("ParseCSV error %q (%T) is not a *ParseError", err, err)
			case !strings.HasPrefix(msg, "dataset: fuzz.csv"):
				t.Fatalf("ParseCSV error = %q, want prefix \"dataset: fuzz.csv\"", msg)
			}
			// No data row may appear in the message. Header names may, so
			// only rows of at least two fields that do not occur in the
			// header line are checked.
			lines := strings.Split(string(data), "\n")
			for _, l := range lines[1:] {
				l = strings.TrimSpace(l)
				if len(l) >= 8 && strings.Count(l, ",") >= 2 && !strings.Contains(lines[0], l) && strings.Contains(msg, l) {
					t.Fatalf("ParseCSV error = %q contains the data row %q", msg, l)
				}
			}
			return
		}
		if ds.N < 2 || ds.D < 1 || len(ds.X) != ds.N*ds.D || len(ds.Y) != ds.N ||
			len(ds.Features) != ds.D || len(ds.Offset) != ds.D || len(ds.Scale) != ds.D || ds.Unit == "" || ds.Target == "" {
			t.Fatalf("ParseCSV: inconsistent dataset N %d D %d len(X) %d len(Y) %d features %q unit %q target %q",
				ds.N, ds.D, len(ds.X), len(ds.Y), ds.Features, ds.Unit, ds.Target)
		}
		for k, v := range ds.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("ParseCSV: X[%d] = %v, want finite", k, v)
			}
		}
		for k, v := range ds.Y {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("ParseCSV: Y[%d] = %v, want finite", k, v)
			}
		}
		for j, s := range ds.Scale {
			if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(ds.Offset[j]) || math.IsInf(ds.Offset[j], 0) {
				t.Fatalf("ParseCSV: column %d Offset %v Scale %v, want finite with Scale > 0", j, ds.Offset[j], s)
			}
		}
		if ds.Private {
			if got, lim := maxRowNorm(ds.X, ds.N, ds.D), ds.ClipDiameterUnits()/2; got > lim {
				t.Fatalf("ParseCSV(%v): max row norm = %g, above ClipNorm/Unit = %g", ds.Scaling, got, lim)
			}
		}
		if m := ds.Scaling.Mode; m == ScaleStandardiseNonprivate || m == ScaleMaxNormNonprivate {
			if got := maxRowNorm(ds.X, ds.N, ds.D); math.Abs(got-ds.Scaling.MaxNorm) > 1e-12*ds.Scaling.MaxNorm {
				t.Fatalf("ParseCSV(%v): max row norm = %s, want %g", ds.Scaling, strconv.FormatFloat(got, 'g', -1, 64), ds.Scaling.MaxNorm)
			}
		}
		if r := ds.Row(ds.N - 1); len(r) != ds.D {
			t.Fatalf("ParseCSV: len(Row(N−1)) = %d, want %d", len(r), ds.D)
		}
	})
}

// FuzzParseSchema checks that ParseSchema never panics, that its errors are
// *SchemaError values, and that a schema it accepts passes Validate, with every
// transform finite and increasing on its column's bounds.
func FuzzParseSchema(f *testing.F) {
	for _, s := range []string{
		"column,lower,upper\nage,18,90\n",
		"column,lower,upper,missing,missing_indicator,categories,transform\na,1,1000,10,yes,,log\nc,,,x,no,x|y,\n",
		"column,scale,offset,transform\nb,2,1,sqrt\n",
		"column,lower,upper,transform\na,-1,3,log1p\n",
		"column,categories,missing,missing_indicator\nc,missing|x,x,yes\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSchema(strings.NewReader(text), "f.schema.csv")
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSchema error %q (%T) is not a *SchemaError", err, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseSchema accepted a schema Validate refuses: %v", err)
		}
		for _, c := range s.Columns {
			if tf, ok := transforms[c.Transform]; ok {
				if l, u := tf(c.Lower), tf(c.Upper); math.IsInf(l, 0) || math.IsNaN(l) || !(l < u) {
					t.Fatalf("column %q: transform %s gives [%g, %g] on [%g, %g]", c.Name, c.Transform, l, u, c.Lower, c.Upper)
				}
			}
		}
	})
}
