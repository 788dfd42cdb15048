package modeler

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/study"
)

// quotingCurator is fixedCurator with a quote that fits or not, recording the projection
// requests it receives.
type quotingCurator struct {
	fixedCurator
	fits     bool
	quotes   *[]QuoteRequest
	releases *[]ProjectionRequest
}

func (c quotingCurator) Quote(_ context.Context, req QuoteRequest) (*Quote, error) {
	*c.quotes = append(*c.quotes, req)
	q := fakeQuote(req, c.dim)
	q.RChosen = req.R == 0
	q.Answers = AnswersQuote{Included: req.WithAnswers, Mechanism: "laplace", Epsilon: 1}
	q.Fits = c.fits
	q.Charges = []RelationCharge{{Relation: "feature-unit", Epsilon: q.Epsilon + 1, Delta: q.Delta, EpsilonAvailable: 1.5, Fits: c.fits}}
	if !c.fits {
		q.Refusal = "ledger: budget exceeded"
	}
	return q, nil
}

func (c quotingCurator) ReleaseProjection(ctx context.Context, req ProjectionRequest) (*Projection, error) {
	*c.releases = append(*c.releases, req)
	return c.fixedCurator.ReleaseProjection(ctx, req)
}

// TestStudyQuotedFirst: a study is quoted with its answers before anything is asked of
// the budget; what Config leaves at 0 is taken from the quote, stored with a study and
// taken back from the store on resume; the projection is asked with the answers paid
// with it; a study whose quote does not fit is refused, asks for no release and leaves
// no study behind; Quoted sees the quote either way.
func TestStudyQuotedFirst(t *testing.T) {
	const n, dim = 60, 3
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = float64(k%7) - 3
	}
	base := fixedCurator{z, n, dim, func(i int) float64 { return float64(i % 11) }, 0, 20}
	var quotes []QuoteRequest
	var releases []ProjectionRequest
	cur := quotingCurator{base, true, &quotes, &releases}
	store, err := study.Open(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var seen []*Quote
	cfg := Config{Iterations: 5, InitialIndex: 0, Quoted: func(q *Quote) { seen = append(seen, q) }}
	res, err := RunStudy(context.Background(), cur, store, "s", study.Connection{Curator: "x"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(quotes) != 1 || quotes[0] != (QuoteRequest{WithAnswers: true}) || len(seen) != 1 {
		t.Errorf("quotes %+v (Quoted %d times), want one with the answers and nothing named", quotes, len(seen))
	}
	if len(releases) != 1 || releases[0] != (ProjectionRequest{R: dim, Epsilon: 1, Delta: 1e-5, WithAnswers: true}) {
		t.Errorf("releases %+v, want the quoted one with its answers", releases)
	}
	if res.Quote == nil || res.RAuto == nil || res.RAuto.R != dim {
		t.Errorf("result quote %+v, r_auto %+v; want the quote and how r was chosen", res.Quote, res.RAuto)
	}
	st, err := store.Get(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Settings; s.R != dim || s.Epsilon != 1 || s.Delta != 1e-5 {
		t.Errorf("stored r=%d, ε=%g, δ=%g; want the quoted %d, 1, 1e-05", s.R, s.Epsilon, s.Delta, dim)
	}
	// Resumed with nothing named: the stored values, no new quote or release.
	more := cfg
	more.Iterations = 8
	if res, err := RunStudy(context.Background(), cur, store, "s", study.Connection{Curator: "x"}, more); err != nil || res.Iterations != 8 {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if len(quotes) != 1 || len(releases) != 1 {
		t.Errorf("the resume quoted %d and released %d times more", len(quotes)-1, len(releases)-1)
	}

	// A study the budget cannot pay with its answers.
	poor := quotingCurator{base, false, &quotes, &releases}
	seen = nil
	_, err = RunStudy(context.Background(), poor, store, "poor", study.Connection{Curator: "x"}, cfg)
	if !errors.Is(err, ErrStudyUnaffordable) || !strings.Contains(err.Error(), "nothing was charged") || len(seen) != 1 {
		t.Errorf("unaffordable study: %v (Quoted %d times), want ErrStudyUnaffordable after the quote", err, len(seen))
	}
	if len(releases) != 1 {
		t.Errorf("the unaffordable study asked for a release")
	}
	if _, err := store.Get(context.Background(), "poor"); !errors.Is(err, study.ErrNotFound) {
		t.Errorf("the unaffordable study was stored: %v", err)
	}
	if _, err := Run(context.Background(), poor, cfg); !errors.Is(err, ErrStudyUnaffordable) || len(releases) != 1 {
		t.Errorf("Run of an unaffordable study: %v, %d releases", err, len(releases))
	}
	// r above d is refused before the quote, unless allowed.
	wide := cfg
	wide.R = dim + 1
	nq := len(quotes)
	if _, err := Run(context.Background(), cur, wide); !errors.Is(err, ErrWideProjection) || len(quotes) != nq {
		t.Errorf("r above d: %v, %d quotes", err, len(quotes)-nq)
	}
}
