package rpc

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestGetBudgetPerRelation checks that GetBudget (and GetDatasetInfo) report every
// neighbour relation's budget, each with its own totals and never another relation's
// (except record charges, which count towards feature-unit too: ledger.Relation.Implies),
// that remaining is the smaller of the identity's and the dataset's remainders, and that
// the Budget's own fields stay the feature-unit budget.
func TestGetBudgetPerRelation(t *testing.T) {
	// The dataset cap (6, 0.02) is below twice the identity limit (5, 0.01), so another
	// identity's spending can make the dataset's remainder the binding one.
	h, led := budgetHandlers(t, ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.01}, Dataset: ledger.Cost{Epsilon: 6, Delta: 0.02}})
	ctx := transport.WithIdentity(context.Background(), "tuner")
	charge := func(id, key string, rel ledger.Relation, eps, delta float64) {
		t.Helper()
		if _, err := led.Charge(context.Background(), ledger.Charge{Account: ledger.Account{Dataset: "small", Identity: id},
			Key: key, Kind: "test", Relation: rel, Cost: ledger.Cost{Epsilon: eps, Delta: delta}}); err != nil {
			t.Fatal(err)
		}
	}
	charge("tuner", "proj", ledger.RelationFeatureUnit, 0.5, 1e-6)
	charge("tuner", "answers", ledger.RelationRecord, 1, 0)
	charge("tuner", "kusner", ledger.RelationValidationRecord, 2, 2e-3)
	charge("tuner", "dphypo", ledger.RelationTrainingAddRemove, 1.25, 1e-5)
	charge("other", "kusner", ledger.RelationValidationRecord, 3.5, 0)

	resp, err := h.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b := resp.GetBudget()
	// The own fields: the feature-unit budget, record charges included.
	if b.GetIdentity() != "tuner" || !near(b.GetEpsilonLimit(), 5) || !near(b.GetEpsilonSpent(), 1.5) || !near(b.GetDeltaSpent(), 1e-6) ||
		!near(b.GetEpsilonRemaining(), 3.5) || !near(b.GetDeltaRemaining(), 0.01-1e-6) {
		t.Errorf("feature-unit fields = %v, want spent (1.5, 1e-6), remaining (3.5, 0.01 − 1e-6)", b)
	}
	type want struct {
		rel                      ledger.Relation
		spentEps, spentDelta     float64
		remEps, remDelta         float64
		dsSpentEps, dsSpentDelta float64
	}
	wants := []want{
		{ledger.RelationFeatureUnit, 1.5, 1e-6, 3.5, 0.01 - 1e-6, 1.5, 1e-6},
		{ledger.RelationRecord, 1, 0, 4, 0.01, 1, 0},
		{ledger.RelationTrainingAddRemove, 1.25, 1e-5, 3.75, 0.01 - 1e-5, 1.25, 1e-5},
		// The identity has 3 left, the dataset 6 − 5.5 = 0.5: the dataset's cap binds.
		{ledger.RelationValidationRecord, 2, 2e-3, 0.5, 0.01 - 2e-3, 5.5, 2e-3},
	}
	rels := b.GetRelations()
	if len(rels) != len(wants) {
		t.Fatalf("%d relations, want %d: %v", len(rels), len(wants), rels)
	}
	for k, w := range wants {
		r := rels[k]
		if r.GetRelation() != string(w.rel) || !near(r.GetEpsilonLimit(), 5) || !near(r.GetDeltaLimit(), 0.01) ||
			!near(r.GetDatasetEpsilonLimit(), 6) || !near(r.GetDatasetDeltaLimit(), 0.02) ||
			!near(r.GetEpsilonSpent(), w.spentEps) || !near(r.GetDeltaSpent(), w.spentDelta) ||
			!near(r.GetEpsilonRemaining(), w.remEps) || !near(r.GetDeltaRemaining(), w.remDelta) ||
			!near(r.GetDatasetEpsilonSpent(), w.dsSpentEps) || !near(r.GetDatasetDeltaSpent(), w.dsSpentDelta) ||
			!near(r.GetDatasetEpsilonRemaining(), 6-w.dsSpentEps) || !near(r.GetDatasetDeltaRemaining(), 0.02-w.dsSpentDelta) {
			t.Errorf("relation %d = %v, want %+v", k, r, w)
		}
	}
	// GetDatasetInfo carries the same budget.
	info, err := h.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(info.GetBudget(), b) {
		t.Errorf("GetDatasetInfo budget = %v, want GetBudget's %v", info.GetBudget(), b)
	}
	// A query's response carries the feature-unit fields only; its answers' record
	// charge (ε = 1 of the output privacy) shows in both feature-unit and record.
	q, err := h.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{3}})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetBudget().GetEpsilonSpent() != 2.5 || len(q.GetBudget().GetRelations()) != 0 {
		t.Errorf("query budget = %v, want feature-unit spent 2.5 and no relations", q.GetBudget())
	}
	resp, err = h.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.GetBudget().GetRelations(); !near(r[0].GetEpsilonSpent(), 2.5) || !near(r[1].GetEpsilonSpent(), 2) || !near(r[3].GetEpsilonSpent(), 2) {
		t.Errorf("after a query: relations %v, want feature-unit 2.5, record 2, validation-record unchanged 2", r)
	}
	// An identity without any charge sees full budgets, less what others spent of the
	// dataset caps.
	fresh, err := h.GetBudget(transport.WithIdentity(context.Background(), "new"), &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r := fresh.GetBudget().GetRelations(); len(r) != 4 || !near(r[0].GetEpsilonSpent(), 0) || !near(r[0].GetEpsilonRemaining(), 3.5) ||
		!near(r[3].GetEpsilonRemaining(), 0.5) || !near(r[2].GetEpsilonRemaining(), 4.75) {
		t.Errorf("a new identity's relations = %v, want remaining ε 3.5 (feature-unit), 4.75 (training), 0.5 (validation)", r)
	}
}

// near compares budget amounts: remainders are exact differences rounded toward zero,
// the expected values decimal expressions rounded to nearest.
// budgetHandlers are the handlers of a curator over the small data set (dataset id
// "small", Laplace answers at ε = 1 on [0, 5]) with a SQLite ledger of the given limits,
// closed when the test ends.
func budgetHandlers(t *testing.T, limits ledger.Limits) (*handlers, *ledger.Ledger) {
	t.Helper()
	dir := t.TempDir()
	ds, err := dataset.LoadCSV(smallData(t), dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	cur, err := curator.New(curator.Config{Dataset: ds, DatasetID: "small", Ledger: led, StateDir: dir,
		Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 5}})
	if err != nil {
		t.Fatal(err)
	}
	return New(cur, nil, ledger.Limits{}, Streams{}, zap.NewNop()).(*handlers), led
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

// smallData writes a small dataset of 20 rows (features a, b; target y) and returns
// its path.
func smallData(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range 20 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*7)%11, i%5)
	}
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
