package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/modeler"
)

// csvColumn reads column name of a CSV file with encoding/csv alone (not the dataset
// package the command uses), for an independent check of the values it lists.
func csvColumn(t *testing.T, path, name string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(recs[0], name)
	if col < 0 {
		t.Fatalf("%s has no column %s", path, name)
	}
	var out []float64
	for _, r := range recs[1:] {
		v, err := strconv.ParseFloat(strings.TrimSpace(r[col]), 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// rankOf is the brute-force rank of row i among values (1 + the number of strictly
// better values) and its percentile (the share of values no better).
func rankOf(values []float64, i int, maximize bool) (int, float64) {
	better := 0
	for _, v := range values {
		if maximize && v > values[i] || !maximize && v < values[i] {
			better++
		}
	}
	return 1 + better, float64(len(values)-better) / float64(len(values))
}

// decodeResults runs 'curator results' with args and decodes its --json document; it
// also returns what was printed on standard error.
func decodeResults(t *testing.T, args ...string) (resultsReport, string) {
	t.Helper()
	out, errOut, err := captureOutput(t, func() error { return run(append([]string{"results", "--json"}, args...)) })
	if err != nil {
		t.Fatalf("curator results %v: %v\n%s", args, err, errOut)
	}
	var rep resultsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("curator results --json: %v\n%s", err, out)
	}
	return rep, errOut
}

// TestResultsAfterRealStudies runs two studies (two modeler identities, private Laplace
// answers) against an in-process curator and checks that 'curator results' lists, for
// each identity, exactly the rows its study queried, in order, with the answers it was
// released, their true progression as the data file holds it and their rank and
// percentile in the dataset (checked by brute force over the file read independently),
// in both directions; that it reads the data settings from the curator's --config; and
// that it needs the data for column evaluation.
func TestResultsAfterRealStudies(t *testing.T) {
	state := t.TempDir()
	sc, err := dataset.ParseScaling("schema:" + diabetesSchema)
	if err != nil {
		t.Fatal(err)
	}
	c := curatortest.Start(t, curatortest.Options{StateDir: state, Scaling: sc, Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}})
	ctx := context.Background()
	studies := map[string]*modeler.Result{}
	for _, id := range []string{"acme", "globex"} {
		res, err := modeler.Run(ctx, curatorclient.New(c.Client(t, id)), modeler.Config{R: 5, Epsilon: 2, Delta: 1e-4, Iterations: 12, InitialIndex: -1})
		if err != nil {
			t.Fatalf("study of %s: %v", id, err)
		}
		studies[id] = res
	}
	y := csvColumn(t, diabetes, "progression")
	check := func(rep resultsReport, ids []string, maximize bool) {
		t.Helper()
		if rep.DatasetID != "diabetes" || rep.RankedAmong != len(y) || rep.Evaluate != "column" || (rep.Direction == "maximize") != maximize {
			t.Errorf("results header %+v, want dataset diabetes ranked among %d rows, column evaluation, maximize %v", rep, len(y), maximize)
		}
		if len(rep.Identities) != len(ids) {
			t.Fatalf("results list %d identities, want %v", len(rep.Identities), ids)
		}
		for k, id := range ids {
			got, res := rep.Identities[k], studies[id]
			if got.Identity != id || len(got.Projections) != 1 || got.Projections[0].ReleaseID != res.ReleaseID {
				t.Errorf("identity %d: %s with releases %+v, want %s with its release %s", k, got.Identity, got.Projections, id, res.ReleaseID)
			}
			if len(got.Rows) != len(res.Queried) {
				t.Fatalf("%s: %d rows listed, its study queried %d", id, len(got.Rows), len(res.Queried))
			}
			bestRank := len(y) + 1
			for j, r := range got.Rows {
				i := res.Queried[j]
				rank, pct := rankOf(y, i, maximize)
				if r.Order != j+1 || r.Index != i || r.Answer != res.Values[j] || r.TrueValue == nil || *r.TrueValue != y[i] || r.Rank != rank || r.Percentile != pct {
					t.Errorf("%s row %d = %+v (true %v), want row %d answered %g, true %g, rank %d, percentile %g",
						id, j+1, r, r.TrueValue, i, res.Values[j], y[i], rank, pct)
				}
				bestRank = min(bestRank, rank)
			}
			if got.Best == nil || got.Best.Rank != bestRank {
				t.Errorf("%s: best %+v, want rank %d", id, got.Best, bestRank)
			}
		}
	}
	rep, errOut := decodeResults(t, "--state", state, "--dataset-id", "diabetes", "--data", diabetes, "--target", "progression")
	check(rep, []string{"acme", "globex"}, true)
	// The top 1% of progression (≥ 319.36, numpy's interpolated 99th percentile): 5 patients.
	if rep.TopOnePercent < 319.35 || rep.TopOnePercent > 319.37 {
		t.Errorf("top-1%% threshold %g, want 319.36", rep.TopOnePercent)
	}
	if errOut != "" {
		t.Errorf("curator results wrote to standard error: %q", errOut)
	}
	rep, _ = decodeResults(t, "--state", state, "--dataset-id", "diabetes", "--data", diabetes, "--target", "progression", "--identity", "globex", "--direction", "minimize")
	check(rep, []string{"globex"}, false)

	// The data settings, state and dataset id come from the curator's configuration.
	cfg := writeConfig(t, fmt.Sprintf("data = %q\ntarget = \"progression\"\nstate = %q\ndataset-id = \"diabetes\"\nschema = %q\nbudget-epsilon = 100\n", diabetes, state, diabetesSchema))
	rep, _ = decodeResults(t, "--config", cfg, "--identity", "acme")
	check(rep, []string{"acme"}, true)

	// The table: one line per row with its true value and rank.
	out, err := captureStdout(t, func() error { return run([]string{"results", "--config", cfg, "--identity", "acme"}) })
	if err != nil {
		t.Fatal(err)
	}
	first := studies["acme"].Queried[0]
	rank, pct := rankOf(y, first, true)
	for _, want := range []string{
		"dataset diabetes: true outcome = column progression of " + diabetes + "; rank 1 = the highest outcome (--direction maximize) among the 442 rows of the data file",
		"identity acme: 12 rows answered (projection releases " + studies["acme"].ReleaseID,
		fmt.Sprintf("      1  %3d  %12g  %4d  %9.1f%%", first, y[first], rank, 100*pct),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("curator results lacks %q:\n%s", want, out)
		}
	}
	t.Logf("curator results:\n%s", out)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", state, "--dataset-id", "diabetes"}, "give --data and --target"},
		{[]string{"--state", state, "--dataset-id", "diabetes", "--data", diabetes, "--target", "progression", "--identity", "nobody"}, `identity "nobody" has no records`},
		{[]string{"--state", t.TempDir(), "--dataset-id", "diabetes", "--data", diabetes, "--target", "progression"}, "no ledger in --state"},
		{[]string{"--config", cfg, "--direction", "up"}, "want maximize or minimize"},
	} {
		if err := run(append([]string{"results"}, tc.args...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("curator results %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}

	// A study with a confirmation pass over gRPC: its rows answered again are listed
	// with their pass, after the study's, and counted once; the pass was charged ε_out
	// again (projection 2 + answers 1 + pass 1).
	res, err := modeler.Run(ctx, curatorclient.New(c.Client(t, "initech")), modeler.Config{R: 5, Epsilon: 2, Delta: 1e-4, Iterations: 12, InitialIndex: -1, ConfirmRows: 3})
	if err != nil {
		t.Fatalf("study with a confirmation pass: %v", err)
	}
	if len(res.Confirmed) != 3 || math.Abs(res.EpsilonSpent-4) > 1e-9 {
		t.Errorf("confirmation: %d answers, ε spent %g; want 3 and 2 + 1 + 1", len(res.Confirmed), res.EpsilonSpent)
	}
	rep, _ = decodeResults(t, "--config", cfg, "--identity", "initech")
	rows := rep.Identities[0].Rows
	if len(rows) != 15 {
		t.Fatalf("initech: %d rows listed, want 12 answers and 3 confirmations", len(rows))
	}
	for k, r := range rows {
		if want := map[bool]int{true: 1, false: 0}[k >= 12]; r.Pass != want {
			t.Errorf("initech row %d: pass %d, want %d", k+1, r.Pass, want)
		}
		if k >= 12 && (r.Index != res.Confirmed[k-12].Index || r.Answer != res.Confirmed[k-12].Value) {
			t.Errorf("initech confirmation %d = row %d answered %g, want row %d answered %g", k-11, r.Index, r.Answer, res.Confirmed[k-12].Index, res.Confirmed[k-12].Value)
		}
	}
	top := 0
	for _, r := range rows[:12] {
		if r.TopOne {
			top++
		}
	}
	if len(rep.Identities[0].TopOnePercentRows) != top {
		t.Errorf("initech: top-1%% rows %v, want the %d among its 12 answers, confirmations not counted again", rep.Identities[0].TopOnePercentRows, top)
	}
	out, err = captureStdout(t, func() error { return run([]string{"results", "--config", cfg, "--identity", "initech"}) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "identity initech: 12 rows answered") || !strings.Contains(out, "and 3 answers again in confirmation passes") || !strings.Contains(out, "(pass 1)") {
		t.Errorf("curator results of a study with a confirmation pass:\n%s", out)
	}
}

// TestResultsProgramEvaluation: with --evaluate program the true outcome is the
// program's recorded output, ranked among the rows evaluated so far (the curator knows
// no other).
func TestResultsProgramEvaluation(t *testing.T) {
	state := t.TempDir()
	prog := filepath.Join(t.TempDir(), "eval.sh")
	// f(row i) = 2i: the row index from the JSON on stdin.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nread line\ni=$(echo \"$line\" | sed 's/.*\"index\":\\([0-9]*\\).*/\\1/')\necho $((i * 2))\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sc, err := dataset.ParseScaling("schema:" + diabetesSchema)
	if err != nil {
		t.Fatal(err)
	}
	c := curatortest.Start(t, curatortest.Options{StateDir: state, Scaling: sc, Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1},
		Configure: func(cfg *config.Config) {
			cfg.Evaluation = curator.Evaluation{Mode: curator.EvaluateProgram, Command: []string{prog}, Timeout: 10 * time.Second}
		}})
	res, err := modeler.Run(context.Background(), curatorclient.New(c.Client(t, "acme")), modeler.Config{R: 3, Epsilon: 2, Delta: 1e-4, Iterations: 6, InitialIndex: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := decodeResults(t, "--state", state, "--dataset-id", "diabetes", "--evaluate", "program")
	evaluated := make([]float64, len(res.Queried))
	for k, i := range res.Queried {
		evaluated[k] = float64(2 * i)
	}
	if rep.RankedAmong != len(res.Queried) || len(rep.Identities) != 1 || len(rep.Identities[0].Rows) != len(res.Queried) {
		t.Fatalf("results = %+v, want %d rows ranked among the %d evaluated", rep, len(res.Queried), len(res.Queried))
	}
	for k, r := range rep.Identities[0].Rows {
		rank, _ := rankOf(evaluated, k, true)
		if r.Index != res.Queried[k] || r.TrueValue == nil || *r.TrueValue != evaluated[k] || r.Rank != rank {
			t.Errorf("row %d = %+v (true %v), want row %d with the program's %g, rank %d of the evaluated rows", k+1, r, r.TrueValue, res.Queried[k], evaluated[k], rank)
		}
	}
}
