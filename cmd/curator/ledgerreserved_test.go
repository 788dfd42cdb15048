package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// TestLedgerShowsReservations: 'curator ledger' read while a release is being computed
// shows what its reservation holds — RESERVED columns in the tables, reserved figures
// in --json and --csv, a line after --verify — and LEFT without it, as a charge finds
// it; once the reservation is cancelled the tables are the usual ones.
func TestLedgerShowsReservations(t *testing.T) {
	state := t.TempDir()
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{
		PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 30, Delta: 1e-3}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.RecordLimits(ctx, "diabetes", false); err != nil {
		t.Fatal(err)
	}
	acme := ledger.Account{Dataset: "diabetes", Identity: "acme"}
	if _, err := store.Charge(ctx, ledger.Charge{Account: acme, Key: "projection/p1", Kind: "projection", Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 1, Delta: 1e-4}}); err != nil {
		t.Fatal(err)
	}
	r, err := store.Reserve(ctx, []ledger.Charge{{Account: acme, Key: "projection/p2", Kind: "projection", Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 2, Delta: 1e-4}}}, ledger.Hold{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"ledger", "--state", state, "--dataset-id", "diabetes"}

	out, err := captureStdout(t, func() error { return run(args) })
	if err != nil {
		t.Fatalf("curator ledger: %v\n%s", err, out)
	}
	want := "Budget under the feature-unit neighbour relation (including the record releases, which also hold under it):\n" +
		"IDENTITY   EPSILON SPENT  DELTA SPENT  EPSILON RESERVED  DELTA RESERVED  EPSILON LEFT  DELTA LEFT\n" +
		"acme       1              0.0001       2                 0.0001          7             0.0008\n" +
		"(dataset)  1              0.0001       2                 0.0001          27            0.0008\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "RESERVED is what releases being computed hold") ||
		!strings.Contains(out, "Releases being computed (1 reserved, not yet charged) include 1 with no finite whole-patient figure") {
		t.Errorf("curator ledger output lacks %q, the RESERVED note or the whole-patient line:\n%s", want, out)
	}

	out, err = captureStdout(t, func() error { return run(append(args, "--json")) })
	if err != nil {
		t.Fatalf("curator ledger --json: %v\n%s", err, out)
	}
	var doc jsonLedger
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Relations) != 1 || len(doc.Relations[0].Identities) != 1 {
		t.Fatalf("--json relations = %+v, want feature-unit with acme", doc.Relations)
	}
	if row := doc.Relations[0].Identities[0]; row.Reserved.Epsilon != 2 || row.Reserved.EpsilonExact != "2" || row.Reservations != 1 || row.Left.Epsilon != 7 {
		t.Errorf("--json acme row = %+v, want reserved ε 2 by 1 reservation, left 7", row)
	}

	out, err = captureStdout(t, func() error { return run(append(args, "--csv")) })
	if err != nil {
		t.Fatalf("curator ledger --csv: %v\n%s", err, out)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	found := false
	for _, rec := range recs[1:] {
		if rec[col["relation"]] == "feature-unit" && rec[col["identity"]] == "acme" {
			found = true
			if rec[col["epsilon_reserved"]] != "2" || rec[col["reservations"]] != "1" || rec[col["epsilon_left"]] != "7" {
				t.Errorf("--csv acme row %v, want epsilon_reserved 2, reservations 1, epsilon_left 7", rec)
			}
		}
	}
	if !found {
		t.Errorf("--csv has no feature-unit row of acme:\n%s", out)
	}

	out, err = captureStdout(t, func() error { return run(append(args, "--verify")) })
	if err != nil || !strings.Contains(out, "ledger consistent") || !strings.Contains(out, "live reservations") || !strings.Contains(out, "1 under feature-unit, ε=2") {
		t.Errorf("curator ledger --verify = %v:\n%s\nwant consistent, and the live reservation named", err, out)
	}

	if err := store.Cancel(ctx, r); err != nil {
		t.Fatal(err)
	}
	out, err = captureStdout(t, func() error { return run(args) })
	if err != nil {
		t.Fatalf("curator ledger: %v\n%s", err, out)
	}
	if want := "IDENTITY   EPSILON SPENT  DELTA SPENT  EPSILON LEFT  DELTA LEFT\n" +
		"acme       1              0.0001       9             0.0009\n"; !strings.Contains(out, want) || strings.Contains(out, "RESERVED") {
		t.Errorf("curator ledger after the cancel lacks %q or still shows RESERVED:\n%s", want, out)
	}
}
