package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
)

// startDiabetesCurator starts an in-process curator over the shipped diabetes data.
func startDiabetesCurator(t *testing.T) *server.Server {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Config{
		Listen:   "127.0.0.1:0",
		DataPath: filepath.Join("..", "..", "examples", "data", "diabetes.csv"),
		Data:     dataset.Options{Target: "progression"},
		StateDir: t.TempDir(),
		Budget:   ledger.Cost{Epsilon: 10, Delta: 1e-3},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv
}

// TestRunJSON runs the modeler command against an in-process curator and checks the
// contract of --json: the last line of stdout is one JSON object with the study.
func TestRunJSON(t *testing.T) {
	srv := startDiabetesCurator(t)
	var stdout, stderr bytes.Buffer
	err := run([]string{"run", "--curator", srv.Addr(), "--identity", "cli-test", "--r", "5", "--epsilon", "2",
		"--delta", "1e-4", "--iterations", "12", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res struct {
		BestIndex  *int      `json:"best_index"`
		BestValue  *float64  `json:"best_value"`
		Iterations int       `json:"iterations"`
		Queried    []int     `json:"queried"`
		Values     []float64 `json:"values"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if res.BestIndex == nil || res.BestValue == nil || res.Iterations != 12 || len(res.Queried) != 12 || len(res.Values) != 12 {
		t.Fatalf("JSON result = %+v; want best_index, best_value and 12 iterations, queried and values", res)
	}
	best := res.Values[0]
	for _, v := range res.Values {
		best = max(best, v)
	}
	if *res.BestValue != best {
		t.Errorf("best_value = %g, want the maximum of values %g", *res.BestValue, best)
	}
	if !strings.Contains(stderr.String(), "iteration  12/12") {
		t.Errorf("no progress line for the last iteration on stderr:\n%s", stderr.String())
	}

	for _, bad := range [][]string{{"run", "--iterations", "0", "--curator", srv.Addr()}, {"bogus"}, {"run", "--kernel", "cubic"}} {
		if err := run(bad, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded, want an error", bad)
		}
	}
}
