package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestMetricsEndpoint starts a server with metrics on, makes RPCs (one refused), scrapes
// /metrics over HTTP and checks the standard gRPC server metrics, with the status codes
// the callers got, and privbo's budget gauges, with the charge the query made.
func TestMetricsEndpoint(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(dir, "state"), Budget: ledger.Cost{Epsilon: 10, Delta: 1e-5},
		DatasetID: "metrics", Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := curatorv1.NewCuratorServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if _, err := client.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0, 1}}); err != nil {
		t.Fatal(err)
	}
	_, err = client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{1 << 40}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("query of a row out of range: %v, want InvalidArgument", err)
	}

	resp, err := http.Get("http://" + srv.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	// value returns the sample of family name whose labels include want, and whether
	// there is one.
	value := func(name string, want map[string]string) (float64, bool) {
		f := families[name]
		if f == nil {
			return 0, false
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				switch {
				case m.GetCounter() != nil:
					return m.GetCounter().GetValue(), true
				case m.GetGauge() != nil:
					return m.GetGauge().GetValue(), true
				case m.GetHistogram() != nil:
					return float64(m.GetHistogram().GetSampleCount()), true
				}
			}
		}
		return 0, false
	}
	method := func(name, code string) map[string]string {
		m := map[string]string{"grpc_service": "privbo.curator.v1.CuratorService", "grpc_method": name, "grpc_type": "unary"}
		if code != "" {
			m["grpc_code"] = code
		}
		return m
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"grpc_server_started_total", method("GetDatasetInfo", ""), 2},
		{"grpc_server_handled_total", method("GetDatasetInfo", "OK"), 2},
		{"grpc_server_handled_total", method("Query", "OK"), 1},
		{"grpc_server_handled_total", method("Query", "InvalidArgument"), 1},
		{"grpc_server_handling_seconds", method("Query", ""), 2},
		{"privbo_budget_spent_epsilon", map[string]string{"dataset": "metrics", "identity": "acme", "relation": "record"}, 1},
		{"privbo_budget_remaining_epsilon", map[string]string{"dataset": "metrics", "identity": "acme", "relation": "record"}, 9},
		{"privbo_budget_spent_delta", map[string]string{"dataset": "metrics", "identity": "acme", "relation": "record"}, 0},
	} {
		if got, ok := value(c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %g (found %v), want %g", c.name, c.labels, got, ok, c.want)
		}
	}
	// A method never called, and a code never returned, has no series: no zeros.
	for _, m := range []map[string]string{method("GetBudget", ""), method("GetDatasetInfo", "NotFound")} {
		if got, ok := value("grpc_server_handled_total", m); ok {
			t.Errorf("grpc_server_handled_total%v = %g, want no series", m, got)
		}
	}
	// privbo's own gauges are labelled by dataset, identity, relation, scope and job
	// state only: nothing in a scrape is per row or derived from the data.
	for name, f := range families {
		if !strings.HasPrefix(name, "privbo_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "dataset", "identity", "relation", "scope", "state":
				default:
					t.Errorf("%s has label %s=%q, want dataset, identity, relation, scope or state only", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	if _, ok := value("privbo_budget_spent_epsilon", map[string]string{"identity": curator.CuratorIdentity}); ok {
		t.Errorf("the curator's reserved identity is reported")
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}

	// A ledger that cannot be read costs the budget gauges only: the scrape still
	// serves the gRPC metrics and counts the failure.
	srv.ledger.Close()
	for range 2 { // the handler counts a failure after serving it: the second scrape shows the first
		resp, err = http.Get("http://" + srv.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if families, err = parser.TextToMetricFamilies(bytes.NewReader(body)); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics with the ledger closed: %d, %v", resp.StatusCode, err)
		}
	}
	if _, ok := value("grpc_server_handled_total", method("Query", "OK")); !ok {
		t.Error("with the ledger closed, the gRPC metrics are gone")
	}
	if _, ok := families["privbo_budget_spent_epsilon"]; ok {
		t.Error("with the ledger closed, budget gauges are still reported")
	}
	if got, ok := value("promhttp_metric_handler_errors_total", map[string]string{"cause": "gathering"}); !ok || got != 1 {
		t.Errorf("gathering errors = %g (found %v), want 1", got, ok)
	}
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// scrape GETs addr's /metrics and returns its families and its text.
func scrape(t *testing.T, addr string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return families, string(body)
}

// gaugeIn is the gauge of family name whose labels include want, and whether there is one.
func gaugeIn(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		if hasLabels(m, want) {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsRemainingAsAChargeFinds is issue 30's case: a dataset cap of ε 3, an
// identity budget of ε 10, and one identity spent ε 2 (its answers, Laplace at ε 2,
// paid once). privbo_budget_remaining_epsilon must say 1 (what a charge finds), not 8
// (the identity's own remainder); a second identity's answers at ε 2 are then refused,
// as the gauge says. The limits have series; identities that never charged (one only
// read its budget, the other was refused) have none; the gRPC counters carry no zeros
// of methods and codes never seen.
func TestMetricsRemainingAsAChargeFinds(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}},
		StateDir: filepath.Join(dir, "state"), Budget: ledger.Cost{Epsilon: 10, Delta: 1e-5}, DatasetBudget: ledger.Cost{Epsilon: 3, Delta: 1e-5},
		DatasetID: "capped", Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 2, Lower: 0, Upper: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := func(identity string) curatorv1.CuratorServiceClient {
		conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: identity})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return curatorv1.NewCuratorServiceClient(conn)
	}
	a, b, idle := client("vendor-a"), client("vendor-b"), client("idle")
	if _, err := a.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0, 1}}); err != nil {
		t.Fatal(err)
	}
	// What the gauge says below is what a charge finds: vendor-b's ε 2 does not fit.
	if _, err := b.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{2}}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("vendor-b's charge of ε 2 with the dataset cap's ε 1 left: %v, want ResourceExhausted", err)
	}
	if _, err := idle.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil {
		t.Fatal(err)
	}
	rec := func(identity string) map[string]string {
		return map[string]string{"dataset": "capped", "identity": identity, "relation": "record"}
	}
	families, body := scrape(t, srv.MetricsAddr())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"privbo_budget_spent_epsilon", rec("vendor-a"), 2},
		{"privbo_budget_remaining_epsilon", rec("vendor-a"), 1},
		{"privbo_budget_spent_epsilon", rec(""), 2},
		{"privbo_budget_remaining_epsilon", rec(""), 1},
		{"privbo_budget_limit_epsilon", map[string]string{"dataset": "capped", "scope": "identity"}, 10},
		{"privbo_budget_limit_epsilon", map[string]string{"dataset": "capped", "scope": "dataset"}, 3},
		{"privbo_budget_limit_delta", map[string]string{"dataset": "capped", "scope": "dataset"}, 1e-5},
	} {
		if got, ok := gaugeIn(families, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %g (found %v), want %g", c.name, c.labels, got, ok, c.want)
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if hasLabels(m, map[string]string{"identity": "idle"}) || hasLabels(m, map[string]string{"identity": "vendor-b"}) {
				t.Errorf("%s has a series for an identity that never charged: %v", name, m.GetLabel())
			}
			if strings.HasPrefix(name, "grpc_server_") && m.GetCounter() != nil && m.GetCounter().GetValue() == 0 {
				t.Errorf("%s%v is a zero series", name, m.GetLabel())
			}
		}
	}
	if _, ok := families["privbo_budget_reserved_epsilon"]; ok {
		t.Error("privbo_budget_reserved_epsilon has series with nothing reserved")
	}
	lines, zeros := 0, 0
	for _, l := range strings.Split(body, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines++
			if strings.HasSuffix(l, " 0") {
				zeros++
			}
		}
	}
	t.Logf("the scrape has %d samples, %d of them 0", lines, zeros)
}
