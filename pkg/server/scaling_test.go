package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/internal/testlog"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/storage"
)

var (
	diabetesCSV    = filepath.Join("..", "..", "examples", "data", "diabetes.csv")
	diabetesSchema = filepath.Join("..", "..", "examples", "data", "diabetes.schema.csv")
)

// diabetesServe is a curator over the shipped diabetes data with the default
// (private) scaling and private answers without a declared range.
func diabetesServe(state string) config.Config {
	return config.Config{Listen: "127.0.0.1:0", DataPath: diabetesCSV, Data: dataset.Options{Target: "progression"}, StateDir: state,
		DatasetID: "diabetes", Budget: ledger.Cost{Epsilon: 20, Delta: 1e-5}}
}

// TestScalingDefaultsAndShare: the library's zero scaling is private (never the
// data-dependent standardisation), the share defaults to 0.1 and must lie in (0, 1),
// and a data-dependent scaling is served only when named, with a warning.
func TestScalingDefaultsAndShare(t *testing.T) {
	cfg, _, err := diabetesServe(t.TempDir()).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data.Scaling.Mode != dataset.ScalePrivate || cfg.PrivateScalingShare != config.DefaultPrivateScalingShare {
		t.Errorf("defaults: scaling %q, share %g; want private and %g", cfg.Data.Scaling.Mode, cfg.PrivateScalingShare, config.DefaultPrivateScalingShare)
	}
	if w := config.Warnings(cfg); len(w) != 1 || !strings.HasPrefix(w[0], "WARNING: answer noise sd is 1.414× the range's width") {
		t.Errorf("private scaling warned about: %q (want only the default answers' noise)", w)
	}
	for _, s := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		c := diabetesServe(t.TempDir())
		c.PrivateScalingShare = s
		if _, _, err := c.Resolve(); err == nil || !strings.Contains(err.Error(), ": must lie in (0, 1)") || !strings.Contains(err.Error(), "--private-scaling-share") {
			t.Errorf("share %g: %v, want a refusal naming --private-scaling-share", s, err)
		}
		if _, err := Start(context.Background(), c); err == nil || !strings.Contains(err.Error(), "--private-scaling-share") {
			t.Errorf("Start with share %g: %v, want a refusal naming --private-scaling-share", s, err)
		}
	}
	for _, m := range []dataset.ScalingMode{dataset.ScaleStandardiseNonprivate, dataset.ScaleMaxNormNonprivate} {
		c := diabetesServe(t.TempDir())
		c.Data.Scaling = dataset.Scaling{Mode: m}
		w := strings.Join(config.Warnings(c), "\n")
		if !strings.Contains(w, "WARNING: --scaling "+string(m)) || !strings.Contains(w, "DOES NOT HOLD") {
			t.Errorf("%s: warnings %q, want one saying the guarantee does not hold", m, w)
		}
	}
}

// scalingEntries returns the ledger's scaling-estimate records of the dataset.
func scalingEntries(t *testing.T, state string, cfg config.Config) []ledger.Receipt {
	t.Helper()
	store, err := storage.OpenLedger(context.Background(), config.LedgerConfig{}, state, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
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
		if e.Kind == ledger.KindScalingEstimate {
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
	// δ_s = 0.25 × min(1e-5, 1e-5) = 2.5e-6.
	if e.Identity != curator.CuratorIdentity || e.Relation != ledger.RelationRecord || math.Abs(e.Cost.Epsilon-5) > 1e-12 || math.Abs(e.Cost.Delta-2.5e-6) > 1e-18 || e.ResultSize == 0 {
		t.Errorf("scaling record %+v, want identity %s, relation record, ε = 5, δ = 2.5e-6, with the bounds as its result", e, curator.CuratorIdentity)
	}
	if ds1.Scaling.Delta != e.Cost.Delta || !strings.Contains(ds1.Unit, "ε = 5, δ = 2.5e-06") {
		t.Errorf("scaled dataset: Delta %g, unit %q; want the estimate's δ %g and its privacy in the unit text", ds1.Scaling.Delta, ds1.Unit, e.Cost.Delta)
	}
	// The charge spends the dataset cap all identities share.
	store, err := storage.OpenLedger(context.Background(), config.LedgerConfig{}, state, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
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
		!strings.Contains(err.Error(), "--private-scaling-share") || !strings.Contains(err.Error(), "--schema") {
		t.Fatalf("Start: %v, want a budget refusal of the scaling estimate naming --private-scaling-share and --schema", err)
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
		edit         func(*config.Config)
		lower, upper float64 // 0, 0: the private estimate
		charges      int
	}{
		{"flags over schema", func(c *config.Config) { c.Data.Scaling = sch; c.Output = curator.OutputPrivacy{Lower: 10, Upper: 300} }, 10, 300, 0},
		{"schema line", func(c *config.Config) { c.Data.Scaling = sch }, 0, 400, 0},
		{"flags with private features", func(c *config.Config) { c.Output = curator.OutputPrivacy{Lower: 1, Upper: 2} }, 1, 2, 1},
		{"estimate", func(c *config.Config) {
			c.Data.Scaling = dataset.Scaling{Mode: dataset.ScaleNone}
			c.EstimateTargetRange = true
		}, 0, 0, 1},
		{"exact answers need no range", func(c *config.Config) { c.Data.Scaling = sch; c.Output = curator.OutputPrivacy{Mechanism: "none"} }, 0, 0, 0},
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
	cfg := config.Config{Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}}
	err = cfg.ResolveOutputRange(ds, nil)
	for _, want := range []string{"--output-lower and --output-upper", "target's line of the schema, --schema", "estimate it privately"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no range: %v, want an error naming %q", err, want)
		}
	}
}

// TestScalingForecast: before anything is charged, Start and Check forecast the
// private estimate from public n, columns, ε and δ. Diabetes at ε = 10 (ε_s = 1 over 11
// columns) is coarse: a WARNING, logged before the estimate's charge and returned by
// CheckReport, with the schema lines that would replace it; at ε = 2 (ε_s = 0.2) it is
// poor: Start and Check refuse with the same lines and the share that would do, and
// the ledger holds nothing. Start logs the warning once, as CheckReport says it.
func TestScalingForecast(t *testing.T) {
	lines := []string{"column,lower,upper", "age,LOWER,UPPER", "s6,LOWER,UPPER", "progression,LOWER,UPPER"}
	t.Run("coarse warns", func(t *testing.T) {
		state := t.TempDir()
		cfg := diabetesServe(state)
		cfg.Budget = ledger.Cost{Epsilon: 10, Delta: 1e-6}
		rep, err := CheckReport(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Join(rep.Warnings, "\n")
		for _, want := range append(lines, "WARNING: the private estimate of the feature bounds and the target's range will be coarse",
			"442 records, 11 columns at ε = 1, δ = 1e-07", "sd 23.3 records (5.3% of the rows)", "--private-scaling-share ≥ 0.4") {
			if !strings.Contains(w, want) {
				t.Errorf("CheckReport warnings lack %q:\n%s", want, w)
			}
		}
		if !strings.Contains(rep.Summary, "forecast coarse") {
			t.Errorf("Check summary %q does not state the forecast", rep.Summary)
		}
		log, logs := testlog.New()
		cfg.Logger = log
		srv, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv.Shutdown(context.Background())
		text := logs.String()
		for _, w := range rep.Warnings {
			if n := strings.Count(text, strings.Split(w, "\n")[0]); n != 1 {
				t.Errorf("Start logged the warning %q %d times, want once:\n%s", w, n, text)
			}
		}
		warn, charged := strings.Index(text, "will be coarse"), strings.Index(text, "private scaling estimate (differentially private")
		if warn < 0 || charged < 0 || warn > charged || !strings.Contains(text[:charged], `"level":"warn"`) {
			t.Errorf("Start logged the coarse forecast at %d and the estimate at %d; want a warning before the estimate:\n%s", warn, charged, text)
		}
		if n := len(scalingEntries(t, state, cfg)); n != 1 {
			t.Errorf("%d scaling-estimate records, want 1", n)
		}
	})
	t.Run("poor refuses", func(t *testing.T) {
		state := t.TempDir()
		cfg := diabetesServe(state)
		cfg.Budget = ledger.Cost{Epsilon: 2, Delta: 1e-6}
		_, checkErr := CheckReport(cfg)
		_, startErr := Start(context.Background(), cfg)
		for name, err := range map[string]error{"Check": checkErr, "Start": startErr} {
			if err == nil {
				t.Fatalf("%s = nil error, want the poor forecast refused", name)
			}
			for _, want := range append(lines, "would be poor, so it is not made", "ε = 0.2, δ = 1e-07",
				"a coarse one needs ε ≥ 0.672 (--private-scaling-share ≥ 0.34 of --budget-epsilon 2)") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s error lacks %q:\n%v", name, want, err)
				}
			}
		}
		if n := len(scalingEntries(t, state, cfg)); n != 0 {
			t.Errorf("%d scaling-estimate records after a refusal, want 0", n)
		}
	})
}

// TestSchemaWithoutTargetLine: a public schema that gives the features but not the
// target's range, with private answers and no Output.Lower/Upper, is refused at start
// (and by Check), naming the schema file, the target and the line to add in the
// schema's own header; nothing is charged. Config.EstimateTargetRange accepts it: the
// range is then estimated privately, once.
func TestSchemaWithoutTargetLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "features.schema.csv")
	text := "column,lower,upper,scale\nage,18,90,\nsex,1,2,\nbmi,15,50,\nbp,60,140,\ns1,80,400,\ns2,20,300,\ns3,15,120,\ns4,1,12,\ns5,3,7,\ns6,50,250,\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := dataset.ParseScaling("schema:" + path)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cfg := diabetesServe(state)
	cfg.Data.Scaling = sc
	_, checkErr := CheckReport(cfg)
	_, startErr := Start(context.Background(), cfg)
	for name, err := range map[string]error{"Check": checkErr, "Start": startErr} {
		for _, want := range []string{"the schema " + path + " has no line for it", "target progression", "progression,LOWER,UPPER,",
			"header column,lower,upper,scale", "--output-lower and --output-upper", "--estimate-target-range"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error containing %q", name, err, want)
			}
		}
	}
	if n := len(scalingEntries(t, state, cfg)); n != 0 {
		t.Errorf("%d scaling-estimate records after the refusal, want 0", n)
	}
	cfg.EstimateTargetRange = true
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := srv.OutputPrivacy()
	srv.Shutdown(context.Background())
	es := scalingEntries(t, state, cfg)
	if len(es) != 1 || !(out.Lower < out.Upper) || !strings.Contains(es[0].Description, "the range of target progression") || strings.Contains(es[0].Description, "feature") {
		t.Errorf("with EstimateTargetRange: range [%g, %g], %d records %v; want the target's range estimated alone, once", out.Lower, out.Upper, len(es), es)
	}
}

// TestSchemaUnknownColumn: a schema line for a column the data file does not have is
// refused at start, naming the schema file, the line and the column, and listing the
// file's columns.
func TestSchemaUnknownColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.schema.csv")
	text := "column,lower,upper\nage,18,90\nsex,1,2\nbmii,15,50\nbmi,15,50\nbp,60,140\ns1,80,400\ns2,20,300\ns3,15,120\ns4,1,12\ns5,3,7\ns6,50,250\nprogression,0,400\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := dataset.ParseScaling("schema:" + path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := diabetesServe(t.TempDir())
	cfg.Data.Scaling = sc
	_, checkErr := CheckReport(cfg)
	_, startErr := Start(context.Background(), cfg)
	for name, err := range map[string]error{"Check": checkErr, "Start": startErr} {
		for _, want := range []string{path + ":4", `column "bmii"`, "no such column in data file", `"bmi"`, "correct the name or delete the line"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error containing %q", name, err, want)
			}
		}
	}
}

// TestEstimatedRangeStatedAsUsed: with the answers' range estimated privately, the
// answers are clipped to the rounded range (answerRange) and the guarantee states that
// range, its width and the estimate's ε rounded up — never float noise such as
// −9.5e-07. The expected text is built here from the parameters: Laplace at ε = 1, the
// range from the estimate the ledger recorded, and ε_T = share·ε/(d + 1) = 0.1·20/11.
func TestEstimatedRangeStatedAsUsed(t *testing.T) {
	state := t.TempDir()
	cfg := diabetesServe(state)
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := srv.OutputPrivacy()
	ds := srv.Dataset()
	g := srv.Curator().OutputGuarantee()
	stmt := srv.Curator().GuaranteeStatement()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	es := scalingEntries(t, state, cfg)
	if len(es) != 1 {
		t.Fatalf("%d scaling-estimate records, want 1", len(es))
	}
	store, err := storage.OpenLedger(context.Background(), config.LedgerConfig{}, state, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.Budget})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := store.Get(context.Background(), ledger.Account{Dataset: cfg.DatasetID, Identity: curator.CuratorIdentity}, es[0].Key)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	var est struct{ Target *dataset.Bounds } // the record's result, as curator stores it
	if err := json.Unmarshal(rec.Result, &est); err != nil || est.Target == nil {
		t.Fatalf("the recorded estimate %s: %v", rec.Result, err)
	}
	// The range used: the recorded one moved outward by less than a step of 10^(⌊log₁₀ w⌋−3),
	// or to zero from within half a step, and printed without float noise.
	raw := *est.Target
	step := math.Pow(10, math.Floor(math.Log10(raw.Upper-raw.Lower))-3)
	if !(out.Upper >= raw.Upper && out.Upper-raw.Upper < step) {
		t.Errorf("upper bound used %v, recorded %v: want it rounded up by less than %g", out.Upper, raw.Upper, step)
	}
	if !(out.Lower <= raw.Lower && raw.Lower-out.Lower < step) && !(out.Lower == 0 && math.Abs(raw.Lower) < step/2) {
		t.Errorf("lower bound used %v, recorded %v: want it rounded down by less than %g, or zero", out.Lower, raw.Lower, step)
	}
	if ds.TargetRange == nil || *ds.TargetRange != (dataset.Bounds{Lower: out.Lower, Upper: out.Upper}) {
		t.Errorf("dataset target range %v, answers' range [%v, %v]: want the same", ds.TargetRange, out.Lower, out.Upper)
	}
	lo, hi := fmt.Sprint(out.Lower), fmt.Sprint(out.Upper)
	for _, b := range []string{lo, hi, fmt.Sprint(out.Upper - out.Lower)} {
		if strings.Contains(b, "e") || len(strings.TrimLeft(strings.ReplaceAll(b, ".", ""), "-0")) > 4 {
			t.Errorf("a bound or the width prints as %s: want at most four significant digits and no exponent", b)
		}
	}
	// The estimate is one zCDP release of ρ at (ε_s, δ_s) = 0.1 × the budget, split
	// between the columns: the target's part is ρ/(d+1), stated with the ε it converts
	// to at δ_s, the features' ρ·d/(d+1) (not linear shares of ε_s).
	epsS, deltaS := 0.1*cfg.Budget.Epsilon, 0.1*cfg.Budget.Delta
	rho, d := dp.ZCDPRho(epsS, deltaS), float64(ds.D)
	part := func(r float64) string {
		return "ρ=" + figure.Up(r) + " of zCDP, ε=" + figure.Up(dp.ZCDPEpsilon(r, deltaS)) + " at δ=" + figure.Text(deltaS)
	}
	epsTText := part(rho / (d + 1))
	rng := "[" + lo + ", " + hi + "]"
	want := "each answer (ε=1, δ=0)-DP under the record neighbour relation (one record replaced by any other): mechanism laplace, " +
		"the recorded value clipped to " + rng + " plus Laplace noise calibrated to the sensitivity " + fmt.Sprint(out.Upper-out.Lower) + "; " +
		"answers to one identity compose in parallel (each record influences one answer; a repeated row replays its answer), " +
		"so an identity is charged (ε, δ) once for all its answers; each identity gets fresh noise and pays once; " +
		"a query may ask for a clip range inside the public one, whose fresh answers carry noise calibrated to its width at the same (ε, δ) and cost nothing more; " +
		"a confirmation pass (rows answered again with fresh noise, each at most once in the pass) is a new release, charged (ε, δ) again; " +
		"the range " + rng + " was estimated from the data with " + epsTText + " under the record neighbour relation, once for the dataset " +
		"(charged to the curator's own account), which adds to the whole-patient ε of everything released; " +
		"whole patient: the same (ε=1, δ=0), the relation being record-level already (every answer lies in " + rng + " whatever the patient, " +
		"so replacing a whole patient moves it by at most the sensitivity)"
	if g != want {
		t.Errorf("answers' guarantee\n got: %s\nwant: %s", g, want)
	}
	note := "; the scaling's feature bounds were estimated from the data with " + part(rho*d/(d+1)) +
		" (and the target's range with " + epsTText + ") under the record neighbour relation, once for the dataset, which adds to any whole-patient ε. Query answers: "
	if !strings.Contains(stmt, note) || longDecimal.MatchString(stmt) {
		t.Errorf("guarantee statement lacks %q, or shows float noise:\n%s", note, stmt)
	}
}
