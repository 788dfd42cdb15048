package modeler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/worth"
)

// A study is one projection release and the answers to its queries. Before anything is
// charged the modeler asks the curator to quote it (Curator.Quote): the curator resolves
// what the study leaves to it (r, and the default study's ε and δ), states the noise of
// the projection and of the answers and the whole cost per neighbour relation, and says
// whether the caller's budget can pay it. A study that fits is then released with its
// answers paid in the same ledger transaction (ProjectionRequest.WithAnswers), so it
// never holds a projection it cannot query; one that does not fit is refused with
// nothing charged (ErrStudyUnaffordable).

// ErrStudyUnaffordable is returned, before anything is charged, for a study whose
// projection and answers the caller's budget cannot both pay.
var ErrStudyUnaffordable = errors.New("the budget cannot pay the study's projection and its answers")

// UnaffordableError is ErrStudyUnaffordable with the quote's charge that does not fit
// (zero when the whole-patient cap refuses and every relation's charge fits).
type UnaffordableError struct {
	Charge RelationCharge
	text   string
}

func (e *UnaffordableError) Error() string {
	return "modeler: " + ErrStudyUnaffordable.Error() + ": " + e.text
}
func (e *UnaffordableError) Is(target error) bool { return target == ErrStudyUnaffordable }

// QuoteRequest asks the curator what a study would cost: the projection of dimension R
// (0: the curator chooses) at (Epsilon, Delta) (0: the curator's default study's), and
// with WithAnswers the caller's answers paid with it.
type QuoteRequest struct {
	R              int
	Epsilon, Delta float64
	Label          string
	WithAnswers    bool
}

// Quote is the curator's statement of a study's cost, before anything is charged.
type Quote struct {
	// R, Epsilon, Delta: the projection the request resolved to; RChosen,
	// DefaultEpsilon and DefaultDelta say what the curator filled in.
	R              int     `json:"r"`
	RChosen        bool    `json:"r_chosen"`
	Epsilon        float64 `json:"epsilon"`
	Delta          float64 `json:"delta"`
	DefaultEpsilon bool    `json:"default_epsilon"`
	DefaultDelta   bool    `json:"default_delta"`
	Label          string  `json:"label,omitempty"`
	// Mechanism and Relation of the projection; NoiseSD the σ of its noise per entry
	// (0 for the lifted mechanism).
	Mechanism string  `json:"mechanism"`
	Relation  string  `json:"relation"`
	NoiseSD   float64 `json:"noise_sd"`
	// WholePatientEpsilon is the release's ε for the replacement of one whole patient
	// (WholePatientUnits protected units, the clip diameter), 0 when there is no such
	// guarantee; WholePatient says it in words.
	WholePatientEpsilon float64 `json:"whole_patient_epsilon"`
	WholePatientUnits   float64 `json:"whole_patient_units"`
	WholePatient        string  `json:"whole_patient"`
	// RChoice, when RChosen, is how the curator chose R: its rule and the rule's figures
	// (nil from curators that predate it).
	RChoice *AutoRChoice `json:"r_choice,omitempty"`
	// ProjectionPaid: the caller holds this release already (a replay, no cost).
	ProjectionPaid bool         `json:"projection_paid"`
	Answers        AnswersQuote `json:"answers"`
	// Charges is the new charge per neighbour relation, with what the caller can still
	// spend under it; Fits whether all fit, and Refusal, when not, the curator's words.
	Charges      []RelationCharge `json:"charges"`
	Fits         bool             `json:"fits"`
	Refusal      string           `json:"refusal,omitempty"`
	DefaultStudy DefaultStudy     `json:"default_study"`
}

// AnswersQuote is the answers' part of a Quote.
type AnswersQuote struct {
	// Included: paid with the projection. Mechanism, Relation, the (ε, δ) of the one
	// charge for all of the caller's answers, the target's public range [Lower, Upper]
	// and the standard deviation of each answer's noise; Paid: charged already.
	Included  bool    `json:"included"`
	Mechanism string  `json:"mechanism"`
	Relation  string  `json:"relation"`
	Epsilon   float64 `json:"epsilon"`
	Delta     float64 `json:"delta"`
	Lower     float64 `json:"lower"`
	Upper     float64 `json:"upper"`
	NoiseSD   float64 `json:"noise_sd"`
	Paid      bool    `json:"paid"`
	// Noise is the family of the answers' noise, as the curator stated it.
	Noise noise.Family `json:"noise,omitempty"`
}

// Exact reports whether the answers carry no noise.
func (a AnswersQuote) Exact() bool { return a.Noise == noise.None }

// AutoRChoice is the projection dimension the curator chose for a study that left r
// to it, and the public figures its rule chose it from (docs/MATHS.md §2.6): the σ
// per entry the Gaussian mechanism adds at R (0 for the lifted mechanism), the noise's
// share 2·R·σ²/D² of a typical squared distance D², and the Johnson–Lindenstrauss
// distortion sqrt(8 ln n / R).
type AutoRChoice struct {
	R                      int     `json:"r"`
	Rule                   string  `json:"rule"`
	NoiseSD                float64 `json:"noise_sd"`
	NoiseShare             float64 `json:"noise_share"`
	Distortion             float64 `json:"distortion"`
	TypicalSquaredDistance float64 `json:"typical_squared_distance"`
}

// RelationCharge is a study's new charge under one neighbour relation and what the
// caller can still spend under it.
type RelationCharge struct {
	Relation         string  `json:"relation"`
	Epsilon          float64 `json:"epsilon"`
	Delta            float64 `json:"delta"`
	EpsilonAvailable float64 `json:"epsilon_available"`
	DeltaAvailable   float64 `json:"delta_available"`
	Fits             bool    `json:"fits"`
	// Scope, when the charge does not fit, is the budget that refuses it: "identity"
	// or "dataset" (refusal.KeyScope's values; "" from curators that predate it).
	Scope string `json:"scope,omitempty"`
}

// DefaultStudy is the curator's default study (what a caller naming no ε, δ is
// quoted) and how many such studies its budgets hold.
type DefaultStudy struct {
	ProjectionEpsilon float64 `json:"projection_epsilon"`
	ProjectionDelta   float64 `json:"projection_delta"`
	AnswersEpsilon    float64 `json:"answers_epsilon"`
	AnswersDelta      float64 `json:"answers_delta"`
	PerIdentity       int     `json:"per_identity"`
	Dataset           int     `json:"dataset"`
	DatasetLeft       int     `json:"dataset_left"`
}

// Worth is what the study's recommendation is likely to be worth, from its answers'
// noise against the target's range (worth.Study).
func (q *Quote) Worth() worth.Forecast {
	a := q.Answers
	if a.Exact() {
		return worth.Study(0, a.Lower, a.Upper, 0)
	}
	return worth.Study(a.NoiseSD, a.Lower, a.Upper, a.Epsilon)
}

// Total is what the study would newly charge under the relation every charge counts
// towards (the first of Charges, the projection's; zero when nothing is new).
func (q *Quote) Total() RelationCharge {
	if len(q.Charges) == 0 {
		return RelationCharge{Relation: q.Relation, Fits: true}
	}
	return q.Charges[0]
}

// shortfall says in words why q does not fit.
func (q *Quote) shortfall() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the projection (r=%d, ε=%g, δ=%g)", q.R, q.Epsilon, q.Delta)
	if q.ProjectionPaid {
		b.WriteString(", already paid,")
	}
	if a := q.Answers; a.Included {
		fmt.Fprintf(&b, " and the answers (%s, ε=%g, δ=%g", a.Mechanism, a.Epsilon, a.Delta)
		if a.Paid {
			b.WriteString(", already paid")
		}
		b.WriteString(")")
	}
	if c := q.unfit(); c.Relation != "" {
		who := "this identity"
		if c.Scope == "dataset" {
			who = "the dataset's cap, shared by every identity,"
		}
		fmt.Fprintf(&b, " would charge ε=%.4g, δ=%.4g under the %s relation, where %s leaves ε=%.4g, δ=%.4g",
			c.Epsilon, c.Delta, c.Relation, who, c.EpsilonAvailable, c.DeltaAvailable)
	}
	b.WriteString("; nothing was charged")
	if q.Refusal != "" {
		b.WriteString(" (the curator: " + q.Refusal + ")")
	}
	return b.String()
}

// unfit is the first of q's charges that does not fit (zero if none).
func (q *Quote) unfit() RelationCharge {
	for _, c := range q.Charges {
		if !c.Fits {
			return c
		}
	}
	return RelationCharge{}
}

// plan asks the curator to quote the study cfg asks for, with its answers, calls
// Config.Quoted with the quote, refuses (ErrStudyUnaffordable) a study the budget cannot
// pay, and fills in cfg what it left to the curator: R, Epsilon and Delta. Nothing is
// charged.
func plan(ctx context.Context, cur Curator, cfg *Config, info *DatasetInfo) (*Quote, error) {
	if d := info.Dimension; d > 0 && cfg.R > d && !cfg.WideProjection {
		return nil, fmt.Errorf("modeler: %w: r = %d exceeds the %d features of dataset %s; a projection to more dimensions than features keeps no more information than r = %d and adds noise in every extra coordinate, so ask for r ≤ %d",
			ErrWideProjection, cfg.R, d, info.Name, d, d)
	}
	q, err := cur.Quote(ctx, QuoteRequest{R: cfg.R, Epsilon: cfg.Epsilon, Delta: cfg.Delta, Label: cfg.Label, WithAnswers: true})
	if err != nil {
		return nil, fmt.Errorf("modeler: the curator's quote of the study: %w", err)
	}
	if q.R < 1 || !(q.Epsilon > 0) || !(q.Delta > 0 && q.Delta < 1) {
		return nil, fmt.Errorf("modeler: the curator quoted an unusable projection r=%d, ε=%g, δ=%g", q.R, q.Epsilon, q.Delta)
	}
	if cfg.Quoted != nil {
		cfg.Quoted(q)
	}
	if !q.Fits {
		return q, &UnaffordableError{Charge: q.unfit(), text: q.shortfall()}
	}
	cfg.R, cfg.Epsilon, cfg.Delta = q.R, q.Epsilon, q.Delta
	return q, nil
}

// rAuto is how r was chosen when the curator chose it: the rule and its figures as the
// curator states them in the quote (Quote.RChoice), or, from a curator that states
// only the dimension, that it chose it and the projection's σ.
func rAuto(q *Quote) *AutoRChoice {
	if !q.RChosen {
		return nil
	}
	if c := q.RChoice; c != nil && c.R == q.R {
		c := *c
		return &c
	}
	return &AutoRChoice{R: q.R, Rule: "chosen by the curator", NoiseSD: q.NoiseSD}
}

// datasetInfo asks the curator to describe its dataset. It is the first request of a
// run and fails fast (Curator.DatasetInfo): a wrong address or TLS files that the curator
// refuses are reported at once, rather than waited out as the queries wait out a curator
// restart.
func datasetInfo(ctx context.Context, cur Curator) (*DatasetInfo, error) {
	info, err := cur.DatasetInfo(ctx)
	if err != nil {
		if errors.Is(err, ErrUnreachable) && ctx.Err() == nil {
			return nil, fmt.Errorf("modeler: %w; check its address and the TLS settings", err)
		}
		return nil, fmt.Errorf("modeler: dataset info: %w", err)
	}
	return info, nil
}

// checkAnswerOptions refuses, before anything is charged, a clip range (Config.Clip,
// Config.ConfirmClip) outside the curator's public output range or asked of exact
// answers, and confirmation passes of exact answers.
func checkAnswerOptions(cfg *Config, op study.OutputPrivacy) error {
	for _, c := range []struct {
		flag string
		clip Clip
	}{{"clip range", cfg.Clip}, {"confirmation clip range", cfg.ConfirmClip}} {
		if c.clip.IsZero() {
			continue
		}
		if op.Exact() {
			return fmt.Errorf("modeler: a %s [%g, %g] applies only to private answers; the curator releases exact answers", c.flag, c.clip.Lower, c.clip.Upper)
		}
		if c.clip.Lower < op.Lower || c.clip.Upper > op.Upper {
			return fmt.Errorf("modeler: %s [%g, %g] is not inside the curator's public output range [%g, %g]", c.flag, c.clip.Lower, c.clip.Upper, op.Lower, op.Upper)
		}
	}
	if cfg.ConfirmRows > 0 && op.Exact() {
		return errors.New("modeler: confirmation passes apply only to private answers; the curator releases exact answers, which a second answer would only repeat")
	}
	return nil
}

// checkConfirmAffordable refuses, before anything is charged, confirmation passes that
// the caller could not pay after the study's own charge (the quote q): each pass costs
// the curator's (ε_out, δ_out) again, under every relation the quote charges.
func checkConfirmAffordable(cfg *Config, op study.OutputPrivacy, q *Quote) error {
	if cfg.ConfirmRows <= 0 || q == nil {
		return nil
	}
	p := float64(max(cfg.ConfirmPasses, 1))
	for _, c := range q.Charges {
		eps, delta := c.Epsilon+p*op.EpsilonPerIndex, c.Delta+p*op.DeltaPerIndex
		if eps > c.EpsilonAvailable*(1+1e-12) || delta > c.DeltaAvailable*(1+1e-12) {
			return fmt.Errorf("modeler: the study and its %g confirmation pass(es) would cost (ε=%g, δ=%g) under the %s relation, but (ε=%g, δ=%g) remain; nothing was charged",
				p, eps, delta, c.Relation, c.EpsilonAvailable, c.DeltaAvailable)
		}
	}
	return nil
}

// QuoteStudy checks cfg against the dataset and has the study quoted, as Run does before
// it pays (Config.Quoted is called with the quote): nothing is charged. A study the
// budget cannot pay returns its quote with ErrStudyUnaffordable.
func QuoteStudy(ctx context.Context, cur Curator, cfg Config) (*Quote, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	_, q, err := quoteStudy(ctx, cur, &cfg, nil)
	return q, err
}

// quoteStudy reads the dataset's description, checks the batch size against the
// curator's limit and the iterations and initial row against its rows, and has the
// study quoted (plan) unless q is its quote already.
func quoteStudy(ctx context.Context, cur Curator, cfg *Config, q *Quote) (*DatasetInfo, *Quote, error) {
	info, err := datasetInfo(ctx, cur)
	if err != nil {
		return nil, nil, err
	}
	if err := checkBatch(cfg.Batch, info.MaxQueryIndices); err != nil {
		return nil, nil, err
	}
	// What can be checked against the dataset's size is checked before the projection
	// is charged.
	n := min(info.Rows, math.MaxInt32)
	if err := checkRows(cfg.Iterations, n, cfg.AllowRepeats); err != nil {
		return nil, nil, err
	}
	if cfg.InitialIndex >= n {
		return nil, nil, fmt.Errorf("modeler: initial index %d is out of range [0, %d) of dataset %s", cfg.InitialIndex, n, info.Name)
	}
	if err := checkAnswerOptions(cfg, info.OutputPrivacy); err != nil {
		return nil, nil, err
	}
	if q == nil {
		if q, err = plan(ctx, cur, cfg, info); err != nil {
			return nil, q, err
		}
	}
	if err := checkConfirmAffordable(cfg, info.OutputPrivacy, q); err != nil {
		return nil, q, err
	}
	return info, q, nil
}

// fetchRelease reads the dataset's description, checks the batch size against the
// curator's limit and the iterations and initial row against its rows, has the study
// quoted (plan, which fills in cfg what it left to the curator and refuses a study the
// budget cannot pay) unless q is its quote already, and only then receives the
// projection, with the answers paid in the same charge.
func fetchRelease(ctx context.Context, cur Curator, cfg *Config, q *Quote) (*DatasetInfo, *Projection, *Quote, error) {
	info, q, err := quoteStudy(ctx, cur, cfg, q)
	if err != nil {
		return nil, nil, nil, err
	}
	proj, err := cur.ReleaseProjection(ctx, ProjectionRequest{R: cfg.R, Epsilon: cfg.Epsilon, Delta: cfg.Delta, Label: cfg.Label, WithAnswers: true})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("modeler: %w", err)
	}
	if proj.Rows < 1 || proj.Cols < 1 || len(proj.Z) != proj.Rows*proj.Cols {
		return nil, nil, nil, fmt.Errorf("modeler: projection %s is an unusable %d × %d matrix of %d values", proj.ReleaseID, proj.Rows, proj.Cols, len(proj.Z))
	}
	return info, proj, q, nil
}
