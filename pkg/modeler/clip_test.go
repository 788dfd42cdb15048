package modeler

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
)

// optionCurator is fixedCurator taking QueryOptions: it records every query's options,
// clips each answer to the range asked (the public one by default) and states the range
// with the answer, and counts the charges (projection, answers, each confirmation pass).
type optionCurator struct {
	fixedCurator
	opts     *[]QueryOptions
	rows     *[][]int
	released *bool
}

func (c optionCurator) ReleaseProjection(ctx context.Context, req ProjectionRequest) (*Projection, error) {
	*c.released = true
	return c.fixedCurator.ReleaseProjection(ctx, req)
}

func (c optionCurator) QueryWith(_ context.Context, rows []int, opt QueryOptions) ([]Answer, study.Budget, error) {
	*c.opts = append(*c.opts, opt)
	*c.rows = append(*c.rows, slices.Clone(rows))
	clip := opt.Clip
	if clip.IsZero() {
		clip = Clip{c.lo, c.hi}
	}
	out := make([]Answer, len(rows))
	for k, i := range rows {
		out[k] = Answer{Index: i, Value: min(max(c.f(i), clip.Lower), clip.Upper), Clip: clip}
	}
	return out, study.Budget{}, nil
}

func newOptionCurator(n, dim int) (optionCurator, []float64) {
	rng := rand.New(rand.NewPCG(3, 4))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = rng.NormFloat64()
	}
	f := func(i int) float64 {
		x := z[i*dim : (i+1)*dim]
		return 100 + 40*x[0] - 10*x[1]*x[1]
	}
	return optionCurator{fixedCurator: fixedCurator{z, n, dim, f, 0, 400}, opts: new([]QueryOptions), rows: new([][]int), released: new(bool)}, z
}

// TestClipAskedAndModelled: a study with Config.Clip asks every query for that range,
// and its GP gives each answer the noise variance of its range: (width / public
// width)² times the prior's, which moves the posterior against the same answers
// modelled with the public range's noise. The result states the range and its noise.
func TestClipAskedAndModelled(t *testing.T) {
	cur, _ := newOptionCurator(200, 2)
	cfg := Config{R: 2, Iterations: 12, InitialIndex: 3, Clip: Clip{100, 300}}
	res, err := Run(context.Background(), cur, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(*cur.opts) != 12 {
		t.Fatalf("%d queries with options, want all 12", len(*cur.opts))
	}
	for _, o := range *cur.opts {
		if o.Clip != cfg.Clip || o.Pass != 0 {
			t.Errorf("query options %+v, want clip %v in pass 0", o, cfg.Clip)
		}
	}
	if res.AnswersClip == nil || *res.AnswersClip != [2]float64{100, 300} || math.Abs(res.AnswerClipNoiseSD-res.AnswerNoiseSD/2) > 1e-9 {
		t.Errorf("result: clip %v, noise sd %g (public %g); want [100, 300] and half the public range's sd", res.AnswersClip, res.AnswerClipNoiseSD, res.AnswerNoiseSD)
	}
	// The same answers with the public range's noise variance give another posterior.
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	s, err := newSession(cfg, cur, cur.z, cur.n, cur.dim, stated(t, study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 0, Upper: 400}), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.noiseFactor(Clip{100, 300}); math.Abs(got-0.25) > 1e-15 {
		t.Errorf("noise factor of [100, 300] in [0, 400] = %g, want 0.25", got)
	}
	if got := s.noiseFactor(Clip{}); math.Abs(got-0.25) > 1e-15 {
		t.Errorf("noise factor of a stored answer (no range: the study's) = %g, want 0.25", got)
	}
	pub := cfg
	pub.Clip = Clip{}
	s2, err := newSession(pub, cur, cur.z, cur.n, cur.dim, stated(t, study.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 1, Lower: 0, Upper: 400}), 0)
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range res.Queried {
		if err := s.observe(k+1, k+1, i, res.Values[k], Clip{100, 300}); err != nil {
			t.Fatal(err)
		}
		if err := s2.observe(k+1, k+1, i, res.Values[k], Clip{0, 400}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := s.post.Variance(res.Queried[0]), s2.post.Variance(res.Queried[0]); !(a < b) {
		t.Errorf("posterior variance at a queried row: %g with the clip range's noise, %g with the public range's; want less", a, b)
	}
	// A batch's stand-in has the noise of the answer it stands in for: the clip range's
	// factor 0.25 (a fantasy of the prior's noise variance would shrink the variance
	// less).
	batch, err := s.fantasizeBatch(2)
	if err != nil {
		t.Fatal(err)
	}
	got := s.post.Variance(batch[0])
	s.post.DropFantasies()
	for _, c := range []struct {
		f    float64
		same bool
	}{{0.25, true}, {1, false}} {
		if err := s.post.FantasizeNoise(batch[0], c.f); err != nil {
			t.Fatal(err)
		}
		want := s.post.Variance(batch[0])
		s.post.DropFantasies()
		if (math.Abs(got-want) <= 1e-12*want) != c.same {
			t.Errorf("variance at the batch's pending row %d: %.12g; with a stand-in of noise factor %g: %.12g (want equal: %v)", batch[0], got, c.f, want, c.same)
		}
	}
}

// TestClipRefusedBeforeCharge: a clip range outside the curator's public range, or any
// clip range or confirmation pass against exact answers, is refused before the
// projection is released.
func TestClipRefusedBeforeCharge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		exact bool
	}{
		{"clip below the public range", Config{Clip: Clip{-5, 100}}, false},
		{"clip above the public range", Config{Clip: Clip{100, 401}}, false},
		{"confirmation clip outside", Config{ConfirmRows: 3, ConfirmClip: Clip{100, 500}}, false},
		{"clip of exact answers", Config{Clip: Clip{100, 200}}, true},
		{"confirmation of exact answers", Config{ConfirmRows: 3}, true},
	} {
		cur, _ := newOptionCurator(50, 2)
		if tc.exact {
			cur.lo, cur.hi = 0, 0
		}
		cfg := tc.cfg
		cfg.R, cfg.Iterations, cfg.InitialIndex = 2, 5, 0
		var ds DatasetInfoFunc = cur.DatasetInfo
		c := Curator(cur)
		if tc.exact {
			c = exactOptionCurator{cur, ds}
		}
		if _, err := Run(context.Background(), c, cfg); err == nil {
			t.Errorf("%s: Run succeeded", tc.name)
		}
		if *cur.released {
			t.Errorf("%s: the projection was released before the refusal", tc.name)
		}
	}
	for _, bad := range []Config{{Clip: Clip{3, 3}}, {Clip: Clip{math.NaN(), 1}}, {ConfirmRows: -1}, {ConfirmRows: 1, ConfirmPasses: 17}} {
		bad.R, bad.Iterations = 2, 5
		if err := bad.defaults(); err == nil {
			t.Errorf("Config %+v accepted", bad)
		}
	}
	if _, err := ParseClip("200,100"); err == nil {
		t.Error(`ParseClip("200,100") accepted`)
	}
	if c, err := ParseClip(" 1.5, 300 "); err != nil || c != (Clip{1.5, 300}) || c.String() != "1.5,300" {
		t.Errorf(`ParseClip(" 1.5, 300 ") = %v, %v`, c, err)
	}
	if c, err := ParseClip("public"); err != nil || !c.IsZero() {
		t.Errorf(`ParseClip("public") = %v, %v`, c, err)
	}
}

// DatasetInfoFunc is a curator's DatasetInfo.
type DatasetInfoFunc func(context.Context) (*DatasetInfo, error)

// exactOptionCurator is optionCurator declaring exact answers.
type exactOptionCurator struct {
	optionCurator
	info DatasetInfoFunc
}

func (c exactOptionCurator) DatasetInfo(ctx context.Context) (*DatasetInfo, error) {
	info, err := c.info(ctx)
	if err != nil {
		return nil, err
	}
	info.OutputPrivacy = study.OutputPrivacy{Mechanism: "none", Noise: noise.None}
	return info, nil
}

// TestConfirmationPasses: after its T answers the study asks confirmation passes 1..P of
// the k queried rows with the highest posterior mean (best first), clipped as asked,
// conditions its GP on them and lists them in the result; the recommendation is among
// the queried rows. A confirmation the caller cannot pay after the study's own charge
// is refused before anything is charged.
func TestConfirmationPasses(t *testing.T) {
	cur, _ := newOptionCurator(200, 2)
	cfg := Config{R: 2, Iterations: 15, InitialIndex: 3, ConfirmRows: 4, ConfirmPasses: 2, ConfirmClip: Clip{50, 250}}
	res, err := Run(context.Background(), cur, cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts, rows := *cur.opts, *cur.rows
	if len(opts) != 2 {
		t.Fatalf("%d queries with options, want the 2 confirmation passes (%+v)", len(opts), opts)
	}
	for p, o := range opts {
		if o.Pass != p+1 || o.Clip != cfg.ConfirmClip || len(rows[p]) != 4 {
			t.Errorf("confirmation query %d: %+v of rows %v; want pass %d clipped to %v, 4 rows", p, o, rows[p], p+1, cfg.ConfirmClip)
		}
		for _, i := range rows[p] {
			if !slices.Contains(res.Queried, i) {
				t.Errorf("pass %d confirms row %d, never queried", p+1, i)
			}
		}
	}
	if len(res.Confirmed) != 8 || res.Confirmed[0].Pass != 1 || res.Confirmed[7].Pass != 2 {
		t.Errorf("result's confirmations %+v, want 2 passes of 4", res.Confirmed)
	}
	if !slices.Contains(res.Queried, res.Recommended) {
		t.Errorf("recommended row %d was not queried", res.Recommended)
	}
	// Unaffordable: the quote leaves room for the study only.
	poor := cur
	poor.opts, poor.rows, poor.released = new([]QueryOptions), new([][]int), new(bool)
	_, err = Run(context.Background(), poorCurator{poor}, cfg)
	if err == nil || !strings.Contains(err.Error(), "confirmation pass") {
		t.Errorf("Run with a budget for the study only: %v, want a refusal naming the confirmation passes", err)
	}
	if *poor.released || len(*poor.opts) != 0 {
		t.Error("the unaffordable study was released or queried")
	}
}

// poorCurator quotes a study that exactly exhausts the caller's budget.
type poorCurator struct{ optionCurator }

func (c poorCurator) Quote(ctx context.Context, req QuoteRequest) (*Quote, error) {
	q, err := c.optionCurator.Quote(ctx, req)
	if err != nil {
		return nil, err
	}
	q.Charges = []RelationCharge{{Relation: "feature-unit", Epsilon: 3, EpsilonAvailable: 3, Delta: 1e-6, DeltaAvailable: 1e-6, Fits: true}}
	return q, nil
}

// outlierCurator answers f exactly except the k-th row queried, whose answer is raised by
// jump: one lucky Laplace draw on a mediocre row.
type outlierCurator struct {
	fixedCurator
	k, jump float64
	count   *int
	row     *int
}

func (c outlierCurator) Query(ctx context.Context, rows []int) ([]Answer, study.Budget, error) {
	out, b, err := c.fixedCurator.Query(ctx, rows)
	for j := range out {
		*c.count++
		if float64(*c.count) == c.k {
			out[j].Value += c.jump
			*c.row = out[j].Index
		}
	}
	return out, b, err
}

// TestRecommendLikelihood: with Laplace answers the study recommends under their Laplace
// likelihood by default, and one lucky draw of +4b (b = 400, the scale of Laplace answers
// at ε = 1 on [0, 400]) on a mediocre row then does not make it the recommendation, while
// under a Gaussian of the same variance (the rule before, --recommend-likelihood
// gaussian) it does. The result states both rows and the likelihood used; the rows
// queried are the same under both.
func TestRecommendLikelihood(t *testing.T) {
	cur, _ := newOptionCurator(200, 2)
	run := func(lik string) (*Result, int) {
		count, row := 0, -1
		oc := outlierCurator{fixedCurator: cur.fixedCurator, k: 20, jump: 1600, count: &count, row: &row}
		res, err := Run(context.Background(), oc, Config{R: 2, Iterations: 30, InitialIndex: 3, RecommendLikelihood: lik})
		if err != nil {
			t.Fatal(err)
		}
		return res, row
	}
	lap, row := run("")
	gau, row2 := run(LikelihoodGaussian)
	if !slices.Equal(lap.Queried, gau.Queried) || row != row2 {
		t.Fatalf("the likelihood of the recommendation changed the rows queried")
	}
	if gau.Recommended != row {
		t.Fatalf("under the Gaussian likelihood the lucky row %d (f = %.0f) is not recommended (%d, f = %.0f): the test shows nothing", row, cur.f(row), gau.Recommended, cur.f(gau.Recommended))
	}
	if lap.Recommended == row || !(cur.f(lap.Recommended) > cur.f(row)) {
		t.Errorf("under the Laplace likelihood row %d (f = %.0f) is recommended, want a better row than the lucky %d (f = %.0f)", lap.Recommended, cur.f(lap.Recommended), row, cur.f(row))
	}
	if lap.RecommendLikelihood != LikelihoodLaplace || lap.GaussianRecommended == nil || *lap.GaussianRecommended != row || gau.RecommendLikelihood != LikelihoodGaussian || gau.GaussianRecommended != nil {
		t.Errorf("likelihood %q (Gaussian's row %v), %q (%v); want laplace stating row %d, and gaussian", lap.RecommendLikelihood, lap.GaussianRecommended, gau.RecommendLikelihood, gau.GaussianRecommended, row)
	}
	if err := (&Config{R: 2, Iterations: 3, RecommendLikelihood: "student"}).defaults(); err == nil {
		t.Error("RecommendLikelihood student accepted")
	}
}

// TestClipWithFitEveryRefits: a clipped study (every answer with its own noise factor)
// refits its hyperparameters every k answers as an unclipped one does (Config.FitEvery):
// gpucb.Posterior.Refit fits under the answers' own noise factors.
func TestClipWithFitEveryRefits(t *testing.T) {
	cur, _ := newOptionCurator(200, 2)
	res, err := Run(context.Background(), cur, Config{R: 2, Iterations: 12, InitialIndex: 3, Clip: Clip{100, 300}, FitEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Refits != 3 { // after answers 4, 8 and 12
		t.Errorf("a clipped study with fit-every 4 over 12 answers refit %d times, want 3", res.Refits)
	}
}
