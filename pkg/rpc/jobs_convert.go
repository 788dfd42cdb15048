package rpc

import (
	"errors"
	"fmt"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/kusner"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// Conversions between the job protobuf messages and package jobs' domain types.

// axesFromProto reads the grid's axes as sent. Their values are checked when the job is
// planned (hparam.Axis.Param), with errors that name the axis and the field.
func axesFromProto(in []*curatorv1.HyperparameterRange) ([]hparam.Axis, error) {
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

// axisKinds maps the protocol's scales to hparam's axis kinds; axesProto inverts it.
var axisKinds = map[curatorv1.HyperparameterRange_Scale]hparam.AxisKind{
	curatorv1.HyperparameterRange_SCALE_LIST:     hparam.AxisList,
	curatorv1.HyperparameterRange_SCALE_LOG_LIST: hparam.AxisLogList,
	curatorv1.HyperparameterRange_SCALE_LINEAR:   hparam.AxisLinear,
	curatorv1.HyperparameterRange_SCALE_LOG:      hparam.AxisLog,
}

func axesProto(in []hparam.Axis) []*curatorv1.HyperparameterRange {
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

func specFromProto(p *curatorv1.JobSpec) (jobs.Spec, error) {
	switch k := p.GetKind().(type) {
	case *curatorv1.JobSpec_Kusner:
		s := k.Kusner
		space, err := axesFromProto(s.GetSpace())
		if err != nil {
			return jobs.Spec{}, err
		}
		return jobs.Spec{Kusner: &jobs.KusnerSpec{Algorithm: int(s.GetAlgorithm()), Space: space, Iterations: int(s.GetIterations()),
			Epsilon: s.GetEpsilon(), Delta: s.GetDelta(), K1: s.GetK1(), NoiseVariance: s.GetNoiseVariance(), GammaT: s.GetGammaT(),
			A: s.GetA(), Tau: s.GetTau(), Lengthscale: s.GetLengthscale(), Evaluator: s.GetEvaluator(),
			ForecastGap: s.GetForecastGap(), Force: s.GetForce()}}, nil
	case *curatorv1.JobSpec_Dphypo:
		s := k.Dphypo
		space, err := axesFromProto(s.GetSpace())
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

func specProto(s jobs.Spec) *curatorv1.JobSpec {
	switch {
	case s.Kusner != nil:
		k := s.Kusner
		return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{
			Algorithm: curatorv1.KusnerSpec_Algorithm(k.Algorithm), Space: axesProto(k.Space), Iterations: uint32(k.Iterations),
			Epsilon: k.Epsilon, Delta: k.Delta, K1: k.K1, NoiseVariance: k.NoiseVariance, GammaT: k.GammaT, A: k.A, Tau: k.Tau,
			Lengthscale: k.Lengthscale, Evaluator: k.Evaluator, ForecastGap: k.ForecastGap, Force: k.Force}}}
	case s.DPHyPO != nil:
		d := s.DPHyPO
		return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{
			Space: axesProto(d.Space), Theta: d.Theta, Gamma: d.Gamma, CMax: d.CMax, CMin: d.CMin, Tau: d.Tau, Beta: d.Beta,
			Uniform: d.Uniform, Evaluator: d.Evaluator, Delta: d.Delta, TargetEpsilon: d.TargetEpsilon,
			Dpsgd: &curatorv1.DPSGDSettings{LearningRate: d.DPSGD.LearningRate, ClipNorm: d.DPSGD.ClipNorm, NoiseMultiplier: d.DPSGD.NoiseMultiplier,
				Epochs: uint32(d.DPSGD.Epochs), BatchSize: uint32(d.DPSGD.BatchSize), L2: d.DPSGD.L2, ScoreNoiseMultiplier: d.DPSGD.ScoreNoiseMultiplier}}}}
	}
	return nil
}

// forecastProto is a Kusner job's forecast on the wire (nil for none).
func forecastProto(f *kusner.Forecast) *curatorv1.KusnerForecast {
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

// jobQuoteProto is a job's quote on the wire.
func jobQuoteProto(spec jobs.Spec, p jobs.Plan) *curatorv1.JobQuote {
	return &curatorv1.JobQuote{Epsilon: p.Cost.Epsilon, Delta: p.Cost.Delta, Relation: string(p.Relation), Guarantee: p.Guarantee,
		KusnerForecast: forecastProto(p.Forecast), Refused: jobs.Refused(spec, p)}
}

func stateProto(s jobs.State) curatorv1.JobState {
	switch s {
	case jobs.Queued:
		return curatorv1.JobState_JOB_STATE_QUEUED
	case jobs.Running:
		return curatorv1.JobState_JOB_STATE_RUNNING
	case jobs.Succeeded:
		return curatorv1.JobState_JOB_STATE_SUCCEEDED
	case jobs.Failed:
		return curatorv1.JobState_JOB_STATE_FAILED
	case jobs.Cancelled:
		return curatorv1.JobState_JOB_STATE_CANCELLED
	}
	return curatorv1.JobState_JOB_STATE_UNSPECIFIED
}

func jobProto(j jobs.Job) *curatorv1.Job {
	out := &curatorv1.Job{Id: j.ID, Identity: j.Identity, Spec: specProto(j.Spec), State: stateProto(j.State),
		EpsilonCharged: j.Cost.Epsilon, DeltaCharged: j.Cost.Delta, Guarantee: j.Guarantee, Error: j.Error,
		CreatedUnixMs: j.Created.UnixMilli(), UpdatedUnixMs: j.Updated.UnixMilli()}
	if r := j.Result; r != nil {
		out.Result = &curatorv1.JobResult{Hyperparameters: r.Hyperparameters, HasHyperparameters: r.HasHyperparameters, Score: r.Score,
			Runs: uint32(r.Runs), Epsilon: r.Epsilon, Delta: r.Delta, Guarantee: r.Guarantee, Constants: r.Constants}
	}
	return out
}
