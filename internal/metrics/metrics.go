// Package metrics exposes the curator's metrics in the Prometheus text exposition format
// (version 0.0.4) without a client library: labelled counters, labelled histograms and
// gauges computed at scrape time. Label values are identities, methods, codes and job
// states — never data.
package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Registry holds the metrics and writes them. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	order  []string
	help   map[string]string
	kind   map[string]string
	series map[string]map[string]*series // name → label string → series
	gauges map[string]func() []Sample
	bounds map[string][]float64
}

// Sample is one gauge value with its labels.
type Sample struct {
	Labels []string // name, value, name, value, …
	Value  float64
}

type series struct {
	value   float64  // counter
	buckets []uint64 // histogram
	sum     float64  // histogram
	count   uint64   // histogram
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{help: map[string]string{}, kind: map[string]string{}, series: map[string]map[string]*series{},
		gauges: map[string]func() []Sample{}, bounds: map[string][]float64{}}
}

func (r *Registry) declare(name, kind, help string) {
	if _, ok := r.kind[name]; ok {
		return
	}
	r.order = append(r.order, name)
	r.kind[name], r.help[name] = kind, help
	r.series[name] = map[string]*series{}
}

// Counter declares a counter.
func (r *Registry) Counter(name, help string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declare(name, "counter", help)
}

// Histogram declares a histogram with the given upper bounds (ascending).
func (r *Registry) Histogram(name, help string, bounds []float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declare(name, "histogram", help)
	r.bounds[name] = bounds
}

// GaugeFunc declares a gauge whose samples f computes at every scrape.
func (r *Registry) GaugeFunc(name, help string, f func() []Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declare(name, "gauge", help)
	r.gauges[name] = f
}

func labelString(labels []string) string {
	return string(appendLabels(nil, labels))
}

// appendLabels appends the rendered label set name="value",… to b.
func appendLabels(b []byte, labels []string) []byte {
	if len(labels)%2 != 0 {
		panic("metrics: labels must be name, value pairs")
	}
	for i := 0; i < len(labels); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, labels[i]...)
		b = append(b, `="`...)
		b = append(b, escape(labels[i+1])...)
		b = append(b, '"')
	}
	return b
}

var escaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// escape quotes a label value; values needing no escape (nearly all) are returned as
// they are, without allocating.
func escape(s string) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	return escaper.Replace(s)
}

func (r *Registry) get(name string, labels []string) *series {
	m, ok := r.series[name]
	if !ok {
		panic("metrics: undeclared metric " + name)
	}
	// The key is built in a stack buffer and looked up without converting it to a
	// string (the compiler elides that allocation), so a series that exists costs no
	// allocation per call.
	var buf [256]byte
	key := appendLabels(buf[:0], labels)
	s := m[string(key)]
	if s == nil {
		s = &series{buckets: make([]uint64, len(r.bounds[name]))}
		m[string(key)] = s
	}
	return s
}

// Add adds v to a counter.
func (r *Registry) Add(name string, v float64, labels ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.get(name, labels).value += v
}

// Observe records v in a histogram.
func (r *Registry) Observe(name string, v float64, labels ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.get(name, labels)
	for i, b := range r.bounds[name] {
		if v <= b {
			s.buckets[i]++
		}
	}
	s.sum += v
	s.count++
}

func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func withLabel(ls, extra string) string {
	if ls == "" {
		return "{" + extra + "}"
	}
	return "{" + ls + "," + extra + "}"
}

func braces(ls string) string {
	if ls == "" {
		return ""
	}
	return "{" + ls + "}"
}

// WriteTo writes every metric in the text exposition format.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	names := append([]string(nil), r.order...)
	r.mu.Unlock()
	var b strings.Builder
	for _, name := range names {
		r.mu.Lock()
		kind, help, f := r.kind[name], r.help[name], r.gauges[name]
		r.mu.Unlock()
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
		if f != nil {
			for _, s := range f() {
				fmt.Fprintf(&b, "%s%s %s\n", name, braces(labelString(s.Labels)), num(s.Value))
			}
			continue
		}
		r.mu.Lock()
		keys := make([]string, 0, len(r.series[name]))
		for k := range r.series[name] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := r.series[name][k]
			if kind == "counter" {
				fmt.Fprintf(&b, "%s%s %s\n", name, braces(k), num(s.value))
				continue
			}
			for i, bound := range r.bounds[name] {
				fmt.Fprintf(&b, "%s_bucket%s %d\n", name, withLabel(k, `le="`+num(bound)+`"`), s.buckets[i])
			}
			fmt.Fprintf(&b, "%s_bucket%s %d\n%s_sum%s %s\n%s_count%s %d\n", name, withLabel(k, `le="+Inf"`), s.count,
				name, braces(k), num(s.sum), name, braces(k), s.count)
		}
		r.mu.Unlock()
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// Handler serves the registry at any path.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		r.WriteTo(w)
	})
}
