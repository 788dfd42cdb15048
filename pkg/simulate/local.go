package simulate

import (
	"context"
	"fmt"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// Local is a modeler.Curator over an in-process *curator.Curator, as one identity: the
// simulation's counterpart of pkg/curatorclient, without a network and so without
// waiting or retries. A modeler.Run over Local runs the same study session as the
// modeler binary over gRPC (GP-UCB, GP-BUCB batches, refits, the recommendation).
type Local struct {
	Curator  *curator.Curator
	Identity string
	// Candidates, if set, replace the projection: ReleaseProjection returns them (n ×
	// Dim, row-major) without asking the curator, for non-private GP-UCB over the
	// inputs X themselves. Nothing is charged.
	Candidates []float64
	Dim        int
	// Offset is subtracted from every answer (the noise rule's offset, when the GP
	// does not standardise the answers: GPSettings.NoiseRule).
	Offset float64
}

var _ modeler.Curator = (*Local)(nil)

// DatasetInfo implements modeler.Curator.
func (l *Local) DatasetInfo(ctx context.Context) (*modeler.DatasetInfo, error) {
	info, err := l.Curator.Info(ctx, l.Identity)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	o := info.Output
	return &modeler.DatasetInfo{
		Name: info.Name, DatasetID: info.DatasetID, Rows: info.Rows, Dimension: info.Dim, MaxQueryIndices: info.MaxQueryIndices,
		ProjectionMechanism: info.ProjectionMechanism, ProjectionRelation: string(info.ProjectionRelation),
		ProtectedUnit: info.ProtectedUnit, Guarantee: info.Guarantee,
		OutputPrivacy: study.OutputPrivacy{Mechanism: o.Mechanism, EpsilonPerIndex: o.Epsilon, DeltaPerIndex: o.Delta,
			Lower: o.Lower, Upper: o.Upper, Relation: string(info.OutputRelation), Guarantee: info.OutputGuarantee,
			Noise: info.OutputNoise, NoiseSD: info.OutputNoiseSD},
		Budget: budgetOf(info.Budget),
	}, nil
}

// ReleaseProjection implements modeler.Curator.
func (l *Local) ReleaseProjection(ctx context.Context, req modeler.ProjectionRequest) (*modeler.Projection, error) {
	if l.Candidates != nil {
		n := len(l.Candidates) / l.Dim
		return &modeler.Projection{ReleaseID: "inputs", Rows: n, Cols: l.Dim, Guarantee: "none: the inputs themselves", Z: l.Candidates}, nil
	}
	pr, err := l.Curator.ReleaseProjection(ctx, l.Identity, curator.ProjectionRequest{R: req.R, Epsilon: req.Epsilon, Delta: req.Delta, Label: req.Label,
		WithAnswers: req.WithAnswers})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	z, err := readRelease(ctx, pr)
	if err != nil {
		return nil, err
	}
	w := pr.WholePatient
	return &modeler.Projection{ReleaseID: pr.ID, Rows: pr.Rows, Cols: pr.Cols, Replayed: pr.Replayed,
		Guarantee: pr.Guarantee, NoiseSD: pr.NoiseSD, Budget: budgetOf(pr.Budget), Z: z,
		WholePatient: &study.WholePatient{Bounded: !w.Unbounded, Epsilon: w.Epsilon, Delta: w.Delta}}, nil
}

// Quote implements modeler.Curator. With Candidates nothing is released or charged: the
// quote is the inputs themselves, at no cost.
func (l *Local) Quote(ctx context.Context, req modeler.QuoteRequest) (*modeler.Quote, error) {
	if l.Candidates != nil {
		return &modeler.Quote{R: l.Dim, Epsilon: req.Epsilon, Delta: req.Delta, Label: req.Label, Fits: true, Mechanism: answer.MechanismExact}, nil
	}
	q, err := l.Curator.Quote(ctx, l.Identity, curator.QuoteRequest{R: req.R, Epsilon: req.Epsilon, Delta: req.Delta, Label: req.Label,
		WithAnswers: req.WithAnswers})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s, err := l.Curator.StudyCapacity(ctx)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	a := q.Answers
	out := &modeler.Quote{R: q.R, RChosen: q.RChosen, Epsilon: q.Epsilon, Delta: q.Delta, DefaultEpsilon: q.DefaultEpsilon, DefaultDelta: q.DefaultDelta,
		Label: q.Label, Mechanism: q.Mechanism, Relation: string(q.Relation), NoiseSD: q.NoiseSD,
		WholePatientEpsilon: q.WholePatientEpsilon, WholePatientUnits: q.WholePatientUnits, WholePatient: q.WholePatient, ProjectionPaid: q.ProjectionPaid,
		Answers: modeler.AnswersQuote{Included: a.Included, Mechanism: a.Mechanism, Relation: string(a.Relation), Epsilon: a.Epsilon, Delta: a.Delta,
			Lower: a.Lower, Upper: a.Upper, NoiseSD: a.NoiseSD, Paid: a.Paid, Noise: a.Noise},
		Fits: q.Fits, Refusal: q.Refusal,
		DefaultStudy: modeler.DefaultStudy{ProjectionEpsilon: s.Projection.Epsilon, ProjectionDelta: s.Projection.Delta,
			AnswersEpsilon: s.Answers.Epsilon, AnswersDelta: s.Answers.Delta, PerIdentity: s.PerIdentity, Dataset: s.Dataset, DatasetLeft: s.DatasetLeft}}
	if c := q.DimensionChoice; c != nil {
		out.RChoice = &modeler.AutoRChoice{R: c.R, Rule: c.Rule, NoiseSD: c.NoiseSD, NoiseShare: c.NoiseShare,
			Distortion: c.Distortion, TypicalSquaredDistance: c.TypicalSquaredDistance}
	}
	for _, c := range q.Costs {
		out.Charges = append(out.Charges, modeler.RelationCharge{Relation: string(c.Relation), Epsilon: c.Charge.Epsilon, Delta: c.Charge.Delta,
			EpsilonAvailable: c.Available.Epsilon, DeltaAvailable: c.Available.Delta, Fits: c.Fits, Scope: c.Scope})
	}
	return out, nil
}

// Query implements modeler.Curator.
func (l *Local) Query(ctx context.Context, rows []int) ([]modeler.Answer, study.Budget, error) {
	return l.QueryWith(ctx, rows, modeler.QueryOptions{})
}

// QueryWith implements modeler.OptionQuerier.
func (l *Local) QueryWith(ctx context.Context, rows []int, opt modeler.QueryOptions) ([]modeler.Answer, study.Budget, error) {
	obs, bal, err := l.Curator.QueryWith(ctx, l.Identity, rows, curator.QueryOptions{Clip: curator.Clip{Lower: opt.Clip.Lower, Upper: opt.Clip.Upper}, Pass: opt.Pass})
	if err != nil {
		return nil, study.Budget{}, fmt.Errorf("simulate: %w", err)
	}
	out := make([]modeler.Answer, len(obs))
	for k, o := range obs {
		out[k] = modeler.Answer{Index: o.Index, Value: o.Value - l.Offset, Replayed: o.Replayed, Clip: modeler.Clip{Lower: o.Clip.Lower, Upper: o.Clip.Upper}}
	}
	return out, budgetOf(bal), nil
}

// budgetOf is the modeler's form of a ledger balance, as pkg/rpc states it: the
// identity's limits and spending, and what remains of the tighter of its own and the
// dataset's budget.
func budgetOf(b ledger.Balance) study.Budget {
	return study.Budget{Identity: b.Account.Identity,
		EpsilonLimit: b.Limits.PerIdentity.Epsilon, DeltaLimit: b.Limits.PerIdentity.Delta,
		EpsilonSpent: b.Spent.Epsilon, DeltaSpent: b.Spent.Delta,
		EpsilonRemaining: b.Available().Epsilon, DeltaRemaining: b.Available().Delta}
}
