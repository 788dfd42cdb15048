package curator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/worth"
)

// A study is what a modeler needs to run PO-GP-UCB: one projection release and the
// answers to its queries. The answers to one identity are paid once, with one charge
// (chargeAnswers), so a study costs the projection's (ε, δ) under the feature-unit
// relation plus the answers' (ε, δ) under the record relation, which counts towards the
// feature-unit totals too. Quote states that cost before anything is charged, and
// ReleaseProjection with WithAnswers charges both in one ledger transaction, so a study
// that could not pay its answers is refused before it holds anything.

// DefaultStudyEpsilon is the projection's ε of the default study when the operator
// names none (Config.StudyEpsilon): the release whose whole-patient figures every
// guarantee statement tabulates.
const DefaultStudyEpsilon = 1.0

// StudySize is the default study: what the curator quotes to a modeler that names no
// (ε, δ).
type StudySize struct {
	// Projection is the projection's (ε, δ); Answers the answers' one charge per
	// identity (zero for exact answers).
	Projection, Answers ledger.Cost
}

// Total is what one study costs under the feature-unit relation, whose totals hold the
// answers' record-level charge too: the budget every study draws on.
func (s StudySize) Total() ledger.Cost {
	return ledger.Cost{Epsilon: s.Projection.Epsilon + s.Answers.Epsilon, Delta: s.Projection.Delta + s.Answers.Delta}
}

// StudyCapacity says how many default studies the budgets hold.
type StudyCapacity struct {
	StudySize
	// PerIdentity is how many fit one identity's budget with nothing spent; Dataset how
	// many the dataset cap holds besides the curator's own charges (its private scaling
	// estimate); DatasetLeft how many fit what is left of the cap now.
	PerIdentity, Dataset, DatasetLeft int
	// Own is what the curator's own releases (the private scaling estimate) took from
	// the dataset cap.
	Own ledger.Cost
	// R is the dimension the curator chooses for the default study's projection
	// (projection.AutoDimension) and ProjectionNoiseSD the σ per entry it then adds (0
	// for the lifted mechanism).
	R                 int
	ProjectionNoiseSD float64
	// AnswersMechanism, AnswersNoiseSD and [Lower, Upper]: the noise of each answer
	// against the target's range (0 for exact answers), which is public unless
	// RangeEstimated (estimated privately, OutputPrivacy.RangeEstimate).
	AnswersMechanism string
	AnswersNoiseSD   float64
	Lower, Upper     float64
	RangeEstimated   bool
}

// DefaultStudy sizes the default study, once per curator. Its projection's ε is
// Config.StudyEpsilon (DefaultStudyEpsilon when zero). Its δ, unless Config.StudyDelta
// gives one, is a share of the δ budgets sized so that they hold as many default
// studies as the ε budgets do: with K = ⌊ε limit / study ε⌋ studies in one identity's
// budget and K' = ⌊(ε cap − own) / study ε⌋ in the dataset cap (own: the curator's own
// charges), δ = min(δ limit / K, (δ cap − own δ) / K') less the answers' δ, rounded down
// to three significant digits. The Gaussian mechanism's noise grows with
// sqrt(log(1/δ)) only, so dividing δ among the studies costs them little (at ε = 1 on
// the diabetes shape, σ grows by 6% for a quarter of the δ; TestDeltaShareCostsLittleNoise),
// while dividing ε would multiply the noise (3.7 times for a quarter): the ε of a
// study is the operator's to set, and the δ follows it, so that δ never runs out before
// ε. The dataset cap is not raised: it bounds what all modelers together learn.
func (c *Curator) DefaultStudy(ctx context.Context) (StudySize, error) {
	c.studyMu.Lock()
	defer c.studyMu.Unlock()
	if c.study != nil {
		return *c.study, nil
	}
	own, err := c.ownSpent(ctx)
	if err != nil {
		return StudySize{}, err
	}
	s := StudySize{Projection: ledger.Cost{Epsilon: c.cfg.StudyEpsilon, Delta: c.cfg.StudyDelta}, Answers: c.out.cost()}
	if s.Projection.Epsilon == 0 {
		s.Projection.Epsilon = DefaultStudyEpsilon
	}
	if s.Projection.Delta == 0 {
		lim := c.ledger.Limits()
		eps := s.Projection.Epsilon + s.Answers.Epsilon
		kID := max(1, math.Floor(lim.PerIdentity.Epsilon/eps))
		kDS := max(1, math.Floor((lim.Dataset.Epsilon-own.Epsilon)/eps))
		share := min(lim.PerIdentity.Delta/kID, (lim.Dataset.Delta-own.Delta)/kDS)
		d := share - s.Answers.Delta
		if d < share/2 { // the answers' δ takes most of the share
			d = share / 2
		}
		s.Projection.Delta = roundDown3(max(d, 0))
	}
	c.study = &s
	return s, nil
}

// ownSpent is what the curator's own releases took from the dataset cap under the
// feature-unit relation (which the record-level scaling estimate counts towards).
func (c *Curator) ownSpent(ctx context.Context) (ledger.Cost, error) {
	b, err := c.ledger.Balance(ctx, c.account(CuratorIdentity), ledger.RelationFeatureUnit)
	if err != nil {
		return ledger.Cost{}, fmt.Errorf("curator: %w", err)
	}
	return b.Spent, nil
}

// roundDown3 rounds x > 0 down to three significant digits (x itself if it has no
// more), so that a δ share prints plainly and K of them still fit: it truncates the
// shortest decimal of x, which drops at least a unit of the third digit whenever it
// drops anything, far more than that decimal can differ from x.
func roundDown3(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return x
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e")
	if len(mant) > 4 { // "d.dd"
		mant = mant[:4]
	}
	v, err := strconv.ParseFloat(mant+"e"+exp, 64)
	if err != nil || v > x {
		return x
	}
	return v
}

// StudyCapacity returns the default study and how many such studies the budgets hold
// (StudyCapacity), for the curator's start-up statement.
func (c *Curator) StudyCapacity(ctx context.Context) (StudyCapacity, error) {
	s, err := c.DefaultStudy(ctx)
	if err != nil {
		return StudyCapacity{}, err
	}
	b, err := c.ledger.Balance(ctx, c.account(CuratorIdentity), ledger.RelationFeatureUnit)
	if err != nil {
		return StudyCapacity{}, fmt.Errorf("curator: %w", err)
	}
	own, err := c.ownSpent(ctx)
	if err != nil {
		return StudyCapacity{}, err
	}
	lim, t := c.ledger.Limits(), s.Total()
	room := ledger.Cost{Epsilon: lim.Dataset.Epsilon - own.Epsilon, Delta: lim.Dataset.Delta - own.Delta}
	o := c.out.cfg
	out := StudyCapacity{StudySize: s, Own: own,
		PerIdentity: fitCount(lim.PerIdentity, t), Dataset: fitCount(room, t), DatasetLeft: fitCount(b.DatasetRemaining, t),
		AnswersMechanism: c.out.name(), AnswersNoiseSD: c.out.noiseSD(), Lower: o.Lower, Upper: o.Upper, RangeEstimated: o.RangeEstimate.Target}
	if s.Projection.Delta > 0 {
		a, err := projection.AutoDimensionFor(c.ds.N, c.ds.D, c.proj, s.Projection.Epsilon, s.Projection.Delta, autoSquaredDistance)
		if err != nil {
			return StudyCapacity{}, fmt.Errorf("curator: the default study: %w", err)
		}
		out.R, out.ProjectionNoiseSD = a.R, a.NoiseSD
	}
	return out, nil
}

// Statement is the capacity in words, for the operator's start-up log, in at most 300
// characters: the default study, the noise of its answers against the target's range
// (public, or estimated privately), and how many such studies the budgets hold. The
// log line's fields carry the rest.
func (s StudyCapacity) Statement() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Default study: a projection at ε=%s, δ=%s", figure.Text(s.Projection.Epsilon), figure.Text(s.Projection.Delta))
	if s.R > 0 {
		fmt.Fprintf(&b, " (r=%d)", s.R)
	}
	if s.Answers.IsZero() {
		b.WriteString(" and exact answers (no charge)")
	} else {
		rng := "public"
		if s.RangeEstimated {
			rng = "privately estimated"
		}
		fmt.Fprintf(&b, " and %s answers at ε=%s (noise sd %s on the target's %s range [%s, %s])", s.AnswersMechanism,
			figure.Text(s.Answers.Epsilon), figure.Text(s.AnswersNoiseSD), rng, figure.Text(s.Lower), figure.Text(s.Upper))
	}
	fmt.Fprintf(&b, "; one identity's budget holds %s, the dataset cap %s", Studies(s.PerIdentity), Studies(s.Dataset))
	if !s.Own.IsZero() {
		b.WriteString(" after the curator's own estimate")
	}
	fmt.Fprintf(&b, "; %d still fit.", s.DatasetLeft)
	return b.String()
}

// Worth is what the default study's recommendation is likely to be worth, from its
// answers' noise against the target's range (worth.Study).
func (s StudyCapacity) Worth() worth.Forecast {
	return worth.Study(s.AnswersNoiseSD, s.Lower, s.Upper, s.Answers.Epsilon)
}

// Studies is "1 default study" or "n default studies".
func Studies(n int) string {
	if n == 1 {
		return "1 default study"
	}
	return strconv.Itoa(n) + " default studies"
}

// fitCount is how many charges of cost fit in room, by the ledger's rule (a total may
// reach the limit times 1 + ledger.RelativeSlack); math.MaxInt for a zero cost.
func fitCount(room, cost ledger.Cost) int {
	n := math.Inf(1)
	for _, p := range [][2]float64{{room.Epsilon, cost.Epsilon}, {room.Delta, cost.Delta}} {
		if p[1] > 0 {
			n = min(n, math.Floor(max(p[0], 0)*(1+ledger.RelativeSlack)/p[1]))
		}
	}
	if n >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// ErrNoDeltaBudget marks a study quoted on a curator whose δ budget is 0: no projection
// (which needs δ > 0) can ever be released, whatever has been spent.
var ErrNoDeltaBudget = errors.New("the curator's δ budget is 0")

// QuoteRequest asks what a study would cost, before anything is charged.
type QuoteRequest struct {
	// R is the projection dimension; 0 lets the curator choose it
	// (projection.AutoDimension; the quote states the rule's figures, DimensionChoice).
	R int
	// Epsilon and Delta are the projection's; 0 takes the default study's (DefaultStudy),
	// δ at most what the identity can still spend.
	Epsilon, Delta float64
	Label          string
	// WithAnswers quotes the answers paid with the projection (ProjectionRequest).
	WithAnswers bool
}

// Quote is what a study would cost and receive, stated before anything is charged. It
// costs nothing and charges nothing.
type Quote struct {
	// R, Epsilon, Delta and Label are the projection request the quote resolved;
	// RChosen, DefaultEpsilon and DefaultDelta say which the curator filled in.
	R                            int
	Epsilon, Delta               float64
	Label                        string
	RChosen                      bool
	DefaultEpsilon, DefaultDelta bool
	Mechanism                    string
	Relation                     ledger.Relation
	NoiseSD                      float64
	WholePatientEpsilon          float64
	WholePatientUnits            float64
	WholePatient                 string
	ProjectionPaid               bool
	// DimensionChoice is how the curator chose R (nil unless RChosen).
	DimensionChoice *projection.AutoChoice
	Answers         AnswersQuote
	Costs           []RelationQuote
	// Patient is the study's whole-patient cost: what it newly charges, summed over
	// its parts (the projection's at the clip diameter, nominal for every dimension
	// and sensitivity; the answers' as they are), and how it fits the caps in force.
	Patient PatientQuote
	Fits    bool
	Refusal string
}

// PatientQuote is a study's whole-patient cost (ledger.PatientCost) and the caps it
// must fit: Limits (zero ε: no cap), what they leave (the smaller remainder of the
// identity's and the dataset's caps in force) and whether it fits.
type PatientQuote struct {
	Charge    ledger.PatientCost
	Limits    ledger.PatientLimits
	Available ledger.Cost
	Fits      bool
}

// AnswersQuote is the answers' part of a Quote.
type AnswersQuote struct {
	// Included: the answers are paid with the projection (QuoteRequest.WithAnswers and
	// private answers).
	Included bool
	// Mechanism, Relation, (Epsilon, Delta) of the one charge, the public range
	// [Lower, Upper] answers are clipped to and the standard deviation of each answer's
	// noise (0 for exact answers).
	Mechanism      string
	Relation       ledger.Relation
	Epsilon, Delta float64
	Lower, Upper   float64
	NoiseSD        float64
	// Noise is the family of that noise.
	Noise noise.Family
	// Paid: the identity has paid them already (a new charge costs nothing more).
	Paid bool
}

// RelationQuote is a study's cost under one neighbour relation: what it would newly
// charge (the sum of its parts counting towards the relation), what the identity can
// still spend (its own remainder capped by the dataset's) and whether the charge fits.
type RelationQuote struct {
	Relation  ledger.Relation
	Charge    ledger.Cost
	Available ledger.Cost
	Fits      bool
	// Scope, when the charge does not fit, is the budget that refuses it
	// (ledger.ScopeIdentity or ledger.ScopeDataset).
	Scope string
}

// autoSquaredDistance is the typical squared distance D² of the rule choosing r: the
// squared default clip radius (projection.AutoSquaredDistance).
const autoSquaredDistance = dataset.DefaultClipNorm * dataset.DefaultClipNorm

// Quote states what identity's study req would cost and receive — the projection's
// resolved dimension, (ε, δ), noise and whole-patient ε, the answers' mechanism, ε, δ,
// range and noise, what is paid already, the charge and what remains per relation, and
// whether it fits — without charging or releasing anything. A request the release
// would refuse as malformed (r above d, bad parameters) is refused the same way; a
// budget whose δ limit is 0 is refused with ErrNoDeltaBudget or a *ledger.BudgetError
// (ZeroDeltaLimit); one that is merely spent is a Quote with Fits false.
func (c *Curator) Quote(ctx context.Context, identity string, req QuoteRequest) (*Quote, error) {
	switch {
	case req.R < 0:
		return nil, fmt.Errorf("curator: %w: projection dimension r must be ≥ 1, or 0 to let the curator choose it, got %d", ErrInvalidArgument, req.R)
	case math.IsNaN(req.Epsilon) || math.IsInf(req.Epsilon, 0) || req.Epsilon < 0:
		return nil, fmt.Errorf("curator: %w: epsilon must be positive and finite, or 0 for the default study's, got %g", ErrInvalidArgument, req.Epsilon)
	case math.IsNaN(req.Delta) || req.Delta < 0 || req.Delta >= 1:
		return nil, fmt.Errorf("curator: %w: delta must be in (0, 1), or 0 for the default study's, got %g", ErrInvalidArgument, req.Delta)
	}
	size, err := c.DefaultStudy(ctx)
	if err != nil {
		return nil, err
	}
	q := &Quote{Epsilon: req.Epsilon, Delta: req.Delta, Label: req.Label, R: req.R,
		Mechanism: c.cfg.ProjectionMechanism, Relation: ProjectionRelation}
	if q.Epsilon == 0 {
		q.Epsilon, q.DefaultEpsilon = size.Projection.Epsilon, true
	}
	if q.Delta == 0 {
		q.Delta, q.DefaultDelta = size.Projection.Delta, true
		bal, err := c.Balance(ctx, identity, ProjectionRelation)
		if err != nil {
			return nil, err
		}
		// What the identity cannot spend it is not quoted; a spent δ is quoted as it is
		// (it does not fit) rather than as a release of no δ.
		if a := bal.Available().Delta; a > 0 && a < q.Delta {
			q.Delta = a
		}
		if q.Delta == 0 {
			return nil, fmt.Errorf("curator: %w, so no projection (which needs δ > 0) can be released to any identity; "+
				"this is not a spent budget: the curator's operator must configure a δ budget above 0", ErrNoDeltaBudget)
		}
	}
	if q.R == 0 {
		a, err := projection.AutoDimensionFor(c.ds.N, c.ds.D, c.proj, q.Epsilon, q.Delta, autoSquaredDistance)
		if err != nil {
			return nil, fmt.Errorf("curator: %w: %w", ErrInvalidArgument, err)
		}
		q.R, q.RChosen, q.DimensionChoice = a.R, true, &a
	}
	preq := ProjectionRequest{R: q.R, Epsilon: q.Epsilon, Delta: q.Delta, Label: q.Label, WithAnswers: req.WithAnswers}
	if err := c.validate(preq); err != nil {
		return nil, err
	}
	if q.NoiseSD, err = c.proj.NoiseSD(c.ds.N, c.ds.D, q.R, q.Epsilon, q.Delta); err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	w := c.wholePatient(q.Epsilon, q.Delta, 0, 0)
	q.WholePatientEpsilon, q.WholePatient = w.epsValue, w.sentence()
	if w.none == "" {
		q.WholePatientUnits = w.diam
	}
	if _, _, q.ProjectionPaid, err = c.recordedProjection(ctx, identity, preq); err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	o := c.out.cfg
	q.Answers = AnswersQuote{Mechanism: c.out.name(), Relation: AnswerRelation, Lower: o.Lower, Upper: o.Upper, NoiseSD: c.out.noiseSD(), Noise: c.out.noise()}
	if !c.out.exact() {
		q.Answers.Epsilon, q.Answers.Delta, q.Answers.Included = o.Epsilon, o.Delta, req.WithAnswers
		if q.Answers.Paid, err = c.answersPaid(ctx, identity); err != nil {
			return nil, err
		}
	}

	var parts []releasePart
	if !q.ProjectionPaid {
		parts = append(parts, releasePart{rel: ProjectionRelation, cost: ledger.Cost{Epsilon: q.Epsilon, Delta: q.Delta}, patient: w.patientCost()})
	}
	if q.Answers.Included && !q.Answers.Paid {
		cost := c.out.cost()
		parts = append(parts, releasePart{rel: AnswerRelation, cost: cost, patient: ledger.DefaultPatientCost(AnswerRelation, cost)})
	}
	q.Fits = true
	pb, perr := c.patientCheck(ctx, identity, parts)
	if pb.Account == (ledger.Account{}) && perr != nil {
		return nil, perr
	}
	q.Patient = PatientQuote{Charge: patientSum(parts), Limits: pb.Limits, Fits: perr == nil}
	switch per, ds := pb.Limits.PerIdentity.Epsilon > 0, pb.Limits.Dataset.Epsilon > 0; {
	case per && ds:
		q.Patient.Available = ledger.Cost{Epsilon: min(pb.Remaining.Epsilon, pb.DatasetRemaining.Epsilon), Delta: min(pb.Remaining.Delta, pb.DatasetRemaining.Delta)}
	case per:
		q.Patient.Available = pb.Remaining
	case ds:
		q.Patient.Available = pb.DatasetRemaining
	}
	if perr != nil {
		q.Fits, q.Refusal = false, perr.Error()
	}
	for _, s := range c.sums(parts) {
		bal, err := c.Balance(ctx, identity, s.rel)
		if err != nil {
			return nil, err
		}
		rq := RelationQuote{Relation: s.rel, Charge: s.cost, Available: bal.Available(), Fits: true}
		if rerr := refusal(bal, s.cost); rerr != nil {
			if be := (*ledger.BudgetError)(nil); errors.As(rerr, &be) && be.ZeroDeltaLimit() {
				return nil, fmt.Errorf("curator: %w", rerr)
			}
			rq.Fits = false
			if be := (*ledger.BudgetError)(nil); errors.As(rerr, &be) {
				rq.Scope = be.Scope
			}
			if q.Fits {
				q.Fits, q.Refusal = false, rerr.Error()
			}
		}
		q.Costs = append(q.Costs, rq)
	}
	return q, nil
}
