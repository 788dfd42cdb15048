package server

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/rpc"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestBudgetShowsReservations: what releases being computed hold shows in GetBudget
// (feature-unit fields, relations, whole-patient account) and in the budget gauges as
// reserved, out of remaining, as the ledger's limit check counts it; its cancel gives
// it back.
func TestBudgetShowsReservations(t *testing.T) {
	h, led := budgetHandlers(t, ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 0.01}, Dataset: ledger.Cost{Epsilon: 6, Delta: 0.02},
		Patient: ledger.PatientLimits{PerIdentity: ledger.Cost{Epsilon: 20, Delta: 0.01}}})
	ctx := transport.WithIdentity(context.Background(), "tuner")
	tuner := ledger.Account{Dataset: "small", Identity: "tuner"}
	if _, err := led.Charge(ctx, ledger.Charge{Account: tuner, Key: "answers", Kind: "test", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 1}}); err != nil {
		t.Fatal(err)
	}
	r, err := led.Reserve(ctx, []ledger.Charge{{Account: tuner, Key: "proj", Kind: ledger.KindProjection, Relation: ledger.RelationFeatureUnit,
		Cost: ledger.Cost{Epsilon: 1.5, Delta: 1e-6}, Patient: &ledger.PatientCost{Epsilon: 7, Delta: 1e-6}}}, ledger.Hold{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// gauge is the value of name{identity, relation}, and whether the scrape has it.
	gauge := func(name, identity, rel string) (float64, bool) {
		t.Helper()
		reg := prometheus.NewRegistry()
		reg.MustRegister(newBudgetCollector(&Server{ledger: led}, "small"))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range mfs {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if hasLabels(m, map[string]string{"identity": identity, "relation": rel}) {
					return m.GetGauge().GetValue(), true
				}
			}
		}
		return 0, false
	}
	check := func(what string, reserved, patientReserved float64) {
		t.Helper()
		resp, err := h.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		b := resp.GetBudget()
		if !near(b.GetEpsilonSpent(), 1) || !near(b.GetEpsilonReserved(), reserved) || !near(b.GetEpsilonRemaining(), 4-reserved) {
			t.Errorf("%s: feature-unit spent %g, reserved %g, remaining %g; want 1, %g, %g", what,
				b.GetEpsilonSpent(), b.GetEpsilonReserved(), b.GetEpsilonRemaining(), reserved, 4-reserved)
		}
		fu, rec := b.GetRelations()[0], b.GetRelations()[1]
		if !near(fu.GetEpsilonReserved(), reserved) || !near(fu.GetDatasetEpsilonReserved(), reserved) ||
			!near(fu.GetDatasetEpsilonRemaining(), 5-reserved) || !near(rec.GetEpsilonReserved(), 0) || !near(rec.GetEpsilonRemaining(), 4) {
			t.Errorf("%s: feature-unit relation %v, record %v; want ε %g reserved in feature-unit only", what, fu, rec, reserved)
		}
		wp := b.GetWholePatient()
		if !near(wp.GetEpsilonReserved(), patientReserved) || !near(wp.GetDatasetEpsilonReserved(), patientReserved) ||
			!near(wp.GetEpsilonRemaining(), 19-patientReserved) {
			t.Errorf("%s: whole patient %v; want ε %g reserved, %g remaining", what, wp, patientReserved, 19-patientReserved)
		}
		// Reserved series exist while a reservation is live, and only then.
		if g, ok := gauge("privbo_budget_reserved_epsilon", "tuner", "feature-unit"); ok != (reserved > 0) || !near(g, reserved) {
			t.Errorf("%s: privbo_budget_reserved_epsilon = %g (found %v), want %g (found %v)", what, g, ok, reserved, reserved > 0)
		}
		if g, ok := gauge("privbo_budget_remaining_epsilon", "tuner", "feature-unit"); !ok || !near(g, 4-reserved) {
			t.Errorf("%s: privbo_budget_remaining_epsilon = %g (found %v), want %g", what, g, ok, 4-reserved)
		}
	}
	check("reserved", 1.5, 7)
	if err := led.Cancel(ctx, r); err != nil {
		t.Fatal(err)
	}
	check("cancelled", 0, 0)
}

// budgetHandlers are the handlers of a curator over the small data set (dataset id
// "small", Laplace answers at ε = 1 on [0, 5]) with a SQLite ledger of the given limits,
// closed when the test ends.
func budgetHandlers(t *testing.T, limits ledger.Limits) (curatorv1.CuratorServiceServer, *ledger.Ledger) {
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
	return rpc.New(cur, nil, ledger.Limits{}, rpc.Streams{}, zap.NewNop()), led
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }
