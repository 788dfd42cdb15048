package hparam

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestParseAxis checks that ParseAxis keeps the form given (a range stays three
// numbers), that String reads back to the same Axis, and that Param expands it as
// the constructors do.
func TestParseAxis(t *testing.T) {
	must := func(p Param, err error) Param {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		spec  string
		axis  Axis
		param Param
	}{
		{"lambda=log:1e-4:10:16", Axis{Name: "lambda", Kind: AxisLog, Low: 1e-4, High: 10, Count: 16}, must(LogRange("lambda", 1e-4, 10, 16))},
		{" lr = linear : 0.1 : 1 : 10 ", Axis{Name: "lr", Kind: AxisLinear, Low: 0.1, High: 1, Count: 10}, must(LinearRange("lr", 0.1, 1, 10))},
		{"C=list:10,0.1,1", Axis{Name: "C", Kind: AxisList, Values: []float64{10, 0.1, 1}}, must(List("C", 0.1, 1, 10))},
		{"C=loglist:0.1,1,10", Axis{Name: "C", Kind: AxisLogList, Values: []float64{0.1, 1, 10}}, must(LogList("C", 0.1, 1, 10))},
	}
	for _, tt := range tests {
		a, err := ParseAxis(tt.spec)
		if err != nil || !reflect.DeepEqual(a, tt.axis) {
			t.Errorf("ParseAxis(%q) = %+v, %v, want %+v", tt.spec, a, err, tt.axis)
			continue
		}
		back, err := ParseAxis(a.String())
		if err != nil || !reflect.DeepEqual(back, a) {
			t.Errorf("ParseAxis(%q) = %+v, %v, want %+v (String round trip)", a.String(), back, err, a)
		}
		p, err := a.Param()
		if err != nil || !equalParam(p, tt.param) {
			t.Errorf("%+v.Param() = %v, %v, want %v", a, p, err, tt.param)
		}
	}
}

// TestAxisParamErrors checks that an Axis built in code (or decoded from a job record
// or the protocol) is checked as ParseAxis checks a spec, with errors that name the
// parameter and the offending field.
func TestAxisParamErrors(t *testing.T) {
	tests := []struct {
		axis Axis
		want string
	}{
		{Axis{Name: "lambda", Kind: "cubic"}, `parameter "lambda": unknown kind "cubic"`},
		{Axis{Name: "lambda"}, `parameter "lambda": unknown kind ""`},
		{Axis{Name: "9x", Kind: "cubic"}, `parameter name "9x" must match`},
		{Axis{Name: "lambda", Kind: AxisLog, Low: 0, High: 1, Count: 4}, `parameter "lambda": log range needs lo > 0`},
		{Axis{Name: "lambda", Kind: AxisLog, Low: 1, High: 2, Count: 0}, `parameter "lambda": number of values must be in [1, 1000000], got 0`},
		{Axis{Name: "lambda", Kind: AxisLog, Low: 1, High: 2, Count: 3, Values: []float64{1}}, `parameter "lambda": a log axis takes low, high and count, not values`},
		{Axis{Name: "depth", Kind: AxisList, Values: []float64{1, 2}, Count: 2}, `parameter "depth": a list axis takes values, not low, high or count`},
		{Axis{Name: "depth", Kind: AxisList}, `parameter "depth": number of values must be in [1, 1000000], got 0`},
		{Axis{Name: "depth", Kind: AxisLogList, Values: []float64{-1, 1}}, `parameter "depth": log-scale value 0 is -1`},
	}
	for _, tt := range tests {
		_, err := tt.axis.Param()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "hparam: ") {
			t.Errorf("%+v.Param() error = %v, want one containing %q", tt.axis, err, tt.want)
		}
	}
	if _, err := SpaceOf(Axis{Name: "a", Kind: AxisList, Values: []float64{1}}, Axis{Name: "b", Kind: AxisLog, Low: 1, High: 2}); err == nil || !strings.Contains(err.Error(), `parameter "b"`) {
		t.Errorf("SpaceOf with a bad second axis: error = %v, want one naming \"b\"", err)
	}
}

// TestAxisJSON pins the JSON form: it is the form of the job records curators have
// written since before Axis existed, which must keep loading.
func TestAxisJSON(t *testing.T) {
	axes := []Axis{
		{Name: "lambda", Kind: AxisLog, Low: 1e-4, High: 10, Count: 16},
		{Name: "depth", Kind: AxisList, Values: []float64{1, 2, 3}},
	}
	const want = `[{"name":"lambda","scale":"log","low":0.0001,"high":10,"count":16},{"name":"depth","scale":"list","values":[1,2,3]}]`
	b, err := json.Marshal(axes)
	if err != nil || string(b) != want {
		t.Errorf("json.Marshal = %s, %v, want %s", b, err, want)
	}
	var back []Axis
	if err := json.Unmarshal([]byte(want), &back); err != nil || !reflect.DeepEqual(back, axes) {
		t.Errorf("json.Unmarshal = %+v, %v, want %+v", back, err, axes)
	}
}
