package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// TestStudyFromBeforeTheNoiseStatement: a study stored before the curator stated its
// answers' noise (a release whose OutputPrivacy has only the mechanism's name and
// settings) is still reported: the CLI opens its studies with the one calibration of the
// modeler's side (calibrate.Noise), which states Laplace noise at ε = 2 on [0, 400] as
// sd √2·200 ≈ 283. Without it, modeler.Replay refuses the unstated noise.
func TestStudyFromBeforeTheNoiseStatement(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := study.Open(dir) // as an older modeler wrote it
	if err != nil {
		t.Fatal(err)
	}
	set, err := modeler.Config{R: 2, Iterations: 3, InitialIndex: 0}.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, "old", study.Connection{Curator: "127.0.0.1:1"}, set); err != nil {
		t.Fatal(err)
	}
	rel := study.Release{ID: "rel-old", Dataset: "diabetes", Rows: 4, Cols: 2, Epsilon: 2, Delta: 1e-4,
		OutputPrivacy: study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Lower: 0, Upper: 400}}
	if err := store.SaveRelease(ctx, "old", rel, []float64{0, 0, 1, 0, 0, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if err := store.Record(ctx, "old", []study.Observation{{Iteration: 1, Round: 1, Index: 0, Value: 120}, {Iteration: 2, Round: 2, Index: 3, Value: 250}}, study.Budget{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Get(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeler.Replay(store, st, nil); err == nil {
		t.Error("Replay of an unstated release through a store without the calibration: no error")
	}
	store.Close()

	rep := filepath.Join(t.TempDir(), "rep")
	if _, errOut, err := cmd("report", "--study", "old", "--studies-dir", dir, "--out", rep); err != nil {
		t.Fatalf("report of a study from before the noise statement: %v\n%s", err, errOut)
	}
	html, err := os.ReadFile(filepath.Join(rep, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "sd 283 per answer (laplace mechanism)") {
		t.Errorf("report lacks the calibrated answer noise sd 283:\n%s", html)
	}
}
