package server

import (
	"errors"
	"fmt"

	"github.com/privbo/privbo/pkg/jobs"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// Conversions between the job protobuf messages and package jobs' domain types.

func rangesFromProto(in []*curatorv1.HyperparameterRange) ([]jobs.Range, error) {
	out := make([]jobs.Range, len(in))
	for k, r := range in {
		var scale string
		switch r.GetScale() {
		case curatorv1.HyperparameterRange_SCALE_LIST:
			scale = "list"
		case curatorv1.HyperparameterRange_SCALE_LINEAR:
			scale = "linear"
		case curatorv1.HyperparameterRange_SCALE_LOG:
			scale = "log"
		default:
			return nil, fmt.Errorf("hyperparameter %q: scale must be list, linear or log", r.GetName())
		}
		out[k] = jobs.Range{Name: r.GetName(), Scale: scale, Values: r.GetValues(), Low: r.GetLow(), High: r.GetHigh(), Count: int(r.GetCount())}
	}
	return out, nil
}

func rangesProto(in []jobs.Range) []*curatorv1.HyperparameterRange {
	out := make([]*curatorv1.HyperparameterRange, len(in))
	for k, r := range in {
		scale := map[string]curatorv1.HyperparameterRange_Scale{"list": curatorv1.HyperparameterRange_SCALE_LIST,
			"linear": curatorv1.HyperparameterRange_SCALE_LINEAR, "log": curatorv1.HyperparameterRange_SCALE_LOG}[r.Scale]
		out[k] = &curatorv1.HyperparameterRange{Name: r.Name, Scale: scale, Values: r.Values, Low: r.Low, High: r.High, Count: uint32(r.Count)}
	}
	return out
}

func specFromProto(p *curatorv1.JobSpec) (jobs.Spec, error) {
	switch k := p.GetKind().(type) {
	case *curatorv1.JobSpec_Kusner:
		s := k.Kusner
		space, err := rangesFromProto(s.GetSpace())
		if err != nil {
			return jobs.Spec{}, err
		}
		return jobs.Spec{Kusner: &jobs.KusnerSpec{Algorithm: int(s.GetAlgorithm()), Space: space, Iterations: int(s.GetIterations()),
			Epsilon: s.GetEpsilon(), Delta: s.GetDelta(), K1: s.GetK1(), NoiseVariance: s.GetNoiseVariance(), GammaT: s.GetGammaT(),
			A: s.GetA(), Tau: s.GetTau(), Lengthscale: s.GetLengthscale(), Evaluator: s.GetEvaluator()}}, nil
	case *curatorv1.JobSpec_Dphypo:
		s := k.Dphypo
		space, err := rangesFromProto(s.GetSpace())
		if err != nil {
			return jobs.Spec{}, err
		}
		d := s.GetDpsgd()
		return jobs.Spec{DPHyPO: &jobs.DPHyPOSpec{Space: space, Theta: s.GetTheta(), Gamma: s.GetGamma(), CMax: s.GetCMax(), CMin: s.GetCMin(),
			Tau: s.GetTau(), Beta: s.GetBeta(), Uniform: s.GetUniform(), Evaluator: s.GetEvaluator(), Delta: s.GetDelta(),
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
			Algorithm: curatorv1.KusnerSpec_Algorithm(k.Algorithm), Space: rangesProto(k.Space), Iterations: uint32(k.Iterations),
			Epsilon: k.Epsilon, Delta: k.Delta, K1: k.K1, NoiseVariance: k.NoiseVariance, GammaT: k.GammaT, A: k.A, Tau: k.Tau,
			Lengthscale: k.Lengthscale, Evaluator: k.Evaluator}}}
	case s.DPHyPO != nil:
		d := s.DPHyPO
		return &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{
			Space: rangesProto(d.Space), Theta: d.Theta, Gamma: d.Gamma, CMax: d.CMax, CMin: d.CMin, Tau: d.Tau, Beta: d.Beta,
			Uniform: d.Uniform, Evaluator: d.Evaluator, Delta: d.Delta,
			Dpsgd: &curatorv1.DPSGDSettings{LearningRate: d.DPSGD.LearningRate, ClipNorm: d.DPSGD.ClipNorm, NoiseMultiplier: d.DPSGD.NoiseMultiplier,
				Epochs: uint32(d.DPSGD.Epochs), BatchSize: uint32(d.DPSGD.BatchSize), L2: d.DPSGD.L2, ScoreNoiseMultiplier: d.DPSGD.ScoreNoiseMultiplier}}}}
	}
	return nil
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
