package curator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

// TestProgramSeesRawValues: the evaluation program receives a row's values as the data
// file holds them, also for a row the schema scaling clamped to its public bounds:
// rebuilding them from the scaled row (X·Scale + Offset) would hand it the
// clamped values instead.
func TestProgramSeesRawValues(t *testing.T) {
	dir := t.TempDir()
	// Row 2's a = 1000 lies far outside the schema's [0, 10]: clamped to 10.
	data := "a,b,y\n1,2,0\n3,4,1\n1000,5,2\n7,1,3\n"
	path := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	sch, err := dataset.ParseSchema(strings.NewReader("column,lower,upper\na,0,10\nb,0,10\n"), "d.schema.csv")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.LoadCSV(path, dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleSchema, Schema: sch}})
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt := ds.X[2*ds.D]*ds.Scale[0] + ds.Offset[0]; rebuilt == 1000 {
		t.Fatalf("row 2 was not clamped (rebuilt a = %g): the test needs a clamped row", rebuilt)
	}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	// The program answers feature a as it received it.
	prog := filepath.Join(dir, "a.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nread line\necho \"$line\" | sed 's/.*\"a\":\\([0-9.e+-]*\\).*/\\1/'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir, Evaluation: Evaluation{Mode: EvaluateProgram, Command: []string{prog}, Timeout: 5 * time.Second},
		AllowExactProgramAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	obs, _, err := c.Query(context.Background(), "vendor", []int{0, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []float64{1, 1000, 7} {
		if obs[k].Value != want {
			t.Errorf("program saw a = %g for query %d, want the raw %g", obs[k].Value, k, want)
		}
	}
}
