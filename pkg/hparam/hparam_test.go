package hparam

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLinearRange(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
		want   []float64 // exact where representable, else within 1e-15 relative
	}{
		{0, 1, 5, []float64{0, 0.25, 0.5, 0.75, 1}},
		{-2, 2, 3, []float64{-2, 0, 2}},
		{0.1, 1, 10, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}},
		{3, 3, 1, []float64{3}},
		// Clipping norms of DP-HyPO's MNIST grid (Wang et al. 2023; docs/MATHS.md
		// §4.3): 0.3 … 6 in steps of 0.3.
		{0.3, 6, 20, []float64{0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.1, 2.4, 2.7, 3, 3.3, 3.6, 3.9, 4.2, 4.5, 4.8, 5.1, 5.4, 5.7, 6}},
		{-1e308, 1e308, 3, []float64{-1e308, 0, 1e308}},
	}
	for _, tt := range tests {
		p, err := LinearRange("x", tt.lo, tt.hi, tt.n)
		if err != nil {
			t.Fatalf("LinearRange(%g, %g, %d) error: %v", tt.lo, tt.hi, tt.n, err)
		}
		if p.Scale != Linear {
			t.Errorf("LinearRange(%g, %g, %d).Scale = %v, want linear", tt.lo, tt.hi, tt.n, p.Scale)
		}
		if len(p.Values) != tt.n {
			t.Fatalf("LinearRange(%g, %g, %d) has %d values, want %d", tt.lo, tt.hi, tt.n, len(p.Values), tt.n)
		}
		if p.Values[0] != tt.lo || p.Values[tt.n-1] != tt.hi {
			t.Errorf("LinearRange(%g, %g, %d) endpoints = %g, %g, want exactly %g, %g",
				tt.lo, tt.hi, tt.n, p.Values[0], p.Values[tt.n-1], tt.lo, tt.hi)
		}
		for i, v := range p.Values {
			if !close(v, tt.want[i], 1e-15) {
				t.Errorf("LinearRange(%g, %g, %d)[%d] = %.17g, want %.17g", tt.lo, tt.hi, tt.n, i, v, tt.want[i])
			}
		}
	}
}

func TestLogRange(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
	}{
		{1e-4, 10, 16}, // DP-HyPO's MNIST learning rates (docs/MATHS.md §4.3)
		{1, 1000, 4},
		{1e-300, 1e300, 7},
		{0.5, 0.5, 1},
	}
	for _, tt := range tests {
		p, err := LogRange("lr", tt.lo, tt.hi, tt.n)
		if err != nil {
			t.Fatalf("LogRange(%g, %g, %d) error: %v", tt.lo, tt.hi, tt.n, err)
		}
		if p.Scale != Log || len(p.Values) != tt.n {
			t.Fatalf("LogRange(%g, %g, %d) = %v scale with %d values, want log with %d", tt.lo, tt.hi, tt.n, p.Scale, len(p.Values), tt.n)
		}
		if p.Values[0] != tt.lo || p.Values[tt.n-1] != tt.hi {
			t.Errorf("LogRange(%g, %g, %d) endpoints = %g, %g, want exactly %g, %g",
				tt.lo, tt.hi, tt.n, p.Values[0], p.Values[tt.n-1], tt.lo, tt.hi)
		}
		// v_i = lo·(hi/lo)^(i/(n−1)), computed here in log10 as the reference.
		for i, v := range p.Values {
			if tt.n == 1 {
				break
			}
			e := math.Log10(tt.lo) + float64(i)/float64(tt.n-1)*(math.Log10(tt.hi)-math.Log10(tt.lo))
			if want := math.Pow(10, e); !close(v, want, 1e-12) {
				t.Errorf("LogRange(%g, %g, %d)[%d] = %.17g, want %.17g", tt.lo, tt.hi, tt.n, i, v, want)
			}
		}
	}
	// The 16 learning rates span 5 decades in 15 steps: ratio 10^(1/3).
	p, _ := LogRange("lr", 1e-4, 10, 16)
	for i := 1; i < len(p.Values); i++ {
		if r := p.Values[i] / p.Values[i-1]; !close(r, math.Cbrt(10), 1e-12) {
			t.Errorf("LogRange(1e-4, 10, 16) ratio %d = %.17g, want 10^(1/3) = %.17g", i, r, math.Cbrt(10))
		}
	}
}

func TestRangeErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		lo, hi float64
		n      int
		log    bool
		want   string
	}{
		{"x", 0, 1, 0, false, "number of values"},
		{"x", 0, 1, MaxSize + 1, false, "number of values"},
		{"x", 1, 0, 3, false, "lo < hi"},
		{"x", 1, 1, 3, false, "lo < hi"},
		{"x", 0, 1, 1, false, "1 value needs lo = hi"},
		{"x", nan, 1, 3, false, "finite"},
		{"x", 0, inf, 3, false, "finite"},
		{"x", 1, 1 + 1e-15, 100, false, "too narrow"},
		{"x", 0, 1, 3, true, "lo > 0"},
		{"x", -1, 1, 3, true, "lo > 0"},
		{"1x", 1, 2, 3, false, "must match"},
		{"", 1, 2, 3, true, "must match"},
		{"a-b", 1, 2, 3, true, "must match"},
	}
	for _, tt := range tests {
		var err error
		if tt.log {
			_, err = LogRange(tt.name, tt.lo, tt.hi, tt.n)
		} else {
			_, err = LinearRange(tt.name, tt.lo, tt.hi, tt.n)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "hparam: ") {
			t.Errorf("range(%q, %g, %g, %d, log=%v) error = %v, want one containing %q",
				tt.name, tt.lo, tt.hi, tt.n, tt.log, err, tt.want)
		}
	}
}

func TestList(t *testing.T) {
	p, err := List("C", 10, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.1, 1, 10}; !slices.Equal(p.Values, want) || p.Scale != Linear {
		t.Errorf("List(C, 10, 0.1, 1) = %v %v, want %v linear", p.Values, p.Scale, want)
	}
	for _, tt := range []struct {
		values []float64
		log    bool
		want   string
	}{
		{nil, false, "number of values"},
		{[]float64{1, 2, 1}, false, "duplicate value 1"},
		{[]float64{1, math.NaN()}, false, "finite"},
		{[]float64{math.Inf(-1)}, false, "finite"},
		{[]float64{0, 1}, true, "want > 0"},
	} {
		var err error
		if tt.log {
			_, err = LogList("C", tt.values...)
		} else {
			_, err = List("C", tt.values...)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("List(C, %v, log=%v) error = %v, want one containing %q", tt.values, tt.log, err, tt.want)
		}
	}
}

func TestParseParam(t *testing.T) {
	must := func(p Param, err error) Param {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		spec string
		want Param
	}{
		{"lambda=log:1e-4:10:16", must(LogRange("lambda", 1e-4, 10, 16))},
		{"lr=linear:0.1:1:10", must(LinearRange("lr", 0.1, 1, 10))},
		{"C=list:0.1,1,10", must(List("C", 0.1, 1, 10))},
		{"C=loglist:10,0.1,1", must(LogList("C", 0.1, 1, 10))},
		{" _x2 = linear : -1 : 1 : 3 ", must(LinearRange("_x2", -1, 1, 3))},
		{"C=list: 5 ", must(List("C", 5))},
	}
	for _, tt := range tests {
		got, err := ParseParam(tt.spec)
		if err != nil {
			t.Errorf("ParseParam(%q) error: %v", tt.spec, err)
			continue
		}
		if !equalParam(got, tt.want) {
			t.Errorf("ParseParam(%q) = %v, want %v", tt.spec, got, tt.want)
		}
		back, err := ParseParam(got.String())
		if err != nil || !equalParam(back, got) {
			t.Errorf("ParseParam(%q) = %v, %v, want %v (String round trip)", got.String(), back, err, got)
		}
	}
}

func TestParseParamErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", `missing "="`},
		{"lambda", `missing "="`},
		{"=log:1:2:3", "must match"},
		{"9a=log:1:2:3", "must match"},
		{"lambda=log", `missing ":"`},
		{"lambda=exp:1:2:3", `unknown kind "exp"`},
		{"lambda=log:1:2", "LO:HI:N (3 fields), got 2"},
		{"lambda=log:1:2:3:4", "3 fields), got 4"},
		{"lambda=log::2:3", "LO is empty"},
		{"lambda=log:a:2:3", `LO "a" is not a number`},
		{"lambda=log:1:1e999:3", "out of the float64 range"},
		{"lambda=log:1:inf:3", "not finite"},
		{"lambda=log:NaN:2:3", "not finite"},
		{"lambda=log:1:2:3.5", `N "3.5" is not an integer`},
		{"lambda=log:1:2:0", "number of values must be in [1, 1000000], got 0"},
		{"lambda=log:1:2:99999999999", "number of values"},
		{"lambda=log:0:2:3", "lo > 0"},
		{"lambda=linear:2:1:3", "lo < hi"},
		{"C=list:", "value 1 is empty"},
		{"C=list:1,,2", "value 2 is empty"},
		{"C=list:1,x", `value 2 "x" is not a number`},
		{"C=list:1,1", "duplicate value 1"},
		{"C=loglist:-1,1", "want > 0"},
	}
	for _, tt := range tests {
		_, err := ParseParam(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "hparam: parameter spec ") {
			t.Errorf("ParseParam(%q) error = %v, want one starting %q containing %q", tt.spec, err, "hparam: parameter spec ", tt.want)
		}
	}
}

func TestNewSpaceErrors(t *testing.T) {
	a, _ := LinearRange("a", 0, 1, 1001)
	b, _ := LinearRange("b", 0, 1, 1000)
	b2, _ := LinearRange("b", 0, 1, 1001)
	tests := []struct {
		params []Param
		want   string
	}{
		{nil, "at least one parameter"},
		{[]Param{a, a}, `"a" appears twice`},
		{[]Param{a, b2}, "more than 1000000 points (a: 1001, b: 1001)"},
		{[]Param{{Name: "x"}}, "number of values"},
		{[]Param{{Name: "x", Values: []float64{2, 1}}}, "sorted ascending"},
		{[]Param{{Name: "x", Values: []float64{1}, Scale: 7}}, "unknown scale"},
	}
	for _, tt := range tests {
		if _, err := NewSpace(tt.params...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewSpace(%v) error = %v, want one containing %q", tt.params, err, tt.want)
		}
	}
	s, err := NewSpace(a, b) // exactly 1001000 > MaxSize
	if err == nil {
		t.Errorf("NewSpace(1001×1000) size %d, want error", s.Size())
	}
	if s, err := NewSpace(b); err != nil || s.Size() != 1000 {
		t.Errorf("NewSpace(b) = size %d, %v, want 1000, nil", s.Size(), err)
	}
}

func TestPointIndexRoundTrip(t *testing.T) {
	s, err := ParseSpace("lambda=log:1e-4:10:4", "lr=linear:0.1:1:3", "C=list:7")
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 12 || s.Dim() != 3 {
		t.Fatalf("Size, Dim = %d, %d, want 12, 3", s.Size(), s.Dim())
	}
	if got, want := s.Names(), []string{"lambda", "lr", "C"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	// Row-major: point 4 = (lambda index 1, lr index 1, C index 0).
	wantP4 := map[string]float64{"lambda": s.Params[0].Values[1], "lr": s.Params[1].Values[1], "C": 7}
	if got := s.Point(4); !equalMap(got, wantP4) {
		t.Errorf("Point(4) = %v, want %v", got, wantP4)
	}
	var buf []float64
	seen := make(map[[3]float64]bool)
	for i := range s.Size() {
		p := s.Point(i)
		j, ok := s.Index(p)
		if !ok || j != i {
			t.Errorf("Index(Point(%d)) = %d, %v, want %d, true", i, j, ok, i)
		}
		buf = s.Values(i, buf)
		for k, prm := range s.Params {
			if buf[k] != p[prm.Name] {
				t.Errorf("Values(%d)[%d] = %g, want Point(%d)[%s] = %g", i, k, buf[k], i, prm.Name, p[prm.Name])
			}
		}
		key := [3]float64{buf[0], buf[1], buf[2]}
		if seen[key] {
			t.Errorf("Values(%d) = %v repeats an earlier point", i, buf)
		}
		seen[key] = true
	}
	for _, bad := range []map[string]float64{
		{"lambda": 1e-4, "lr": 0.1},                     // missing C
		{"lambda": 1e-4, "lr": 0.1, "C": 7, "extra": 1}, // extra name
		{"lambda": 1e-4, "lr": 0.1, "D": 7},             // wrong name
		{"lambda": 2e-4, "lr": 0.1, "C": 7},             // off the grid
		{"lambda": 1e-4, "lr": 0.1, "C": math.NaN()},
	} {
		if i, ok := s.Index(bad); ok {
			t.Errorf("Index(%v) = %d, true, want false", bad, i)
		}
	}
}

func TestPointPanics(t *testing.T) {
	s, _ := ParseSpace("a=list:1,2")
	for _, i := range []int{-1, 2} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Point(%d) did not panic", i)
				}
			}()
			s.Point(i)
		}()
	}
}

func TestCoords(t *testing.T) {
	s, err := ParseSpace("lambda=log:1e-4:10:6", "lr=linear:0.1:1:4", "C=list:3", "w=list:-1e308,0,1e308")
	if err != nil {
		t.Fatal(err)
	}
	n, d := s.Size(), s.Dim()
	c := s.Coords()
	if len(c) != n*d {
		t.Fatalf("len(Coords()) = %d, want %d×%d", len(c), n, d)
	}
	var buf []float64
	for i := range n {
		buf = s.Values(i, buf)
		for j, p := range s.Params {
			u := c[i*d+j]
			if !(u >= 0 && u <= 1) {
				t.Errorf("Coords()[%d,%d] = %g, want in [0, 1]", i, j, u)
			}
			k, _ := slices.BinarySearch(p.Values, buf[j])
			var want float64
			switch {
			case len(p.Values) == 1:
				want = 0
			default:
				// Both the log range and the linear ones here are evenly spaced
				// in their scale, so u is the value's position k/(K−1).
				want = float64(k) / float64(len(p.Values)-1)
			}
			if !close(u, want, 1e-12) && math.Abs(u-want) > 1e-15 {
				t.Errorf("Coords()[%d,%d] (%s = %g) = %.17g, want %.17g", i, j, p.Name, buf[j], u, want)
			}
			if (k == 0 && u != 0) || (k == len(p.Values)-1 && len(p.Values) > 1 && u != 1) {
				t.Errorf("Coords()[%d,%d] = %.17g at an endpoint, want exactly %d", i, j, u, min(k, 1))
			}
		}
	}
}

func equalParam(a, b Param) bool {
	return a.Name == b.Name && a.Scale == b.Scale && slices.Equal(a.Values, b.Values)
}

func equalMap(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// close reports |a − b| ≤ tol·max(|a|, |b|).
func close(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}
