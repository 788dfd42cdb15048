package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
)

// captureOutput runs f and returns what it printed on standard output and on
// standard error.
func captureOutput(t *testing.T, f func() error) (stdout, stderr string, err error) {
	t.Helper()
	stderr, err = captureFile(t, &os.Stderr, func() error {
		var ferr error
		stdout, ferr = captureStdout(t, f)
		return ferr
	})
	return stdout, stderr, err
}

// ratOf parses an exact figure of the JSON or CSV output.
func ratOf(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("exact figure %q does not parse", s)
	}
	return r
}

// floatNoise matches a figure with float64 noise (2.6109999999999998, 1.9000000000000001).
var floatNoise = regexp.MustCompile(`\d\.?\d*(0000000|9999999)\d`)

// TestLedgerJSONAfterReleases runs a curator, makes releases under two relations by
// two identities, stops it and reads its SQLite ledger with 'curator ledger' without any
// budget flag: the limits are those the curator recorded, every total is the exact sum
// of the charges counting towards its relation (never across relations), each
// identity's LEFT is capped by the dataset's, and no figure shows float noise.
func TestLedgerJSONAfterReleases(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 3, Delta: 1e-4}}
	// The private scaling estimate gets 0.4 of the identity's ε = 2 (ε 0.8, δ 4e-6),
	// so that its forecast for diabetes is not poor.
	c := curatortest.Start(t, curatortest.Options{Budget: limits.PerIdentity, DatasetBudget: limits.Dataset,
		Configure: func(c *config.Config) { c.PrivateScalingShare = 0.4 }})
	ctx := context.Background()
	cur := c.Server.Curator()
	for _, r := range []struct {
		id       string
		eps, del float64
	}{{"acme", 0.1, 1e-6}, {"globex", 0.9, 1e-6}} {
		if _, err := cur.ReleaseProjection(ctx, r.id, curator.ProjectionRequest{R: 2, Epsilon: r.eps, Delta: r.del}); err != nil {
			t.Fatalf("projection for %s: %v", r.id, err)
		}
	}
	if _, _, err := cur.Query(ctx, "acme", []int{1, 2}); err != nil {
		t.Fatalf("query: %v", err)
	}
	c.Stop(t)
	state := c.Config.StateDir

	out, errOut, err := captureOutput(t, func() error {
		return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes", "--json"})
	})
	if err != nil {
		t.Fatalf("curator ledger --json: %v\n%s", err, errOut)
	}
	if strings.Contains(errOut, "WARNING") {
		t.Errorf("curator ledger without budget flags warned: %s", errOut)
	}
	var doc jsonLedger
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, out)
	}
	if doc.Limits.Source != "recorded" || doc.Limits.RecordedAt == nil || doc.Limits.PerIdentity != limits.PerIdentity || doc.Limits.Dataset != limits.Dataset {
		t.Errorf("limits = %+v, want the recorded %+v", doc.Limits, limits)
	}

	// The expected totals, from the charges themselves.
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := store.Entries(ctx, "diabetes")
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	spent := func(rel ledger.Relation, identity string) (eps, delta *big.Rat) {
		eps, delta = new(big.Rat), new(big.Rat)
		for _, e := range entries {
			if e.Relation.Implies(rel) && (identity == "" || e.Identity == identity) {
				eps.Add(eps, new(big.Rat).SetFloat64(e.Cost.Epsilon))
				delta.Add(delta, new(big.Rat).SetFloat64(e.Cost.Delta))
			}
		}
		return eps, delta
	}
	left := func(limit float64, s *big.Rat) *big.Rat {
		r := new(big.Rat).Sub(new(big.Rat).SetFloat64(limit), s)
		if r.Sign() < 0 {
			r.SetInt64(0)
		}
		return r
	}
	eq := func(what, got string, want *big.Rat) {
		t.Helper()
		if ratOf(t, got).Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", what, got, want.RatString())
		}
	}
	seen := map[ledger.Relation]bool{}
	capped := false
	for _, rr := range doc.Relations {
		seen[rr.Relation] = true
		de, dd := spent(rr.Relation, "")
		eq(string(rr.Relation)+" dataset spent ε", rr.Dataset.Spent.EpsilonExact, de)
		eq(string(rr.Relation)+" dataset spent δ", rr.Dataset.Spent.DeltaExact, dd)
		dle := left(limits.Dataset.Epsilon, de)
		eq(string(rr.Relation)+" dataset left ε", rr.Dataset.Left.EpsilonExact, dle)
		for _, row := range rr.Identities {
			ie, id := spent(rr.Relation, row.Identity)
			eq(string(rr.Relation)+" "+row.Identity+" spent ε", row.Spent.EpsilonExact, ie)
			eq(string(rr.Relation)+" "+row.Identity+" spent δ", row.Spent.DeltaExact, id)
			own := left(limits.PerIdentity.Epsilon, ie)
			eq(string(rr.Relation)+" "+row.Identity+" own left ε", row.OwnLeft.EpsilonExact, own)
			want := own
			if dle.Cmp(own) < 0 {
				want, capped = dle, true
			}
			eq(string(rr.Relation)+" "+row.Identity+" left ε (capped)", row.Left.EpsilonExact, want)
			if f := ratOf(t, row.Left.EpsilonExact); new(big.Rat).SetFloat64(row.Left.Epsilon).Cmp(f) > 0 {
				t.Errorf("%s left ε float %v is above the exact %s", row.Identity, row.Left.Epsilon, row.Left.EpsilonExact)
			}
		}
	}
	if !seen[ledger.RelationFeatureUnit] || !seen[ledger.RelationRecord] || len(doc.Relations) != 2 {
		t.Errorf("relations = %v, want feature-unit and record only", seen)
	}
	if !capped {
		t.Errorf("no identity's LEFT was capped by the dataset's; the fixture must make the cap bind")
	}
	if len(doc.Entries) == 0 {
		t.Errorf("JSON lists no entries")
	}

	// The tables: no float noise, and a capped LEFT.
	text, _, err := captureOutput(t, func() error {
		return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes"})
	})
	if err != nil {
		t.Fatal(err)
	}
	budget := text[strings.Index(text, "\nLimits"):]
	// The fixture must be one whose float64 figures are noisy (the dataset's ε left
	// is 3 − 2.8 = 0.20000000000000018 in float64), or the check below proves nothing.
	if fu := doc.Relations[0]; !floatNoise.MatchString(fmt.Sprint(fu.Dataset.Left.Epsilon)) {
		t.Fatalf("fixture: the feature-unit dataset's ε left %v shows no float noise", fu.Dataset.Left.Epsilon)
	}
	if !strings.Contains(budget, "(dataset)  2.8            6e-06        0.2 ") {
		t.Errorf("curator ledger does not show the dataset's ε left as 0.2:\n%s", budget)
	}
	if m := floatNoise.FindString(budget); m != "" {
		t.Errorf("curator ledger shows float noise %q:\n%s", m, budget)
	}
	if !strings.Contains(budget, "recorded by the curator") {
		t.Errorf("curator ledger does not say the limits were recorded:\n%s", budget)
	}
	t.Logf("curator ledger:\n%s", text)

	// CSV: parses, one row per identity and relation plus the dataset's, exact figures
	// equal to the JSON's.
	csvOut, _, err := captureOutput(t, func() error {
		return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes", "--csv"})
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil {
		t.Fatalf("CSV output does not parse: %v\n%s", err, csvOut)
	}
	want := 1 + len(doc.WholePatient.Identities) + 1
	exactJSON := map[string]string{}
	if len(recs) < want {
		t.Fatalf("CSV has %d rows, fewer than the header and the whole-patient rows:\n%s", len(recs), csvOut)
	}
	// The whole-patient rows come first; their exact spent ε is the JSON's.
	for i, row := range append(append([]jsonPatientRow{}, doc.WholePatient.Identities...), doc.WholePatient.Dataset) {
		if r := recs[1+i]; r[0] != "whole-patient" || r[2] != row.Identity || r[8] != row.Spent.EpsilonExact {
			t.Errorf("CSV row %d = %v, want the whole-patient row of %q with ε %s", 1+i, r, row.Identity, row.Spent.EpsilonExact)
		}
	}
	recs = append(recs[:1], recs[1+len(doc.WholePatient.Identities)+1:]...)
	want -= len(doc.WholePatient.Identities) + 1
	for _, rr := range doc.Relations {
		want += len(rr.Identities) + 1
		exactJSON[string(rr.Relation)+"/"] = rr.Dataset.Left.EpsilonExact
		for _, row := range rr.Identities {
			exactJSON[string(rr.Relation)+"/"+row.Identity] = row.Left.EpsilonExact
		}
	}
	if len(recs) != want || strings.Join(recs[0], ",") != strings.Join(ledgerCSVHeader, ",") {
		t.Fatalf("CSV = %d rows, header %v; want %d rows, header %v", len(recs), recs[0], want, ledgerCSVHeader)
	}
	for _, r := range recs[1:] {
		if got, want := r[10], exactJSON[r[0]+"/"+r[2]]; got != want {
			t.Errorf("CSV %s/%s epsilon_left_exact = %s, JSON says %s", r[0], r[2], got, want)
		}
	}

	// Budget flags that differ from the recorded limits: a warning, and the recorded
	// limits are still the ones used.
	out, errOut, err = captureOutput(t, func() error {
		return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes", "--budget-epsilon", "100", "--json"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "WARNING: the budget given here (--budget-epsilon") || !strings.Contains(errOut, "differs from the limits the curator recorded") {
		t.Errorf("curator ledger --budget-epsilon 100 stderr = %q, want a mismatch warning", errOut)
	}
	var doc2 jsonLedger
	if err := json.Unmarshal([]byte(out), &doc2); err != nil || doc2.Limits.PerIdentity != limits.PerIdentity || len(doc2.Warnings) != 1 {
		t.Errorf("with a differing flag: limits %+v, warnings %q, %v; want the recorded limits and the warning", doc2.Limits, doc2.Warnings, err)
	}
	// The same budget as recorded: no warning.
	_, errOut, err = captureOutput(t, func() error {
		return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes", "--budget-epsilon", "2", "--budget-delta", "1e-5",
			"--dataset-budget-epsilon", "3", "--dataset-budget-delta", "1e-4"})
	})
	if err != nil || strings.Contains(errOut, "WARNING") {
		t.Errorf("curator ledger with the recorded budget: %v, stderr %q; want no warning", err, errOut)
	}
}

// TestLedgerWithoutRecordedLimits: a ledger no curator of this version served needs
// the budget flags, and the error says which.
func TestLedgerWithoutRecordedLimits(t *testing.T) {
	state := t.TempDir()
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Charge(context.Background(), ledger.Charge{Account: ledger.Account{Dataset: "d", Identity: "acme"}, Key: "q", Kind: "query",
		Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.5}}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	_, _, err = captureOutput(t, func() error { return run([]string{"ledger", "--state", state, "--dataset-id", "d"}) })
	if err == nil || !strings.Contains(err.Error(), "--budget-epsilon") || !strings.Contains(err.Error(), "no budget limits are recorded") {
		t.Errorf("curator ledger without recorded limits or flags: %v, want an error naming --budget-epsilon", err)
	}
	out, errOut, err := captureOutput(t, func() error {
		return run([]string{"ledger", "--state", state, "--dataset-id", "d", "--budget-epsilon", "1"})
	})
	if err != nil || !strings.Contains(errOut, "no budget limits are recorded") || !strings.Contains(out, "acme       0.5            0            0.5           1e-06") {
		t.Errorf("curator ledger --budget-epsilon 1: %v\nstderr %s\n%s", err, errOut, out)
	}
	// No ledger at all: an error, and none is created.
	empty := t.TempDir()
	if _, _, err := captureOutput(t, func() error { return run([]string{"ledger", "--state", empty, "--dataset-id", "d"}) }); err == nil {
		t.Errorf("curator ledger on an empty state directory: no error")
	}
	if _, err := os.Stat(filepath.Join(empty, "ledger.db")); err == nil {
		t.Errorf("curator ledger created a ledger in an empty state directory")
	}
}

// TestLedgerCountsReleasesApart: the curator's own evaluation records (one per row it
// evaluated) are counted apart from releases: every count of 'curator ledger' --json,
// --csv and the text is the number of releases listed, and the evaluations have their
// own count.
func TestLedgerCountsReleasesApart(t *testing.T) {
	// Scaled by the schema, so that the curator makes no release of its own.
	c := curatortest.Start(t, curatortest.Options{Scaling: curatortest.DiabetesSchema(t)})
	ctx := context.Background()
	cur := c.Server.Curator()
	if _, err := cur.ReleaseProjection(ctx, "acme", curator.ProjectionRequest{R: 2, Epsilon: 0.5, Delta: 1e-6}); err != nil {
		t.Fatal(err)
	}
	rows := []int{1, 2, 3}
	if _, _, err := cur.Query(ctx, "acme", rows); err != nil {
		t.Fatal(err)
	}
	c.Stop(t)
	args := []string{"ledger", "--state", c.Config.StateDir, "--dataset-id", "diabetes"}
	out, errOut, err := captureOutput(t, func() error { return run(append(args, "--json")) })
	if err != nil {
		t.Fatalf("curator ledger --json: %v\n%s", err, errOut)
	}
	var doc struct {
		Evaluations  int `json:"evaluations"`
		WholePatient struct {
			Dataset struct {
				Releases int `json:"releases"`
			} `json:"dataset"`
			Identities []struct {
				Identity string `json:"identity"`
				Releases int    `json:"releases"`
			} `json:"identities"`
		} `json:"whole_patient"`
		Relations []struct {
			Relation ledger.Relation `json:"relation"`
			Dataset  struct {
				Charges int `json:"charges"`
			} `json:"dataset"`
			Identities []struct {
				Identity string `json:"identity"`
				Charges  int    `json:"charges"`
			} `json:"identities"`
		} `json:"relations"`
		Entries []struct {
			Identity string          `json:"identity"`
			Kind     string          `json:"kind"`
			Relation ledger.Relation `json:"relation"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Evaluations != len(rows) {
		t.Errorf("evaluations = %d, want %d (one per row evaluated)", doc.Evaluations, len(rows))
	}
	perIdentity := map[string]int{}
	towards := map[ledger.Relation]map[string]int{}
	for _, e := range doc.Entries {
		if e.Kind == ledger.KindEvaluation || e.Kind == ledger.KindPending {
			t.Errorf("entry %+v is an evaluation record, listed as a release", e)
		}
		perIdentity[e.Identity]++
		for _, r := range e.Relation.CountsTowards() {
			if towards[r] == nil {
				towards[r] = map[string]int{}
			}
			towards[r][""]++
			towards[r][e.Identity]++
		}
	}
	// The projection, the query answers' charge and one query record per row.
	if want := 2 + len(rows); len(doc.Entries) != want || doc.WholePatient.Dataset.Releases != want {
		t.Errorf("%d entries, whole-patient releases %d, want %d each", len(doc.Entries), doc.WholePatient.Dataset.Releases, want)
	}
	for _, r := range doc.WholePatient.Identities {
		if r.Releases != perIdentity[r.Identity] {
			t.Errorf("whole-patient releases of %q = %d, want %d", r.Identity, r.Releases, perIdentity[r.Identity])
		}
	}
	for _, rr := range doc.Relations {
		if rr.Dataset.Charges != towards[rr.Relation][""] {
			t.Errorf("%s: dataset charges %d, want %d", rr.Relation, rr.Dataset.Charges, towards[rr.Relation][""])
		}
		for _, r := range rr.Identities {
			if r.Charges != towards[rr.Relation][r.Identity] {
				t.Errorf("%s: charges of %q = %d, want %d", rr.Relation, r.Identity, r.Charges, towards[rr.Relation][r.Identity])
			}
		}
	}
	text, _, err := captureOutput(t, func() error { return run(args) })
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Evaluation records of the curator (rows evaluated, or waiting for it): %d.", len(rows)); !strings.Contains(text, want) {
		t.Errorf("the text does not say %q:\n%s", want, text)
	}
	if strings.Contains(text, curator.CuratorIdentity) {
		t.Errorf("the text lists the curator's identity, which made no release:\n%s", text)
	}
}
