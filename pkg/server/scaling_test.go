package server

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

var (
	diabetesCSV    = filepath.Join("..", "..", "examples", "data", "diabetes.csv")
	diabetesSchema = filepath.Join("..", "..", "examples", "data", "diabetes.schema.csv")
)

// diabetesServe is a curator over the shipped diabetes data with the default
// (private) scaling and private answers without a declared range.
func diabetesServe(state string) Config {
	return Config{Listen: "127.0.0.1:0", DataPath: diabetesCSV, Data: dataset.Options{Target: "progression"}, StateDir: state,
		DatasetID: "diabetes", Budget: ledger.Cost{Epsilon: 20, Delta: 1e-5}}
}

// TestScalingDefaultsAndShare: the library's zero scaling is private (never the
// data-dependent standardisation), the share defaults to 0.1 and must lie in (0, 1),
// and a data-dependent scaling is served only when named, with a warning.
func TestScalingDefaultsAndShare(t *testing.T) {
	cfg, err := diabetesServe(t.TempDir()).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data.Scaling.Mode != dataset.ScalePrivate || cfg.PrivateScalingShare != DefaultPrivateScalingShare {
		t.Errorf("defaults: scaling %q, share %g; want private and %g", cfg.Data.Scaling.Mode, cfg.PrivateScalingShare, DefaultPrivateScalingShare)
	}
	if w := Warnings(cfg); len(w) != 0 {
		t.Errorf("private scaling warned about: %q", w)
	}
	for _, s := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		c := diabetesServe(t.TempDir())
		c.PrivateScalingShare = s
		if _, err := c.withDefaults(); err == nil || !strings.Contains(err.Error(), "Config.PrivateScalingShare must lie in (0, 1)") {
			t.Errorf("share %g: %v, want a refusal naming Config.PrivateScalingShare", s, err)
		}
		if _, err := Start(context.Background(), c); err == nil || !strings.Contains(err.Error(), "Config.PrivateScalingShare") {
			t.Errorf("Start with share %g: %v, want a refusal naming Config.PrivateScalingShare", s, err)
		}
	}
	for _, m := range []dataset.ScalingMode{dataset.ScaleStandardiseNonprivate, dataset.ScaleMaxNormNonprivate} {
		c := diabetesServe(t.TempDir())
		c.Data.Scaling = dataset.Scaling{Mode: m}
		w := strings.Join(Warnings(c), "\n")
		if !strings.Contains(w, "WARNING: Config.Data.Scaling.Mode "+string(m)) || !strings.Contains(w, "DOES NOT HOLD") {
			t.Errorf("%s: warnings %q, want one saying the guarantee does not hold", m, w)
		}
	}
}

// scalingEntries returns the ledger's scaling-estimate records of the dataset.
func scalingEntries(t *testing.T, state string, cfg Config) []ledger.Receipt {
	t.Helper()
	store, err := OpenLedger(context.Background(), LedgerConfig{}, state, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	all, err := store.Entries(context.Background(), cfg.DatasetID)
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Receipt
	for _, e := range all {
		if e.Kind == ScalingEstimateKind {
			out = append(out, e)
		}
	}
	return out
}

// TestPrivateScalingChargedOnceAndReused: the first start estimates the feature bounds
// and the target's range privately and charges ε_s = share × ε once, under the
// curator's identity and the record relation; a restart reuses the stored estimate
// (identical scaled data, identical answer range) and charges nothing more.
func TestPrivateScalingChargedOnceAndReused(t *testing.T) {
	state := t.TempDir()
	cfg := diabetesServe(state)
	cfg.PrivateScalingShare = 0.25
	start := func() (*dataset.Dataset, curator.OutputPrivacy) {
		t.Helper()
		srv, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ds, out := srv.Dataset(), srv.OutputPrivacy()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return ds, out
	}
	ds1, out1 := start()
	if ds1.Scaling.Mode != dataset.ScalePrivate || !ds1.Private || ds1.TargetRange == nil {
		t.Fatalf("first start: scaling %q, private %v, target range %v; want private with an estimated target range", ds1.Scaling.Mode, ds1.Private, ds1.TargetRange)
	}
	if out1.Mechanism != "laplace" || out1.Lower != ds1.TargetRange.Lower || out1.Upper != ds1.TargetRange.Upper {
		t.Errorf("answers %+v, want laplace over the estimated target range %v", out1, *ds1.TargetRange)
	}
	// ε_s = 0.25 × 20 = 5: the 10 features get 10/11 of it, the target 1/11.
	if d := float64(ds1.D); math.Abs(ds1.Scaling.Epsilon-5*d/(d+1)) > 1e-12 || math.Abs(ds1.Scaling.TargetEpsilon-5/(d+1)) > 1e-12 {
		t.Errorf("estimate ε: features %g, target %g; want %g and %g", ds1.Scaling.Epsilon, ds1.Scaling.TargetEpsilon, 5*d/(d+1), 5/(d+1))
	}
	ds2, out2 := start()
	if !slices.Equal(ds1.X, ds2.X) || out1 != out2 || *ds1.TargetRange != *ds2.TargetRange {
		t.Error("the restart did not reuse the stored estimate: the scaled data or the answer range changed")
	}
	es := scalingEntries(t, state, cfg)
	if len(es) != 1 {
		t.Fatalf("%d scaling-estimate records after two starts, want 1", len(es))
	}
	e := es[0]
	if e.Identity != curator.CuratorIdentity || e.Relation != ledger.RelationRecord || math.Abs(e.Cost.Epsilon-5) > 1e-12 || e.Cost.Delta != 0 || e.ResultSize == 0 {
		t.Errorf("scaling record %+v, want identity %s, relation record, ε = 5, δ = 0, with the bounds as its result", e, curator.CuratorIdentity)
	}
	// The charge spends the dataset cap all identities share.
	store, err := OpenLedger(context.Background(), LedgerConfig{}, state, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bal, err := store.Balance(context.Background(), ledger.Account{Dataset: "diabetes", Identity: "vendor"}, ledger.RelationRecord)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(bal.DatasetRemaining.Epsilon-15) > 1e-9 || bal.Remaining.Epsilon != 20 {
		t.Errorf("after the estimate: dataset ε left %g (want 15), a modeler's own ε left %g (want 20)", bal.DatasetRemaining.Epsilon, bal.Remaining.Epsilon)
	}
	// Other public parameters are another release: a new estimate, a new charge.
	cfg.PrivateScalingShare = 0.1
	start()
	if n := len(scalingEntries(t, state, cfg)); n != 2 {
		t.Errorf("%d scaling-estimate records after a start with another share, want 2", n)
	}
}

// TestPrivateScalingRefusedByBudget: an estimate the dataset cap cannot pay stops the
// start with a message saying what to change, and nothing is recorded.
func TestPrivateScalingRefusedByBudget(t *testing.T) {
	state := t.TempDir()
	cfg := diabetesServe(state)
	cfg.DatasetBudget = ledger.Cost{Epsilon: 1, Delta: 1e-5} // ε_s = 0.1 × 20 = 2 > 1
	_, err := Start(context.Background(), cfg)
	if err == nil || !errors.Is(err, ledger.ErrBudgetExceeded) || !strings.Contains(err.Error(), "private scaling estimate needs ε = 2") ||
		!strings.Contains(err.Error(), "Config.PrivateScalingShare") || !strings.Contains(err.Error(), "Config.Data.Scaling.Schema") {
		t.Fatalf("Start: %v, want a budget refusal of the scaling estimate naming Config.PrivateScalingShare and Config.Data.Scaling.Schema", err)
	}
	if n := len(scalingEntries(t, state, cfg)); n != 0 {
		t.Errorf("%d scaling-estimate records after a refusal, want 0", n)
	}
}

// TestOutputRangePrecedence: the target's range of private answers comes from the
// flags, else the schema's target line, else the private estimate; a public schema
// with a target line needs no estimate at all (nothing is charged).
func TestOutputRangePrecedence(t *testing.T) {
	sch, err := dataset.ParseScaling("schema:" + diabetesSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		edit         func(*Config)
		lower, upper float64 // 0, 0: the private estimate
		charges      int
	}{
		{"flags over schema", func(c *Config) { c.Data.Scaling = sch; c.Output = curator.OutputPrivacy{Lower: 10, Upper: 300} }, 10, 300, 0},
		{"schema line", func(c *Config) { c.Data.Scaling = sch }, 0, 400, 0},
		{"flags with private features", func(c *Config) { c.Output = curator.OutputPrivacy{Lower: 1, Upper: 2} }, 1, 2, 1},
		{"estimate", func(c *Config) { c.Data.Scaling = dataset.Scaling{Mode: dataset.ScaleNone} }, 0, 0, 1},
		{"exact answers need no range", func(c *Config) { c.Data.Scaling = sch; c.Output = curator.OutputPrivacy{Mechanism: "none"} }, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			cfg := diabetesServe(state)
			tc.edit(&cfg)
			srv, err := Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, ds := srv.OutputPrivacy(), srv.Dataset()
			srv.Shutdown(context.Background())
			switch {
			case out.Mechanism == "none":
				if out.Lower != 0 || out.Upper != 0 {
					t.Errorf("exact answers got a range %+v", out)
				}
			case tc.lower == 0 && tc.upper == 0:
				es := scalingEntries(t, state, cfg)
				if len(es) != 1 || !(out.Lower < out.Upper) || ds.Scaling.Mode != dataset.ScaleNone {
					t.Errorf("estimated range [%g, %g] with %d records, scaling %s", out.Lower, out.Upper, len(es), ds.Scaling.Mode)
				}
			case out.Lower != tc.lower || out.Upper != tc.upper:
				t.Errorf("range [%g, %g], want [%g, %g]", out.Lower, out.Upper, tc.lower, tc.upper)
			}
			if n := len(scalingEntries(t, state, cfg)); n != tc.charges {
				t.Errorf("%d scaling-estimate records, want %d", n, tc.charges)
			}
		})
	}
	// When no source gives a range, the error names all three ways.
	ds := &dataset.Dataset{Target: "y"}
	cfg := Config{Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}}
	err = resolveOutputRange(&cfg, ds, scalingEstimate{})
	for _, want := range []string{"Config.Output.Lower and Config.Output.Upper", "target's line of the schema, Config.Data.Scaling.Schema", "estimate it privately"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no range: %v, want an error naming %q", err, want)
		}
	}
}

// TestPrivateScalingDescription pins the guarantee text the private scaling estimate's
// ledger record states: the mechanism, the neighbour relation (record replacement), the
// share of the budget and the ε of each part.
func TestPrivateScalingDescription(t *testing.T) {
	raw := &dataset.Raw{D: 10, Target: "progression"}
	for _, tc := range []struct {
		p    scalingPlan
		want string
	}{
		{scalingPlan{features: true, target: true, epsF: 5 * 10.0 / 11, epsT: 5.0 / 11, share: 0.25},
			"private scaling estimate (exponential mechanism, record replacement; share 0.25 of the identity budget ε): " +
				"bounds of 10 feature columns with ε=4.545454545454546 and the range of target progression with ε=0.45454545454545453"},
		{scalingPlan{features: true, epsF: 2, share: 0.1},
			"private scaling estimate (exponential mechanism, record replacement; share 0.1 of the identity budget ε): bounds of 10 feature columns with ε=2"},
		{scalingPlan{target: true, epsT: 0.5, share: 0.1},
			"private scaling estimate (exponential mechanism, record replacement; share 0.1 of the identity budget ε): the range of target progression with ε=0.5"},
	} {
		if got := tc.p.describe(raw); got != tc.want {
			t.Errorf("describe(%+v)\n got: %s\nwant: %s", tc.p, got, tc.want)
		}
	}
}
