package curator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// rowsCurator is a curator over n rows (a, b, y = 10·i) on a SQLite ledger with the
// given limits; edit adjusts its Config before New.
func rowsCurator(t *testing.T, n int, limits ledger.Limits, edit func(*Config)) (*Curator, *ledger.Ledger, Config) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*5)%7, 10*i)
	}
	path := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.LoadCSV(path, dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	cfg := Config{Dataset: ds, Ledger: led, StateDir: dir, DatasetID: "ds-1"}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, led, cfg
}

// spent returns identity's feature-unit balance, which holds its projections and
// (a record-level release counts towards it too) its answers.
func spent(t *testing.T, led *ledger.Ledger, identity string) ledger.Balance {
	t.Helper()
	bal, err := led.Balance(context.Background(), ledger.Account{Dataset: "ds-1", Identity: identity}, ledger.RelationFeatureUnit)
	if err != nil {
		t.Fatal(err)
	}
	return bal
}

// TestPrivateAnswersChargedOncePerIdentity: under RelationRecord the answers to one
// identity compose in parallel (chargeAnswers), so 100 distinct rows cost one ε_out;
// another identity, with fresh noise, pays ε_out again, and the dataset total sums both.
func TestPrivateAnswersChargedOncePerIdentity(t *testing.T) {
	const epsOut = 0.25
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 2}}
	c, led, _ := rowsCurator(t, 120, limits, func(cfg *Config) {
		cfg.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: epsOut, Lower: 0, Upper: 1200}
	})
	ctx := context.Background()
	first := map[int]float64{}
	for start := 0; start < 100; start += 10 {
		idx := make([]int, 10)
		for k := range idx {
			idx[k] = start + k
		}
		obs, bal, err := c.Query(ctx, "alice", idx)
		if err != nil {
			t.Fatalf("rows %d..%d: %v", start, start+9, err)
		}
		for _, o := range obs {
			if o.Replayed {
				t.Errorf("row %d replayed on its first release", o.Index)
			}
			first[o.Index] = o.Value
		}
		if bal.Spent.Epsilon != epsOut {
			t.Fatalf("after rows up to %d the reported spend is ε = %g, want %g", start+9, bal.Spent.Epsilon, epsOut)
		}
	}
	if got := spent(t, led, "alice"); got.Spent.Epsilon != epsOut || got.Spent.Delta != 0 {
		t.Errorf("100 distinct rows cost (%g, %g), want one ε_out = (%g, 0)", got.Spent.Epsilon, got.Spent.Delta, epsOut)
	}
	// Replays return the stored noisy values at no cost.
	obs, _, err := c.Query(ctx, "alice", []int{3, 50, 99})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if !o.Replayed || o.Value != first[o.Index] {
			t.Errorf("replay of row %d = %+v, want the stored %g replayed", o.Index, o, first[o.Index])
		}
	}
	// A restarted curator on the same ledger neither charges again nor changes answers.
	c2, err := New(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs, _, err = c2.Query(ctx, "alice", []int{7, 100})
	if err != nil {
		t.Fatal(err)
	}
	if obs[0].Value != first[7] || !obs[0].Replayed {
		t.Errorf("row 7 after a restart = %+v, want the stored %g", obs[0], first[7])
	}
	if got := spent(t, led, "alice"); got.Spent.Epsilon != epsOut {
		t.Errorf("after a restart and a new row alice spent ε = %g, want still %g", got.Spent.Epsilon, epsOut)
	}
	// Another identity draws fresh noise and pays once too.
	if _, _, err := c.Query(ctx, "bob", []int{3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	bob := spent(t, led, "bob")
	if bob.Spent.Epsilon != epsOut {
		t.Errorf("second identity spent ε = %g, want %g (it pays for its own answers)", bob.Spent.Epsilon, epsOut)
	}
	if math.Abs(bob.DatasetSpent.Epsilon-2*epsOut) > 1e-12 {
		t.Errorf("dataset spent ε = %g, want %g (the identities' charges add up)", bob.DatasetSpent.Epsilon, 2*epsOut)
	}
}

// TestPrivateAnswersRefusedBeforeEvaluation: an identity that cannot pay ε_out is
// refused before any row is evaluated.
func TestPrivateAnswersRefusedBeforeEvaluation(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 0.5}, Dataset: ledger.Cost{Epsilon: 0.5}}
	c, led, _ := rowsCurator(t, 10, limits, func(cfg *Config) {
		cfg.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 100}
	})
	if _, _, err := c.Query(context.Background(), "alice", []int{1}); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("query beyond the budget: %v, want a budget refusal", err)
	}
	entries, err := led.Entries(context.Background(), "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("a refused query left %d ledger records (the first: %s), want none", len(entries), entries[0].Key)
	}
}

// TestExactAnswersNeedProjectionAndCap: exact answers go only to identities holding a
// projection, for at most MaxRows distinct rows of the dataset, all identities together
// (three identities with tiny projections cannot read more than one could); replays
// stay free and allowed, and the count survives a restart (it is read from the ledger).
func TestExactAnswersNeedProjectionAndCap(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 5, Delta: 1e-3}}
	c, led, cfg := rowsCurator(t, 30, limits, func(cfg *Config) {
		cfg.Output = OutputPrivacy{Mechanism: "none"}
		cfg.ExactAnswers = ExactAnswerLimits{MaxRows: 5, RequireProjection: true}
	})
	ctx := context.Background()
	_, _, err := c.Query(ctx, "alice", []int{0})
	if !errors.Is(err, ErrNeedProjection) || !strings.Contains(err.Error(), "request the projection first") {
		t.Fatalf("exact query without a projection: %v, want ErrNeedProjection asking for the projection first", err)
	}
	if _, err := c.ReleaseProjection(ctx, "alice", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	obs, _, err := c.Query(ctx, "alice", []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if obs[2].Value != 20 {
		t.Errorf("exact answer for row 2 = %g, want the target 20", obs[2].Value)
	}
	if _, _, err := c.Query(ctx, "alice", []int{3, 4, 5}); !errors.Is(err, ErrExactRowLimit) || !strings.Contains(err.Error(), "at most 5 distinct rows") {
		t.Fatalf("3 more rows past a cap of 5 (3 answered): %v, want ErrExactRowLimit", err)
	}
	if _, _, err := c.Query(ctx, "alice", []int{3, 4, 0, 1}); err != nil {
		t.Fatalf("2 new rows and 2 replays within the cap: %v", err)
	}
	if got := spent(t, led, "alice"); got.Spent.Epsilon != 1 {
		t.Errorf("exact answers cost ε = %g beyond the projection's 1, want nothing", got.Spent.Epsilon-1)
	}
	// After a restart the cap still counts the 5 rows answered.
	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.Query(ctx, "alice", []int{9}); !errors.Is(err, ErrExactRowLimit) {
		t.Errorf("a sixth row after a restart: %v, want ErrExactRowLimit", err)
	}
	if obs, _, err := c2.Query(ctx, "alice", []int{4}); err != nil || !obs[0].Replayed {
		t.Errorf("replay after the cap: %+v, %v; want it replayed at no cost", obs, err)
	}
	// Another identity is refused until it holds its own projection.
	if _, _, err := c2.Query(ctx, "bob", []int{0}); !errors.Is(err, ErrNeedProjection) {
		t.Errorf("exact query by an identity without a projection: %v, want ErrNeedProjection", err)
	}
	// With tiny projections of their own, other identities read the rows already
	// revealed, and no new row: the cap is the dataset's.
	for _, id := range []string{"bob", "carol"} {
		if _, err := c2.ReleaseProjection(ctx, id, ProjectionRequest{R: 1, Epsilon: 0.001, Delta: 1e-5}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c2.Query(ctx, id, []int{10}); !errors.Is(err, ErrExactRowLimit) || !strings.Contains(err.Error(), "to all identities together") {
			t.Errorf("a new row to %s past the dataset's cap: %v, want ErrExactRowLimit", id, err)
		}
		if obs, _, err := c2.Query(ctx, id, []int{0, 4}); err != nil || obs[0].Value != 0 || obs[1].Value != 40 {
			t.Errorf("rows already revealed, to %s: %+v, %v; want their exact values", id, obs, err)
		}
	}
	// The exact answers' records have no whole-patient bound (nor has the projection
	// here, under the data-dependent scaling of LoadCSV's default).
	pb, err := led.PatientBalance(ctx, ledger.Account{Dataset: cfg.DatasetID, Identity: "bob"})
	if err != nil || pb.IdentityTotal.Bounded() || pb.IdentityTotal.Unbounded != 3 || pb.IdentityTotal.Charges != 3 {
		t.Errorf("bob's whole patient after a projection and 2 exact answers = %d of %d unbounded, %v; want all 3, not bounded",
			pb.IdentityTotal.Unbounded, pb.IdentityTotal.Charges, err)
	}
}

// TestExactProgramAnswersNeedExplicitFlag: exact answers of an evaluation program are
// exact functions of one record's features; New refuses them unless allowed.
func TestExactProgramAnswersNeedExplicitFlag(t *testing.T) {
	dir := t.TempDir()
	led, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1}, Dataset: ledger.Cost{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	ds := &dataset.Dataset{Name: "d", N: 1, D: 1, X: []float64{0}, Y: []float64{0}, Features: []string{"a"}}
	cfg := Config{Dataset: ds, Ledger: led, StateDir: dir, Evaluation: Evaluation{Mode: EvaluateProgram, Command: []string{"/bin/true"}}}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Config.AllowExactProgramAnswers") {
		t.Errorf("program evaluation with exact answers: %v, want a refusal naming Config.AllowExactProgramAnswers", err)
	}
	cfg.AllowExactProgramAnswers = true
	if _, err := New(cfg); err != nil {
		t.Errorf("with AllowExactProgramAnswers: %v", err)
	}
	cfg.AllowExactProgramAnswers = false
	cfg.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 1}
	if _, err := New(cfg); err != nil {
		t.Errorf("program evaluation with private answers: %v", err)
	}
}

// TestGuaranteeTexts pins every guarantee the curator states.
func TestGuaranteeTexts(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-3}}
	build := func(edit func(*Config)) *Curator {
		c, _, _ := rowsCurator(t, 3, limits, edit)
		c.ds.Unit = "UNIT."
		return c
	}
	gaussianProj := "(ε=2, δ=1e-05)-DP under the feature-unit neighbour relation (one record's feature vector changes by at most one protected unit): " +
		"mechanism gaussian, the JL projection plus Gaussian noise calibrated to its sensitivity (Kenthapadi et al. 2013)"
	liftedProj := "mechanism lifted (Kharkovskii et al. 2020, Algorithm 1): (ε=2, δ=1e-05) under the feature-unit neighbour relation as claimed by its Theorem 1, which does not hold: " +
		"the release is the data times a fixed matrix, so an adversary who knows d+1 rows recovers linear measurements of every other row; " +
		"curators who need the guarantee use the gaussian projection mechanism"
	// rowsCurator's dataset is scaled with standardise-nonprivate: no whole-patient guarantee.
	nonprivateWhole := "Whole patient: no guarantee (the scaling standardise-nonprivate uses the data's own statistics, " +
		"so one patient's change moves every scaled row and no distance covers it)."
	nonprivate := ". One protected unit: UNIT. " + nonprivateWhole
	liftedWhole := "Whole patient: no guarantee (the lifted mechanism's claimed guarantee does not hold even for one unit, so it holds for no larger distance)."
	once := "answers to one identity compose in parallel (each record influences one answer; a repeated row replays its answer), " +
		"so an identity is charged (ε, δ) once for all its answers; each identity gets fresh noise and pays once; " +
		"a query may ask for a clip range inside the public one, whose fresh answers carry noise calibrated to its width at the same (ε, δ) and cost nothing more; " +
		"a confirmation pass (rows answered again with fresh noise, each at most once in the pass) is a new release, charged (ε, δ) again"
	laplace := "each answer (ε=0.5, δ=0)-DP under the record neighbour relation (one record replaced by any other): mechanism laplace, " +
		"the recorded value clipped to [0, 400] plus Laplace noise calibrated to the sensitivity 400; " + once +
		"; whole patient: the same (ε=0.5, δ=0), the relation being record-level already (every answer lies in [0, 400] whatever the patient, " +
		"so replacing a whole patient moves it by at most the sensitivity)"
	gaussian := "each answer (ε=0.5, δ=1e-06)-DP under the record neighbour relation (one record replaced by any other): mechanism gaussian, " +
		"the recorded value clipped to [-1, 1] plus Gaussian noise calibrated to the sensitivity 2 (analytic Gaussian, Balle & Wang 2018); " + once +
		"; whole patient: the same (ε=0.5, δ=1e-06), the relation being record-level already (every answer lies in [-1, 1] whatever the patient, " +
		"so replacing a whole patient moves it by at most the sensitivity)"
	exactColumn := "no guarantee (ε = ∞): exact answers (output privacy none, the operator's explicit choice); each answer is the queried record's target value as it is; " +
		"answered only to identities that hold a projection release, at most 200 distinct rows of the dataset, to all identities together; whole patient: no guarantee (ε = ∞)"
	exactProgram := "no guarantee (ε = ∞): exact answers (output privacy none, the operator's explicit choice); " +
		"each answer is an exact function of the queried record's features (the operator's program run on them), so it reveals what the projection protects; " +
		"answered only to identities that hold a projection release, at most 200 distinct rows of the dataset, to all identities together; whole patient: no guarantee (ε = ∞)"
	exactLimits := ExactAnswerLimits{MaxRows: 200, RequireProjection: true}
	program := Evaluation{Mode: EvaluateProgram, Command: []string{"/bin/true"}}

	for _, tc := range []struct {
		name             string
		edit             func(*Config)
		proj, out, whole string
	}{
		{"gaussian projection, laplace answers", func(c *Config) {
			c.Output = OutputPrivacy{Mechanism: "laplace", Epsilon: 0.5, Lower: 0, Upper: 400}
		}, gaussianProj + nonprivate, laplace,
			"Projection releases: mechanism gaussian, (ε, δ)-DP at the (ε, δ) of each request under the feature-unit neighbour relation, one protected unit being: UNIT. " + nonprivateWhole + " Query answers: " + laplace + "."},
		{"lifted projection, gaussian answers", func(c *Config) {
			c.ProjectionMechanism = projection.MechanismLifted
			c.Output = OutputPrivacy{Mechanism: "gaussian", Epsilon: 0.5, Delta: 1e-6, Lower: -1, Upper: 1}
		}, liftedProj + ". One protected unit: UNIT. " + liftedWhole, gaussian,
			"Projection releases: mechanism lifted (Kharkovskii et al. 2020, Algorithm 1), whose claimed (ε, δ) under the feature-unit neighbour relation does not hold; one protected unit being: UNIT. " + liftedWhole + " Query answers: " + gaussian + "."},
		{"exact answers", func(c *Config) {
			c.Output = OutputPrivacy{Mechanism: "none"}
			c.ExactAnswers = exactLimits
		}, gaussianProj + "; the query answers are NOT covered: they are exact, with no guarantee (ε = ∞)" + nonprivate, exactColumn,
			"Projection releases: mechanism gaussian, (ε, δ)-DP at the (ε, δ) of each request under the feature-unit neighbour relation, one protected unit being: UNIT. " + nonprivateWhole + " Query answers: " + exactColumn + "."},
		{"exact program answers", func(c *Config) {
			c.Output = OutputPrivacy{Mechanism: "none"}
			c.ExactAnswers = exactLimits
			c.Evaluation = program
			c.AllowExactProgramAnswers = true
		}, gaussianProj + "; the query answers are NOT covered: they are exact values of the operator's program on each queried record's features, " +
			"so every answer is an exact function of that record's features and the (ε, δ) above does not protect the features of queried records" + nonprivate, exactProgram,
			"Projection releases: mechanism gaussian, (ε, δ)-DP at the (ε, δ) of each request under the feature-unit neighbour relation, one protected unit being: UNIT. " + nonprivateWhole + " Query answers: " + exactProgram + "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := build(tc.edit)
			if got := c.ProjectionGuarantee(2, 1e-5); got != tc.proj {
				t.Errorf("projection guarantee\n got: %s\nwant: %s", got, tc.proj)
			}
			if got := c.OutputGuarantee(); got != tc.out {
				t.Errorf("output guarantee\n got: %s\nwant: %s", got, tc.out)
			}
			if got := c.GuaranteeStatement(); got != tc.whole {
				t.Errorf("guarantee statement\n got: %s\nwant: %s", got, tc.whole)
			}
			info, err := c.Info(context.Background(), "alice")
			if err != nil {
				t.Fatal(err)
			}
			if info.Guarantee != tc.whole || info.OutputGuarantee != tc.out || info.DatasetID != "ds-1" ||
				info.ProjectionRelation != ledger.RelationFeatureUnit || info.OutputRelation != ledger.RelationRecord {
				t.Errorf("Info = %+v, want the same texts, dataset id ds-1 and the relations", info)
			}
		})
	}
	// The projection release states the same text.
	c := build(func(c *Config) { c.Output = OutputPrivacy{Mechanism: "none"} })
	p, err := c.ReleaseProjection(context.Background(), "alice", ProjectionRequest{R: 1, Epsilon: 0.5, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if want := c.ProjectionGuarantee(0.5, 1e-5); p.Guarantee != want || !strings.Contains(want, "NOT covered") {
		t.Errorf("release guarantee = %q, want %q", p.Guarantee, want)
	}
}

// TestBudgetKeptPerDatasetID: the ledger account is the dataset id, not the name.
func TestBudgetKeptPerDatasetID(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-3}}
	c, led, _ := rowsCurator(t, 5, limits, nil)
	if _, err := c.ReleaseProjection(context.Background(), "alice", ProjectionRequest{R: 1, Epsilon: 0.5, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, led, "alice").Spent.Epsilon; got != 0.5 {
		t.Errorf("spent under the dataset id = %g, want 0.5", got)
	}
	byName, err := led.Balance(context.Background(), ledger.Account{Dataset: c.ds.Name, Identity: "alice"}, ledger.RelationFeatureUnit)
	if err != nil {
		t.Fatal(err)
	}
	if byName.Spent.Epsilon != 0 {
		t.Errorf("the display name %q holds a spend of %g; budgets must be kept under the id only", c.ds.Name, byName.Spent.Epsilon)
	}
}
