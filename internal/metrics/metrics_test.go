package metrics

import (
	"strings"
	"testing"
)

func TestExposition(t *testing.T) {
	r := NewRegistry()
	r.Counter("privbo_requests_total", "RPCs by method and code.")
	r.Histogram("privbo_request_seconds", "RPC latency.", []float64{0.01, 0.1})
	r.GaugeFunc("privbo_budget_remaining_epsilon", "Remaining ε.", func() []Sample {
		return []Sample{{Labels: []string{"identity", `a"b`}, Value: 1.5}}
	})
	r.Add("privbo_requests_total", 1, "method", "/x", "code", "OK")
	r.Add("privbo_requests_total", 2, "method", "/x", "code", "OK")
	r.Observe("privbo_request_seconds", 0.05, "method", "/x")
	r.Observe("privbo_request_seconds", 0.005, "method", "/x")
	var b strings.Builder
	r.WriteTo(&b)
	want := `# HELP privbo_requests_total RPCs by method and code.
# TYPE privbo_requests_total counter
privbo_requests_total{method="/x",code="OK"} 3
# HELP privbo_request_seconds RPC latency.
# TYPE privbo_request_seconds histogram
privbo_request_seconds_bucket{method="/x",le="0.01"} 1
privbo_request_seconds_bucket{method="/x",le="0.1"} 2
privbo_request_seconds_bucket{method="/x",le="+Inf"} 2
privbo_request_seconds_sum{method="/x"} 0.055
privbo_request_seconds_count{method="/x"} 2
# HELP privbo_budget_remaining_epsilon Remaining ε.
# TYPE privbo_budget_remaining_epsilon gauge
privbo_budget_remaining_epsilon{identity="a\"b"} 1.5
`
	if b.String() != want {
		t.Errorf("exposition =\n%s\nwant\n%s", b.String(), want)
	}
}

// Recording on a series that exists must not allocate: the registry is called on every
// RPC. A long label set (past the 256-byte stack buffer) is still counted correctly.
func TestRecordingDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	r.Counter("c_total", "a counter")
	r.Histogram("h_seconds", "a histogram", []float64{0.1, 1})
	r.Add("c_total", 1, "method", "/a.B/C", "code", "OK")
	r.Observe("h_seconds", 0.5, "method", "/a.B/C")
	if n := testing.AllocsPerRun(100, func() {
		r.Add("c_total", 1, "method", "/a.B/C", "code", "OK")
		r.Observe("h_seconds", 0.5, "method", "/a.B/C")
	}); n != 0 {
		t.Errorf("Add and Observe on existing series: %v allocations per call, want 0", n)
	}
	long := strings.Repeat("x", 300)
	r.Add("c_total", 2, "method", long, "code", "OK")
	r.Add("c_total", 3, "method", long, "code", "OK")
	var b strings.Builder
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if want := `c_total{method="` + long + `",code="OK"} 5`; !strings.Contains(b.String(), want) {
		t.Errorf("long label set: exposition lacks %q", want[:40]+"…")
	}
	if want := `c_total{method="/a.B/C",code="OK"} 102`; !strings.Contains(b.String(), want) {
		t.Errorf("exposition lacks %q:\n%s", want, b.String())
	}
}
