package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
)

// TestLedgerAfterLoweredLimit: a curator spends ε = 1.5 of 2 for an identity; a restart
// with ε = 1 is refused until it changes the limits explicitly; then 'curator ledger'
// lists both limits with their times, marks the identity's spending OVER LIMIT in the
// tables, and says so in --json and --csv.
func TestLedgerAfterLoweredLimit(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	opts := func(eps float64, change bool) curatortest.Options {
		return curatortest.Options{StateDir: state, Scaling: curatortest.DiabetesSchema(t), Budget: ledger.Cost{Epsilon: eps, Delta: 1e-4}, DatasetBudget: ledger.Cost{Epsilon: 10, Delta: 1e-3},
			Configure: func(c *config.Config) { c.ChangeLimits = change }}
	}
	c := curatortest.Start(t, opts(2, false))
	if _, err := c.Server.Curator().ReleaseProjection(ctx, "acme", curator.ProjectionRequest{R: 2, Epsilon: 1.5, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	c.Stop(t)
	if _, err := server.Start(ctx, opts(1, false).Config(t)); err == nil || !strings.Contains(err.Error(), "--change-limits") {
		t.Fatalf("restart with a lower budget without changing the limits: %v, want a refusal", err)
	}
	c = curatortest.Start(t, opts(1, true))
	if p := c.Server.LimitsStart().Previous; p == nil || p.PerIdentity.Epsilon != 2 {
		t.Fatalf("restart with --change-limits: %+v, want the previous limits 2", c.Server.LimitsStart())
	}
	if !strings.Contains(c.Logs.String(), "WARNING: the ledger's limits in force changed with this start") {
		t.Errorf("the change of limits is not warned about in the log")
	}
	c.Stop(t)

	text, _, err := captureOutput(t, func() error { return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes"}) })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"History of the limits",
		"(1 start): per identity ε=2, δ=0.0001; dataset ε=10, δ=0.001; whole patient: no cap\n",
		"(1 start): per identity ε=1, δ=0.0001; dataset ε=10, δ=0.001; whole patient: no cap  ← in force",
		"acme       1.5            1e-05        0             9e-05  OVER LIMIT\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("curator ledger after the lowered limit lacks %q:\n%s", want, text)
		}
	}
	if i, j := strings.Index(text, "Whole patient (dataset diabetes"), strings.Index(text, "Limits ("); i != 0 || j < i {
		t.Errorf("curator ledger does not open with the whole-patient statement:\n%s", text)
	}
	out, _, err := captureOutput(t, func() error { return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes", "--json"}) })
	if err != nil {
		t.Fatal(err)
	}
	var doc jsonLedger
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.LimitsHistory) != 2 || doc.LimitsHistory[0].PerIdentity.Epsilon != 2 || doc.LimitsHistory[1].PerIdentity.Epsilon != 1 || doc.Limits.PerIdentity.Epsilon != 1 {
		t.Errorf("JSON limits %+v, history %+v; want 2 then 1, 1 in force", doc.Limits, doc.LimitsHistory)
	}
	over := false
	for _, rr := range doc.Relations {
		for _, r := range rr.Identities {
			if r.Identity == "acme" && rr.Relation == ledger.RelationFeatureUnit {
				over = r.OverLimit
			}
		}
	}
	if !over {
		t.Errorf("JSON: acme's feature-unit row is not over_limit:\n%s", out)
	}
	csvOut, _, err := captureOutput(t, func() error { return run([]string{"ledger", "--state", state, "--dataset-id", "diabetes", "--csv"}) })
	if err != nil || !strings.Contains(csvOut, "feature-unit,identity,acme,1,1.5,1e-05,0,") || !strings.Contains(csvOut, ",true,0,0,0,0,0,0\n") {
		t.Errorf("CSV after the lowered limit: %v\n%s", err, csvOut)
	}
}
