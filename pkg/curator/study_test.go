package curator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// laplaceOut is the answers' setting of the study tests: laplace ε = 1 on [0, 100].
var laplaceOut = OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 100}

func entries(t *testing.T, led *ledger.Ledger) []ledger.Receipt {
	t.Helper()
	es, err := led.Entries(context.Background(), "ds-1")
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// releaseFiles counts the released matrices kept in the state directory.
func releaseFiles(t *testing.T, cfg Config) int {
	t.Helper()
	fs, err := os.ReadDir(ReleasesDir(cfg.StateDir))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fs {
		if strings.HasSuffix(f.Name(), ".f64") {
			n++
		}
	}
	return n
}

// TestStudyPaidTogether: a projection asked WithAnswers is charged with the identity's
// answers in one transaction, so its queries charge nothing more; a study whose answers
// the budget could not also pay is refused before anything is computed or charged,
// although its projection alone would fit, and a request without WithAnswers still
// charges the projection alone.
func TestStudyPaidTogether(t *testing.T) {
	ctx := context.Background()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 2, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 3, Delta: 1e-3}}
	c, led, cfg := rowsCurator(t, 20, limits, func(cfg *Config) { cfg.Output = laplaceOut })
	study := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-4, WithAnswers: true}

	p, err := c.ReleaseProjection(ctx, "alice", study)
	if err != nil {
		t.Fatalf("study within the budget: %v", err)
	}
	if got := spent(t, led, "alice").Spent; got != (ledger.Cost{Epsilon: 2, Delta: 1e-4}) || p.Budget.Spent != got {
		t.Errorf("after the study alice spent %+v (header %+v), want the projection and the answers, {2 0.0001}", got, p.Budget.Spent)
	}
	kinds := map[string]int{}
	for _, e := range entries(t, led) {
		kinds[e.Kind]++
	}
	if kinds[ledger.KindProjection] != 1 || kinds[ledger.KindQueryAnswers] != 1 || len(kinds) != 2 {
		t.Errorf("ledger kinds after the study = %v, want one projection and one query-answers charge", kinds)
	}
	if _, bal, err := c.Query(ctx, "alice", []int{1, 2, 3}); err != nil || bal.Spent.Epsilon != 2 {
		t.Errorf("queries of a paid study: spent %+v, %v; want nothing more charged", bal.Spent, err)
	}

	// bob: the dataset has 1 left, his projection alone would fit, with its answers not.
	before := len(entries(t, led))
	files := releaseFiles(t, cfg)
	if _, err := c.ReleaseProjection(ctx, "bob", study); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("study beyond the dataset cap: %v, want a budget refusal", err)
	}
	if n := len(entries(t, led)); n != before {
		t.Errorf("the refused study left %d ledger records, want %d", n, before)
	}
	if n := releaseFiles(t, cfg); n != files {
		t.Errorf("the refused study left %d release files, want %d", n, files)
	}
	// The old request, without the answers, is still the projection alone.
	alone := study
	alone.WithAnswers = false
	if _, err := c.ReleaseProjection(ctx, "bob", alone); err != nil {
		t.Fatalf("projection alone: %v", err)
	}
	if got := spent(t, led, "bob").Spent; got != (ledger.Cost{Epsilon: 1, Delta: 1e-4}) {
		t.Errorf("bob spent %+v, want the projection alone", got)
	}
	// Its replay with the answers must pay them, and cannot: refused, nothing charged.
	if _, err := c.ReleaseProjection(ctx, "bob", study); !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("replayed projection with unpayable answers: %v, want a budget refusal", err)
	}
	if got := spent(t, led, "bob").Spent; got != (ledger.Cost{Epsilon: 1, Delta: 1e-4}) {
		t.Errorf("bob spent %+v after the refusal, want the projection alone", got)
	}
}

// TestStudyReplayPaysAnswers: a projection released alone and asked again WithAnswers
// comes back replayed with the identity's answers charged then.
func TestStudyReplayPaysAnswers(t *testing.T) {
	ctx := context.Background()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 5, Delta: 1e-3}}
	c, led, _ := rowsCurator(t, 20, limits, func(cfg *Config) { cfg.Output = laplaceOut })
	req := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-4}
	if _, err := c.ReleaseProjection(ctx, "alice", req); err != nil {
		t.Fatal(err)
	}
	req.WithAnswers = true
	p, err := c.ReleaseProjection(ctx, "alice", req)
	if err != nil || !p.Replayed {
		t.Fatalf("replay with the answers: replayed %v, %v", p != nil && p.Replayed, err)
	}
	if got := spent(t, led, "alice").Spent.Epsilon; got != 2 {
		t.Errorf("spent ε=%g after the replay with the answers, want 2", got)
	}
	if _, err := c.ReleaseProjection(ctx, "alice", req); err != nil || spent(t, led, "alice").Spent.Epsilon != 2 {
		t.Errorf("second replay: %v, spent %g; want nothing more", err, spent(t, led, "alice").Spent.Epsilon)
	}
}

// TestStudiesRacing: identities asking at once for full studies on a dataset cap with
// room for exactly k of them: k succeed, each with its projection and answers charged,
// and every other is refused with nothing charged and no matrix kept.
func TestStudiesRacing(t *testing.T) {
	const identities, k = 8, 3
	ctx := context.Background()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 2*k + 1, Delta: 1e-3}}
	c, led, cfg := rowsCurator(t, 20, limits, func(cfg *Config) { cfg.Output = laplaceOut })
	study := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5, WithAnswers: true}
	errs := make([]error, identities)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range identities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = c.ReleaseProjection(ctx, fmt.Sprintf("vendor%d", i), study)
		}()
	}
	close(start)
	wg.Wait()
	won := map[string]bool{}
	for i, err := range errs {
		switch {
		case err == nil:
			won[fmt.Sprintf("vendor%d", i)] = true
		case !errors.Is(err, ledger.ErrBudgetExceeded):
			t.Errorf("vendor%d: %v, want success or a budget refusal", i, err)
		}
	}
	if len(won) != k {
		t.Errorf("%d studies released, want exactly %d", len(won), k)
	}
	per := map[string][]string{}
	for _, e := range entries(t, led) {
		per[e.Identity] = append(per[e.Identity], e.Kind)
	}
	for id, kinds := range per {
		if !won[id] || len(kinds) != 2 {
			t.Errorf("%s (study released: %v) has ledger records %v, want a projection and its answers exactly when released", id, won[id], kinds)
		}
	}
	if n := releaseFiles(t, cfg); n != k {
		t.Errorf("%d release files kept, want %d", n, k)
	}
}

// TestDimensionAboveFeatures: the curator refuses r > d for every client under the
// Gaussian mechanism (no more information, more noise), before anything is charged; the
// lifted mechanism, kept to reproduce the paper's runs, releases it.
func TestDimensionAboveFeatures(t *testing.T) {
	ctx := context.Background()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 5, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 5, Delta: 1e-3}}
	for _, tt := range []struct {
		mech string
		ok   bool
	}{{projection.MechanismGaussian, false}, {projection.MechanismLifted, true}} {
		c, led, _ := rowsCurator(t, 20, limits, func(cfg *Config) { cfg.ProjectionMechanism = tt.mech })
		_, err := c.ReleaseProjection(ctx, "alice", ProjectionRequest{R: 3, Epsilon: 1, Delta: 1e-5})
		if tt.ok != (err == nil) {
			t.Errorf("%s, r = 3 > d = 2: %v, want success %v", tt.mech, err, tt.ok)
		}
		if tt.ok {
			continue
		}
		if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, ErrDimensionAboveFeatures) || !strings.Contains(err.Error(), "r ≤ 2") {
			t.Errorf("%s, r = 3 > d = 2: %v, want an invalid argument saying r ≤ 2", tt.mech, err)
		}
		if n := len(entries(t, led)); n != 0 {
			t.Errorf("%s: the refusal left %d ledger records", tt.mech, n)
		}
		if _, err := c.Quote(ctx, "alice", QuoteRequest{R: 3}); !errors.Is(err, ErrDimensionAboveFeatures) {
			t.Errorf("%s: quote of r = 3: %v, want the same refusal", tt.mech, err)
		}
	}
}

// TestDefaultStudy pins the sizing of the default study: ε from the setting (default
// 1), δ the share of the δ budgets that holds as many studies as ε does, and the counts
// the start-up line states.
func TestDefaultStudy(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		limits ledger.Limits
		own    ledger.Cost // the curator's own charge before (a private scaling estimate)
		edit   func(*Config)
		want   StudySize
		perID  int
		inDS   int
	}{
		{name: "budget 10, δ 1e-6", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}},
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 2e-7}, Answers: ledger.Cost{Epsilon: 1}}, perID: 5, inDS: 5},
		{name: "after a scaling estimate of ε 1", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}},
			own:  ledger.Cost{Epsilon: 1},
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 2e-7}, Answers: ledger.Cost{Epsilon: 1}}, perID: 5, inDS: 4},
		{name: "a larger cap", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 100, Delta: 1e-5}},
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 2e-7}, Answers: ledger.Cost{Epsilon: 1}}, perID: 5, inDS: 50},
		{name: "study ε 2", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}},
			edit: func(cfg *Config) { cfg.StudyEpsilon = 2 },
			want: StudySize{Projection: ledger.Cost{Epsilon: 2, Delta: 3.33e-7}, Answers: ledger.Cost{Epsilon: 1}}, perID: 3, inDS: 3},
		{name: "study δ given", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}},
			edit: func(cfg *Config) { cfg.StudyDelta = 5e-7 },
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 5e-7}, Answers: ledger.Cost{Epsilon: 1}}, perID: 2, inDS: 2},
		{name: "gaussian answers take their δ from the share", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}},
			edit: func(cfg *Config) {
				cfg.Output = OutputPrivacy{Mechanism: "gaussian", Epsilon: 1, Delta: 5e-8, Lower: 0, Upper: 100}
			},
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 1.5e-7}, Answers: ledger.Cost{Epsilon: 1, Delta: 5e-8}}, perID: 5, inDS: 5},
		{name: "a budget for less than one study", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1.5, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 1.5, Delta: 1e-6}},
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 1e-6}, Answers: ledger.Cost{Epsilon: 1}}, perID: 0, inDS: 0},
		{name: "exact answers", limits: ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}},
			edit: func(cfg *Config) { cfg.Output = OutputPrivacy{} },
			want: StudySize{Projection: ledger.Cost{Epsilon: 1, Delta: 1e-7}}, perID: 10, inDS: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := rowsCurator(t, 20, tt.limits, func(cfg *Config) {
				cfg.Output = laplaceOut
				if tt.edit != nil {
					tt.edit(cfg)
				}
				if !tt.own.IsZero() {
					if _, err := cfg.Ledger.Charge(ctx, ledger.Charge{Account: ledger.Account{Dataset: "ds-1", Identity: CuratorIdentity},
						Key: "scaling", Kind: "scaling-estimate", Relation: ledger.RelationRecord, Cost: tt.own}); err != nil {
						t.Fatal(err)
					}
				}
			})
			got, err := c.StudyCapacity(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.StudySize != tt.want || got.PerIdentity != tt.perID || got.Dataset != tt.inDS || got.DatasetLeft != tt.inDS {
				t.Errorf("StudyCapacity = %+v, want %+v, %d per identity, %d in the dataset", got, tt.want, tt.perID, tt.inDS)
			}
			// A study of that size charged: one fewer left.
			if tt.inDS > 0 && !tt.want.Answers.IsZero() {
				if _, err := c.ReleaseProjection(ctx, "alice", ProjectionRequest{R: 2, Epsilon: tt.want.Projection.Epsilon, Delta: tt.want.Projection.Delta, WithAnswers: true}); err != nil {
					t.Fatal(err)
				}
				if after, err := c.StudyCapacity(ctx); err != nil || after.DatasetLeft != tt.inDS-1 || after.Dataset != tt.inDS {
					t.Errorf("after one study: %+v, %v; want %d left of %d", after, err, tt.inDS-1, tt.inDS)
				}
			}
		})
	}
}

// TestRoundDown3: three significant digits, never up.
func TestRoundDown3(t *testing.T) {
	for _, tt := range []struct{ x, want float64 }{
		{2e-7, 2e-7}, {1.0 / 3 * 1e-6, 3.33e-7}, {0.9999, 0.999}, {0.12345, 0.123}, {1e-6 / 5, 2e-7}, {7, 7}, {0, 0},
	} {
		if got := roundDown3(tt.x); got != tt.want || got > tt.x {
			t.Errorf("roundDown3(%g) = %g, want %g", tt.x, got, tt.want)
		}
	}
}

// privateCurator is rowsCurator with a private scaling (no statistic of the data: rows
// clipped to norm 25), whose releases have a whole-patient guarantee.
func privateCurator(t *testing.T, n int, limits ledger.Limits, edit func(*Config)) (*Curator, *ledger.Ledger) {
	t.Helper()
	_, led, cfg := rowsCurator(t, n, limits, edit)
	sc, err := dataset.ParseScaling("none")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dataset.LoadRaw(filepath.Join(cfg.StateDir, "d.csv"), dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dataset, err = raw.Scale(sc); err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, led
}

// TestQuote checks the quote against what the release then does: the resolved r
// (chosen by the rule when 0), the default study's (ε, δ), the noise σ the release
// states, the paid parts, the charge per relation and whether it fits — and that a
// quote charges nothing.
func TestQuote(t *testing.T) {
	ctx := context.Background()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Dataset: ledger.Cost{Epsilon: 10, Delta: 1e-6}}
	c, led := privateCurator(t, 30, limits, func(cfg *Config) { cfg.Output = laplaceOut })

	q, err := c.Quote(ctx, "alice", QuoteRequest{WithAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	auto, err := projection.AutoDimension(30, 2, projection.MechanismGaussian, 1, 2e-7, autoSquaredDistance)
	if err != nil {
		t.Fatal(err)
	}
	if q.R != auto.R || !q.RChosen || q.Epsilon != 1 || q.Delta != 2e-7 || !q.DefaultEpsilon || !q.DefaultDelta {
		t.Errorf("default quote resolves r=%d (chosen %v), ε=%g, δ=%g (defaults %v %v); want r=%d chosen, the default study (1, 2e-07)",
			q.R, q.RChosen, q.Epsilon, q.Delta, q.DefaultEpsilon, q.DefaultDelta, auto.R)
	}
	if q.ProjectionPaid || q.Answers.Paid || !q.Answers.Included || !q.Fits || q.Refusal != "" {
		t.Errorf("fresh identity: paid %v/%v, included %v, fits %v %q; want nothing paid, answers included, fits", q.ProjectionPaid, q.Answers.Paid, q.Answers.Included, q.Fits, q.Refusal)
	}
	wantSD := math.Sqrt2 * 100 / 1 // Laplace scale (U − L)/ε
	if a := q.Answers; a.Mechanism != "laplace" || a.Epsilon != 1 || a.Lower != 0 || a.Upper != 100 || math.Abs(a.NoiseSD-wantSD) > 1e-6*wantSD {
		t.Errorf("answers quoted %+v, want laplace ε=1 on [0, 100] with noise sd %g", a, wantSD)
	}
	want := []RelationQuote{
		{Relation: ledger.RelationFeatureUnit, Charge: ledger.Cost{Epsilon: 2, Delta: 2e-7}, Available: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Fits: true},
		{Relation: ledger.RelationRecord, Charge: ledger.Cost{Epsilon: 1}, Available: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Fits: true},
	}
	if fmt.Sprint(q.Costs) != fmt.Sprint(want) {
		t.Errorf("costs %+v, want %+v", q.Costs, want)
	}
	if !(q.WholePatientEpsilon > q.Epsilon) || q.WholePatientUnits != 50 || !strings.HasPrefix(q.WholePatient, WholePatientLabel) {
		t.Errorf("whole patient ε=%g at %g units (%q), want more than the release's ε at the clip diameter 50", q.WholePatientEpsilon, q.WholePatientUnits, q.WholePatient)
	}
	if n := len(entries(t, led)); n != 0 {
		t.Errorf("a quote left %d ledger records", n)
	}

	// The release states the σ quoted, and the quote then knows what is paid.
	p, err := c.ReleaseProjection(ctx, "alice", ProjectionRequest{R: q.R, Epsilon: q.Epsilon, Delta: q.Delta, WithAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.NoiseSD-q.NoiseSD) > 1e-9*p.NoiseSD {
		t.Errorf("release σ = %.12g, quoted %.12g", p.NoiseSD, q.NoiseSD)
	}
	again, err := c.Quote(ctx, "alice", QuoteRequest{R: q.R, Epsilon: q.Epsilon, Delta: q.Delta, WithAnswers: true})
	if err != nil || !again.ProjectionPaid || !again.Answers.Paid || len(again.Costs) != 0 || !again.Fits {
		t.Errorf("quote of the study released: %+v, %v; want both paid, nothing to charge", again, err)
	}

	// Too large a study: quoted as not fitting, with the refusal, nothing charged.
	n := len(entries(t, led))
	big, err := c.Quote(ctx, "bob", QuoteRequest{R: 2, Epsilon: 7.5, WithAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	if big.Fits || !strings.Contains(big.Refusal, "budget exceeded") || big.Costs[0].Fits || big.Costs[0].Charge.Epsilon != 8.5 {
		t.Errorf("quote beyond the dataset cap: %+v, want fits false with the refusal", big)
	}
	if got := len(entries(t, led)); got != n {
		t.Errorf("quotes left %d ledger records, want %d", got, n)
	}
	// δ by default at most what the identity can still spend (alice used 2e-07 of 1e-06).
	if q, err := c.Quote(ctx, "carol", QuoteRequest{R: 2, Epsilon: 1}); err != nil || q.Delta != 2e-7 {
		t.Errorf("carol's default δ = %v, %v; want 2e-07", q, err)
	}
	for _, tt := range []struct {
		req  QuoteRequest
		want string
	}{
		{QuoteRequest{R: -1}, "r must be"}, {QuoteRequest{Epsilon: -1}, "epsilon"}, {QuoteRequest{Delta: 1}, "delta"},
		{QuoteRequest{R: 3}, "features"}, {QuoteRequest{Label: strings.Repeat("x", 65)}, "label"},
	} {
		if _, err := c.Quote(ctx, "alice", tt.req); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Quote(%+v) = %v, want an invalid argument about %s", tt.req, err, tt.want)
		}
	}
}

// TestQuoteZeroDelta: with a δ budget of 0 a quote is refused as such (no projection
// can ever be released), not as a spent budget.
func TestQuoteZeroDelta(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 10}, Dataset: ledger.Cost{Epsilon: 10}}
	c, _, _ := rowsCurator(t, 20, limits, func(cfg *Config) { cfg.Output = laplaceOut })
	if _, err := c.Quote(context.Background(), "alice", QuoteRequest{}); !errors.Is(err, ErrNoDeltaBudget) {
		t.Errorf("default quote with a zero δ budget: %v, want ErrNoDeltaBudget", err)
	}
	_, err := c.Quote(context.Background(), "alice", QuoteRequest{Delta: 1e-6})
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !be.ZeroDeltaLimit() {
		t.Errorf("quote of δ 1e-6 with a zero δ budget: %v, want a zero-δ-limit refusal", err)
	}
}

// TestDeltaShareCostsLittleNoise pins the reason the default study divides δ and not ε
// (DefaultStudy): on the diabetes shape (n = 442, d = r = 10) the Gaussian projection's
// σ grows by about 7% when δ = 1e-6 is divided by 5 (the default share at a budget of ε
// 10), and by a factor above 3.4 when ε is divided by 4. The figures are exact
// computations (projection.NominalNoiseSD), not samples; docs/EXPERIMENTS.md quotes the
// table this logs.
func TestDeltaShareCostsLittleNoise(t *testing.T) {
	for _, eps := range []float64{1, math.Exp(2)} {
		base, err := projection.NominalNoiseSD(442, 10, 10, eps, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		for _, delta := range []float64{5e-7, 2.5e-7, 2e-7, 1e-7} {
			sd, err := projection.NominalNoiseSD(442, 10, 10, eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("ε=%.4g: δ=%g σ=%.4f (×%.3f of δ=1e-06's %.4f)", eps, delta, sd, sd/base, base)
			if delta == 2e-7 && sd/base > 1.075 {
				t.Errorf("ε=%g: δ/5 multiplies σ by %.3f, want under 1.075", eps, sd/base)
			}
		}
		quarter, err := projection.NominalNoiseSD(442, 10, 10, eps/4, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ε=%.4g: ε/4 σ=%.4f (×%.3f)", eps, quarter, quarter/base)
		if quarter/base < 3.4 {
			t.Errorf("ε=%g: ε/4 multiplies σ by %.3f, want above 3.4", eps, quarter/base)
		}
	}
}
