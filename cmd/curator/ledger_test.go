package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// captureStdout runs f and returns what it printed on standard output.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	return captureFile(t, &os.Stdout, f)
}

// captureFile runs f with *file replaced by a pipe and returns what f wrote to it.
func captureFile(t *testing.T, file **os.File, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *file
	*file = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	ferr := f()
	*file = old
	w.Close()
	return <-done, ferr
}

// TestLedgerReadsServeConfig checks that 'curator ledger --config' reports the
// budgets the curator enforces (read from the same file and environment as
// serve), and that the curator's own pending markers are not listed as releases.
func TestLedgerReadsServeConfig(t *testing.T) {
	state := t.TempDir()
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{
		PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 30, Delta: 1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []ledger.Charge{
		{Account: ledger.Account{Dataset: "diabetes", Identity: "acme"}, Key: "projection/p1", Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-4}},
		{Account: ledger.Account{Dataset: "diabetes", Identity: "_curator"}, Key: "pending/7", Kind: "pending", Relation: ledger.RelationRecord},
		{Account: ledger.Account{Dataset: "diabetes", Identity: "_curator"}, Key: "scaling-estimate/k", Kind: "scaling-estimate", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1}},
		{Account: ledger.Account{Dataset: "diabetes", Identity: "acme"}, Key: "q/3", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}},
		{Account: ledger.Account{Dataset: "diabetes", Identity: "acme"}, Key: "job/j", Kind: "job:kusner", Relation: ledger.RelationValidationRecord, Cost: ledger.Cost{Epsilon: 2, Delta: 1e-4}},
	} {
		if _, err := store.Charge(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	cfg := writeConfig(t, `data = "`+diabetes+`"
target = "progression"
state = "`+state+`"
budget-epsilon = 10
budget-delta = 1e-3
dataset-budget-epsilon = 30
dataset-id = "diabetes"
`)
	// The dataset id comes from the curator's configuration too.
	out, err := captureStdout(t, func() error { return run([]string{"ledger", "--config", cfg}) })
	if err != nil {
		t.Fatalf("curator ledger: %v\n%s", err, out)
	}
	// Per relation, never summed across: feature-unit 1 + 0.5 (the record-level
	// query counts there too), record 0.5, validation-record 2; the curator's own
	// private scaling estimate (record, ε = 1) is listed and spends the dataset cap.
	// Each identity's whole-patient row leaves out the curator's estimate, and the
	// listing says so (docs/PRIVACY.md, section 0).
	for _, want := range []string{"acme  ", " record  ", " validation-record  ", " scaling-estimate ",
		"Each identity's row leaves out the _curator row, the curator's own estimates that every release depends on: what one identity's releases cost a patient is its row plus the dataset's estimate",
		"Budget under the feature-unit neighbour relation (including the record releases, which also hold under it):\n" +
			"IDENTITY   EPSILON SPENT  DELTA SPENT  EPSILON LEFT  DELTA LEFT\n" +
			"_curator   1              0            9             0.0009\n" +
			"acme       1.5            0.0001       8.5           0.0009\n" +
			"(dataset)  2.5            0.0001       27.5          0.0009\n",
		"Budget under the record neighbour relation:\n" +
			"IDENTITY   EPSILON SPENT  DELTA SPENT  EPSILON LEFT  DELTA LEFT\n" +
			"_curator   1              0            9             0.001\n" +
			"acme       0.5            0            9.5           0.001\n" +
			"(dataset)  1.5            0            28.5          0.001\n",
		"Budget under the validation-record neighbour relation:\n" +
			"IDENTITY   EPSILON SPENT  DELTA SPENT  EPSILON LEFT  DELTA LEFT\n" +
			"acme       2              0.0001       8             0.0009\n" +
			"(dataset)  2              0.0001       28            0.0009\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("curator ledger output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "training-add-remove") || strings.Contains(out, " 3.5 ") {
		t.Errorf("curator ledger lists a relation without releases, or a sum across relations:\n%s", out)
	}
	if strings.Contains(out, "pending") || strings.Contains(out, "at no cost") {
		t.Errorf("curator ledger lists the curator's pending marker:\n%s", out)
	}
	t.Logf("curator ledger:\n%s", out)
	// The command line still wins over the file.
	out, err = captureStdout(t, func() error {
		return run([]string{"ledger", "--config", cfg, "--dataset", "diabetes", "--dataset-budget-epsilon", "12"})
	})
	if err != nil || !strings.Contains(out, "(dataset)  2.5            0.0001       9.5 ") {
		t.Errorf("curator ledger with --dataset-budget-epsilon 12: %v\n%s", err, out)
	}
}
