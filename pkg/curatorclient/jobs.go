package curatorclient

import (
	"fmt"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/kusner"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// Conversions of what the curator sends about a job into package jobs' types, for a
// modeler's job report (jobs.WriteReport). They carry only what the curator sent.

// SpaceFromProto reads a grid's axes as sent.
func SpaceFromProto(in []*curatorv1.HyperparameterRange) ([]hparam.Axis, error) {
	out := make([]hparam.Axis, len(in))
	for k, r := range in {
		a := hparam.Axis{Name: r.GetName(), Values: r.GetValues(), Low: r.GetLow(), High: r.GetHigh(), Count: int(r.GetCount())}
		switch r.GetScale() {
		case curatorv1.HyperparameterRange_SCALE_LIST:
			a.Kind = hparam.AxisList
		case curatorv1.HyperparameterRange_SCALE_LOG_LIST:
			a.Kind = hparam.AxisLogList
		case curatorv1.HyperparameterRange_SCALE_LINEAR:
			a.Kind = hparam.AxisLinear
		case curatorv1.HyperparameterRange_SCALE_LOG:
			a.Kind = hparam.AxisLog
		default:
			return nil, fmt.Errorf("curatorclient: hyperparameter %q: unknown scale %s", r.GetName(), r.GetScale())
		}
		out[k] = a
	}
	return out, nil
}

// JobFromProto converts a job record.
func JobFromProto(p *curatorv1.Job) (jobs.Job, error) {
	j := jobs.Job{ID: p.GetId(), Identity: p.GetIdentity(), State: jobs.State(strings.ToLower(strings.TrimPrefix(p.GetState().String(), "JOB_STATE_"))),
		Guarantee: p.GetGuarantee(), Error: p.GetError(),
		Created: time.UnixMilli(p.GetCreatedUnixMs()).UTC(), Updated: time.UnixMilli(p.GetUpdatedUnixMs()).UTC()}
	j.Cost.Epsilon, j.Cost.Delta = p.GetEpsilonCharged(), p.GetDeltaCharged()
	switch k := p.GetSpec().GetKind().(type) {
	case *curatorv1.JobSpec_Kusner:
		s := k.Kusner
		space, err := SpaceFromProto(s.GetSpace())
		if err != nil {
			return jobs.Job{}, err
		}
		j.Spec.Kusner = &jobs.KusnerSpec{Algorithm: int(s.GetAlgorithm()), Space: space, Iterations: int(s.GetIterations()),
			Epsilon: s.GetEpsilon(), Delta: s.GetDelta(), K1: s.GetK1(), NoiseVariance: s.GetNoiseVariance(), GammaT: s.GetGammaT(),
			A: s.GetA(), Tau: s.GetTau(), Lengthscale: s.GetLengthscale(), Evaluator: s.GetEvaluator(),
			ForecastGap: s.GetForecastGap(), Force: s.GetForce()}
	case *curatorv1.JobSpec_Dphypo:
		s := k.Dphypo
		space, err := SpaceFromProto(s.GetSpace())
		if err != nil {
			return jobs.Job{}, err
		}
		d := s.GetDpsgd()
		j.Spec.DPHyPO = &jobs.DPHyPOSpec{Space: space, Theta: s.GetTheta(), Gamma: s.GetGamma(), CMax: s.GetCMax(), CMin: s.GetCMin(),
			Tau: s.GetTau(), Beta: s.GetBeta(), Uniform: s.GetUniform(), Evaluator: s.GetEvaluator(), Delta: s.GetDelta(),
			TargetEpsilon: s.GetTargetEpsilon(), DPSGD: jobs.DPSGD{LearningRate: d.GetLearningRate(), ClipNorm: d.GetClipNorm(),
				NoiseMultiplier: d.GetNoiseMultiplier(), Epochs: int(d.GetEpochs()), BatchSize: int(d.GetBatchSize()), L2: d.GetL2(),
				ScoreNoiseMultiplier: d.GetScoreNoiseMultiplier()}}
	}
	if r := p.GetResult(); r != nil {
		j.Result = &jobs.Result{Hyperparameters: r.GetHyperparameters(), HasHyperparameters: r.GetHasHyperparameters(), Score: r.GetScore(),
			Runs: int(r.GetRuns()), Epsilon: r.GetEpsilon(), Delta: r.GetDelta(), Guarantee: r.GetGuarantee(), Constants: r.GetConstants()}
	}
	return j, nil
}

// EventFromProto converts a progress event.
func EventFromProto(e *curatorv1.JobEvent) jobs.Event {
	return jobs.Event{JobID: e.GetJobId(), Seq: e.GetSeq(), Time: time.UnixMilli(e.GetTimeUnixMs()).UTC(),
		State: jobs.State(strings.ToLower(strings.TrimPrefix(e.GetState().String(), "JOB_STATE_"))),
		Step:  int(e.GetStep()), Total: int(e.GetTotal()), Message: e.GetMessage()}
}

// ForecastFromProto converts a Kusner job's forecast (nil for none).
func ForecastFromProto(f *curatorv1.KusnerForecast) *kusner.Forecast {
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
