// Package jobpb converts jobs between package jobs' types and the curator protocol's
// messages (proto/privbo/curator/v1): the one mapping the curator's handlers and its Go
// client (package curatorclient) share, so that what one side writes the other reads
// back field for field. A job kind's mapping is one case of Spec and of SpecProto.
package jobpb

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/kusner"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// axisKinds maps the protocol's scales to hparam's axis kinds.
var axisKinds = map[curatorv1.HyperparameterRange_Scale]hparam.AxisKind{
	curatorv1.HyperparameterRange_SCALE_LIST:     hparam.AxisList,
	curatorv1.HyperparameterRange_SCALE_LOG_LIST: hparam.AxisLogList,
	curatorv1.HyperparameterRange_SCALE_LINEAR:   hparam.AxisLinear,
	curatorv1.HyperparameterRange_SCALE_LOG:      hparam.AxisLog,
}

// Axes reads a grid's axes as sent. Their values are checked when the job is planned
// (hparam.Axis.Param), with errors that name the axis and the field.
func Axes(in []*curatorv1.HyperparameterRange) ([]hparam.Axis, error) {
	out := make([]hparam.Axis, len(in))
	for k, r := range in {
		kind, ok := axisKinds[r.GetScale()]
		if !ok {
			return nil, fmt.Errorf("space[%d] (hyperparameter %q): scale must be SCALE_LIST, SCALE_LOG_LIST, SCALE_LINEAR or SCALE_LOG, got %s",
				k, r.GetName(), r.GetScale())
		}
		out[k] = hparam.Axis{Name: r.GetName(), Kind: kind, Values: r.GetValues(), Low: r.GetLow(), High: r.GetHigh(), Count: int(r.GetCount())}
	}
	return out, nil
}

// AxesProto writes a grid's axes in the protocol's form, which keeps a range as low,
// high and count. An axis of an unknown kind goes as SCALE_UNSPECIFIED, which the
// curator refuses naming the axis.
func AxesProto(in []hparam.Axis) []*curatorv1.HyperparameterRange {
	out := make([]*curatorv1.HyperparameterRange, len(in))
	for k, a := range in {
		r := &curatorv1.HyperparameterRange{Name: a.Name, Values: a.Values, Low: a.Low, High: a.High, Count: uint32(a.Count)}
		for scale, kind := range axisKinds {
			if kind == a.Kind {
				r.Scale = scale
			}
		}
		out[k] = r
	}
	return out
}

// Spec reads a job spec as sent.
func Spec(p *curatorv1.JobSpec) (jobs.Spec, error) {
	switch k := p.GetKind().(type) {
	case *curatorv1.JobSpec_Kusner:
		s := k.Kusner
		space, err := Axes(s.GetSpace())
		if err != nil {
			return jobs.Spec{}, err
		}
		return jobs.Spec{Kusner: &jobs.KusnerSpec{Algorithm: int(s.GetAlgorithm()), Space: space, Iterations: int(s.GetIterations()),
			Epsilon: s.GetEpsilon(), Delta: s.GetDelta(), K1: s.GetK1(), NoiseVariance: s.GetNoiseVariance(), GammaT: s.GetGammaT(),
			A: s.GetA(), Tau: s.GetTau(), Lengthscale: s.GetLengthscale(), Evaluator: s.GetEvaluator(),
			ForecastGap: s.GetForecastGap(), Force: s.GetForce()}}, nil
	case *curatorv1.JobSpec_Dphypo:
		s := k.Dphypo
		space, err := Axes(s.GetSpace())
		if err != nil {
			return jobs.Spec{}, err
		}
		d := s.GetDpsgd()
		return jobs.Spec{DPHyPO: &jobs.DPHyPOSpec{Space: space, Theta: s.GetTheta(), Gamma: s.GetGamma(), CMax: s.GetCMax(), CMin: s.GetCMin(),
			Tau: s.GetTau(), Beta: s.GetBeta(), Uniform: s.GetUniform(), Evaluator: s.GetEvaluator(), Delta: s.GetDelta(), TargetEpsilon: s.GetTargetEpsilon(),
			DPSGD: jobs.DPSGD{LearningRate: d.GetLearningRate(), ClipNorm: d.GetClipNorm(), NoiseMultiplier: d.GetNoiseMultiplier(),
				Epochs: int(d.GetEpochs()), BatchSize: int(d.GetBatchSize()), L2: d.GetL2(), ScoreNoiseMultiplier: d.GetScoreNoiseMultiplier()}}}, nil
	}
	return jobs.Spec{}, errors.New("job spec: set exactly one of kusner or dphypo")
}

// SpecProto writes a job spec in the protocol's form (nil for a spec of no kind).
func SpecProto(s jobs.Spec) *curatorv1.JobSpec {
	switch {
	case s.Kusner != nil:
		k := s.Kusner
		return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{
			Algorithm: curatorv1.KusnerSpec_Algorithm(k.Algorithm), Space: AxesProto(k.Space), Iterations: uint32(k.Iterations),
			Epsilon: k.Epsilon, Delta: k.Delta, K1: k.K1, NoiseVariance: k.NoiseVariance, GammaT: k.GammaT, A: k.A, Tau: k.Tau,
			Lengthscale: k.Lengthscale, Evaluator: k.Evaluator, ForecastGap: k.ForecastGap, Force: k.Force}}}
	case s.DPHyPO != nil:
		d := s.DPHyPO
		return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{
			Space: AxesProto(d.Space), Theta: d.Theta, Gamma: d.Gamma, CMax: d.CMax, CMin: d.CMin, Tau: d.Tau, Beta: d.Beta,
			Uniform: d.Uniform, Evaluator: d.Evaluator, Delta: d.Delta, TargetEpsilon: d.TargetEpsilon,
			Dpsgd: &curatorv1.DPSGDSettings{LearningRate: d.DPSGD.LearningRate, ClipNorm: d.DPSGD.ClipNorm, NoiseMultiplier: d.DPSGD.NoiseMultiplier,
				Epochs: uint32(d.DPSGD.Epochs), BatchSize: uint32(d.DPSGD.BatchSize), L2: d.DPSGD.L2, ScoreNoiseMultiplier: d.DPSGD.ScoreNoiseMultiplier}}}}
	}
	return nil
}

// Forecast reads a Kusner job's forecast (nil for none).
func Forecast(f *curatorv1.KusnerForecast) *kusner.Forecast {
	if f == nil {
		return nil
	}
	return &kusner.Forecast{Candidates: int(f.GetCandidates()), Epsilon: f.GetEpsilon(), Range: f.GetObjectiveRange(), Gap: f.GetGap(),
		Margin: f.GetMargin(), UniformProbability: f.GetUniformProbability(), HasSelection: f.GetHasSelection(),
		SelectionTemperature: f.GetSelectionTemperature(), WithinGapMin: f.GetWithinGapMin(), WithinGapMax: f.GetWithinGapMax(),
		SelectionLift: f.GetSelectionLift(), SelectionEpsilon: f.GetSelectionEpsilon(), LaplaceScale: f.GetLaplaceScale(),
		ValueWithinGap: f.GetValueWithinGap(), UniformValueWithinGap: f.GetUniformValueWithinGap(), ValueLift: f.GetValueLift(),
		ValueEpsilon: f.GetValueEpsilon(), Informative: f.GetInformative(), EpsilonNeeded: f.GetEpsilonNeeded()}
}

// ForecastProto writes a Kusner job's forecast (nil for none).
func ForecastProto(f *kusner.Forecast) *curatorv1.KusnerForecast {
	if f == nil {
		return nil
	}
	return &curatorv1.KusnerForecast{Candidates: uint32(f.Candidates), Epsilon: f.Epsilon, ObjectiveRange: f.Range, Gap: f.Gap,
		Margin: f.Margin, UniformProbability: f.UniformProbability, HasSelection: f.HasSelection,
		SelectionTemperature: f.SelectionTemperature, WithinGapMin: f.WithinGapMin, WithinGapMax: f.WithinGapMax,
		SelectionLift: f.SelectionLift, SelectionEpsilon: f.SelectionEpsilon, LaplaceScale: f.LaplaceScale,
		ValueWithinGap: f.ValueWithinGap, UniformValueWithinGap: f.UniformValueWithinGap, ValueLift: f.ValueLift,
		ValueEpsilon: f.ValueEpsilon, Informative: f.Informative, EpsilonNeeded: f.EpsilonNeeded}
}

// Quote is a job's quote as the curator sends it: its plan, and whether the curator
// would refuse it for its forecast (jobs.Refused).
type Quote struct {
	jobs.Plan
	Refused bool
}

// QuoteProto writes a quote.
func QuoteProto(q Quote) *curatorv1.JobQuote {
	return &curatorv1.JobQuote{Epsilon: q.Cost.Epsilon, Delta: q.Cost.Delta, Relation: string(q.Relation), Guarantee: q.Guarantee,
		KusnerForecast: ForecastProto(q.Forecast), Refused: q.Refused}
}

// QuoteOf reads a quote. Its plan has no Patient cost and no Steps: the protocol does
// not carry them.
func QuoteOf(q *curatorv1.JobQuote) Quote {
	p := jobs.Plan{Guarantee: q.GetGuarantee(), Relation: privacy.Relation(q.GetRelation()), Forecast: Forecast(q.GetKusnerForecast())}
	p.Cost.Epsilon, p.Cost.Delta = q.GetEpsilon(), q.GetDelta()
	return Quote{Plan: p, Refused: q.GetRefused()}
}

// State reads a job state: its protocol name, lower case, without its prefix.
func State(s curatorv1.JobState) jobs.State {
	return jobs.State(strings.ToLower(strings.TrimPrefix(s.String(), "JOB_STATE_")))
}

// StateProto writes a job state.
func StateProto(s jobs.State) curatorv1.JobState {
	return curatorv1.JobState(curatorv1.JobState_value["JOB_STATE_"+strings.ToUpper(string(s))])
}

// Job reads a job record.
func Job(p *curatorv1.Job) (jobs.Job, error) {
	j := jobs.Job{ID: p.GetId(), Identity: p.GetIdentity(), State: State(p.GetState()), Guarantee: p.GetGuarantee(), Error: p.GetError(),
		Created: time.UnixMilli(p.GetCreatedUnixMs()).UTC(), Updated: time.UnixMilli(p.GetUpdatedUnixMs()).UTC()}
	j.Cost.Epsilon, j.Cost.Delta = p.GetEpsilonCharged(), p.GetDeltaCharged()
	if p.GetSpec().GetKind() != nil {
		var err error
		if j.Spec, err = Spec(p.GetSpec()); err != nil {
			return jobs.Job{}, err
		}
	}
	if r := p.GetResult(); r != nil {
		j.Result = &jobs.Result{Hyperparameters: r.GetHyperparameters(), HasHyperparameters: r.GetHasHyperparameters(), Score: r.GetScore(),
			Runs: int(r.GetRuns()), Epsilon: r.GetEpsilon(), Delta: r.GetDelta(), Guarantee: r.GetGuarantee(), Constants: r.GetConstants()}
	}
	return j, nil
}

// JobProto writes a job record.
func JobProto(j jobs.Job) *curatorv1.Job {
	out := &curatorv1.Job{Id: j.ID, Identity: j.Identity, Spec: SpecProto(j.Spec), State: StateProto(j.State),
		EpsilonCharged: j.Cost.Epsilon, DeltaCharged: j.Cost.Delta, Guarantee: j.Guarantee, Error: j.Error,
		CreatedUnixMs: j.Created.UnixMilli(), UpdatedUnixMs: j.Updated.UnixMilli()}
	if r := j.Result; r != nil {
		out.Result = &curatorv1.JobResult{Hyperparameters: r.Hyperparameters, HasHyperparameters: r.HasHyperparameters, Score: r.Score,
			Runs: uint32(r.Runs), Epsilon: r.Epsilon, Delta: r.Delta, Guarantee: r.Guarantee, Constants: r.Constants}
	}
	return out
}

// Event reads a progress event.
func Event(e *curatorv1.JobEvent) jobs.Event {
	return jobs.Event{JobID: e.GetJobId(), Seq: e.GetSeq(), Time: time.UnixMilli(e.GetTimeUnixMs()).UTC(), State: State(e.GetState()),
		Step: int(e.GetStep()), Total: int(e.GetTotal()), Message: e.GetMessage()}
}

// EventProto writes a progress event.
func EventProto(e jobs.Event) *curatorv1.JobEvent {
	return &curatorv1.JobEvent{JobId: e.JobID, Seq: e.Seq, TimeUnixMs: e.Time.UnixMilli(), State: StateProto(e.State),
		Step: uint32(e.Step), Total: uint32(e.Total), Message: e.Message}
}
