package tuning

import (
	"context"
	"fmt"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/kusner"
	"github.com/privbo/privbo/pkg/learner"
)

// lambdaName is the built-in learner's one hyperparameter: the L2 regularisation
// strength λ of logistic regression.
const lambdaName = "lambda"

// kusnerRunner plans and runs Kusner jobs (jobspec.KusnerSpec), stated for
// kusner.Relation: one validation record replaced.
var kusnerRunner = kindRunner{
	plan:     func(r *Runner, s jobspec.Spec) (jobspec.Plan, error) { return r.kusnerPlan(*s.Kusner) },
	relation: func(*Runner, jobspec.Spec) (privacy.Relation, error) { return kusner.Relation, nil },
	run: func(r *Runner, ctx context.Context, s jobspec.Spec, progress func(jobspec.Progress)) (jobspec.Result, error) {
		return r.runKusner(ctx, *s.Kusner, progress)
	},
}

type kusnerJob struct {
	cfg   kusner.Config
	space hparam.Space
	eval  *evaluatorEntry // nil: the built-in learner
}

// kusnerConfig turns a spec into a validated kusner.Config and its plan, without
// touching the data (the validation size m is public: it follows from the row count).
// It does not compute the release constants (γ_T's greedy bound is the expensive part):
// kusnerPlan does, once per submission, and kusner.Run once per run.
func (r *Runner) kusnerConfig(s jobspec.KusnerSpec) (kusnerJob, jobspec.Plan, error) {
	space, err := r.space(s.Space)
	if err != nil {
		return kusnerJob{}, jobspec.Plan{}, err
	}
	if s.Iterations > r.cfg.MaxIterations {
		return kusnerJob{}, jobspec.Plan{}, invalid("T = %d iterations; this curator allows at most %d", s.Iterations, r.cfg.MaxIterations)
	}
	alg := kusner.Algorithm(s.Algorithm)
	job := kusnerJob{space: space}
	op := r.cfg.Kusner
	// The messages reach remote modelers: they name the spec's fields, never the
	// curator's flags, which its operator knows by their names.
	for _, c := range []struct {
		name          string
		spec, curator float64
	}{
		{"k1", s.K1, op.K1},
		{"noise_variance", s.NoiseVariance, op.NoiseVariance},
		{"gamma_t", s.GammaT, op.GammaT},
		{"a", s.A, op.A},
		{"tau", s.Tau, op.Tau},
	} {
		if c.spec != 0 && c.spec != c.curator {
			return kusnerJob{}, jobspec.Plan{}, invalid("%s = %g differs from this curator's %g: it is an assumption about the curator's data that sets the noise, so the curator's operator chooses it; leave it unset", c.name, c.spec, c.curator)
		}
	}
	if alg == kusner.NoiseFree && (op.A <= 0 || op.Tau <= 0) {
		return kusnerJob{}, jobspec.Plan{}, invalid("Algorithm 2 rests on regret constants A and τ that this curator's operator has not set; ask the operator, or use another algorithm")
	}
	cfg := kusner.Config{Algorithm: alg, Candidates: space.Coords(), N: space.Size(), Dim: space.Dim(),
		Iterations: s.Iterations, Epsilon: s.Epsilon, Delta: s.Delta, K1: op.K1, NoiseVariance: op.NoiseVariance,
		GammaT: op.GammaT, A: op.A, Tau: op.Tau, Lengthscale: s.Lengthscale}
	if s.Evaluator != "" {
		if job.eval, err = r.evaluator(s.Evaluator); err != nil {
			return kusnerJob{}, jobspec.Plan{}, err
		}
		if alg == kusner.Lipschitz {
			return kusnerJob{}, jobspec.Plan{}, invalid("Algorithm 3 rests on the Lipschitz and convexity properties of the built-in learner; it cannot run an external evaluator")
		}
	} else {
		if names := space.Names(); len(names) != 1 || names[0] != lambdaName {
			return kusnerJob{}, jobspec.Plan{}, invalid("the built-in learner has one hyperparameter, %q (L2 regularisation strength); the grid has %v", lambdaName, names)
		}
		lambdas := space.Params[0].Values
		if lambdas[0] <= 0 {
			return kusnerJob{}, jobspec.Plan{}, invalid("regularisation strengths must be positive, got %g", lambdas[0])
		}
		if alg == kusner.Lipschitz {
			if k := r.Classes(); k != 2 {
				return kusnerJob{}, jobspec.Plan{}, invalid("Algorithm 3 rests on the Lipschitz bounds of binary logistic regression; this curator's target has %d classes (use Algorithm 1 or 2, whose objective is the validation accuracy of softmax regression)", k)
			}
			cfg.LambdaMin, cfg.LambdaMax = lambdas[0], lambdas[len(lambdas)-1]
			cfg.L, cfg.GStar, cfg.M = learner.SigmoidLipschitz, learner.SigmoidBound, r.valUnit.N
		}
	}
	if err := cfg.Validate(); err != nil {
		return kusnerJob{}, jobspec.Plan{}, invalid("%v", err)
	}
	job.cfg = cfg
	eps, delta := cfg.Cost()
	plan := jobspec.Plan{Guarantee: cfg.Guarantee(), Steps: cfg.Steps()}
	plan.Cost.Epsilon, plan.Cost.Delta = eps, delta
	plan.Patient, plan.Guarantee = r.kusnerPatient(plan.Cost, plan.Guarantee)
	return job, plan, nil
}

// kusnerPlan is kusnerConfig plus the check that the release constants can be computed
// (for example that the Laplace scale is within pkg/dp's range), so that such a spec is
// refused before it is charged, and the job's forecast (kusner.Config.Forecast) from
// those public constants and the objective's public range.
func (r *Runner) kusnerPlan(s jobspec.KusnerSpec) (jobspec.Plan, error) {
	job, plan, err := r.kusnerConfig(s)
	if err != nil {
		return jobspec.Plan{}, err
	}
	k, err := job.cfg.Constants()
	if err != nil {
		return jobspec.Plan{}, invalid("%v", err)
	}
	f, err := job.cfg.Forecast(k, objectiveRange(job), s.ForecastGap)
	if err != nil {
		return jobspec.Plan{}, invalid("%v", err)
	}
	plan.Forecast = &f
	return plan, nil
}

// objectiveRange is the public range of a Kusner job's objective: 1 for the built-in
// learner (a validation accuracy in [0, 1], or for Algorithm 3 the negated mean sigmoid
// loss in [−learner.SigmoidBound, 0]); for an external evaluator, whose scores have no
// declared range, the unit-variance prior's kusner.PriorRange.
func objectiveRange(job kusnerJob) float64 {
	switch {
	case job.eval != nil:
		return kusner.PriorRange
	case job.cfg.Algorithm == kusner.Lipschitz:
		return learner.SigmoidBound
	}
	return 1
}

func (r *Runner) runKusner(ctx context.Context, s jobspec.KusnerSpec, progress func(jobspec.Progress)) (jobspec.Result, error) {
	job, _, err := r.kusnerConfig(s) // kusner.Run computes and checks the constants
	if err != nil {
		return jobspec.Result{}, err
	}
	objective := r.kusnerObjective(job)
	res, err := kusner.Run(ctx, dp.CryptoSource(), job.cfg, objective, func(p kusner.Progress) {
		progress(jobspec.Progress{Step: p.Step, Total: p.Total, Message: p.Message})
	})
	if err != nil {
		return jobspec.Result{}, fmt.Errorf("tuning: kusner: %w", err)
	}
	out := jobspec.Result{Score: res.Value, Epsilon: res.Epsilon, Delta: res.Delta, Guarantee: res.Guarantee,
		Constants: res.Constants.Map(job.cfg.Algorithm)}
	if res.HasIndex {
		out.HasHyperparameters, out.Hyperparameters = true, job.space.Point(res.Index)
	}
	return out, nil
}

// kusnerObjective is f_V(λ): validation accuracy (Algorithms 1, 2) or the negated mean
// normalised-sigmoid loss on unit-norm rows (Algorithm 3) of the learner trained on the
// training part; or the external evaluator's score.
func (r *Runner) kusnerObjective(job kusnerJob) kusner.Objective {
	return func(ctx context.Context, i int) (float64, error) {
		point := job.space.Point(i)
		if job.eval != nil {
			return r.evaluate(ctx, job.eval, point)
		}
		lambda := point[lambdaName]
		if job.cfg.Algorithm == kusner.Lipschitz {
			m, err := learner.TrainLogisticNoBias(ctx, r.trainUnit, lambda)
			if err != nil {
				return 0, err
			}
			return learner.SigmoidScore(m, r.valUnit), nil
		}
		if r.Classes() > 2 {
			m, err := learner.TrainSoftmax(ctx, r.train, lambda)
			if err != nil {
				return 0, err
			}
			return learner.Accuracy(m, r.val), nil
		}
		m, err := learner.TrainLogistic(ctx, r.train, lambda)
		if err != nil {
			return 0, err
		}
		return learner.Accuracy(m, r.val), nil
	}
}

// kusnerPatient is a Kusner job's whole-patient cost and its guarantee text with the
// whole-patient figure: the job protects its validation part only (the learner trains
// on the training part with no mechanism), so for a patient of the training part
// nothing is bounded — unless the operator declared that part consented
// (Config.TrainingConsented), when the figure is the validation part's (ε, δ), for the
// patients the job does protect.
func (r *Runner) kusnerPatient(cost privacy.Cost, guarantee string) (*privacy.PatientCost, string) {
	if !r.cfg.TrainingConsented {
		return &privacy.Unbounded, guarantee + " Whole patient: NOT BOUNDED — a patient of the training part is used by the learner with no mechanism."
	}
	return &privacy.PatientCost{Epsilon: cost.Epsilon, Delta: cost.Delta}, guarantee + fmt.Sprintf(" Whole patient: (ε=%g, δ=%g) for a patient of the validation part "+
		"(replacing one validation record); the patients of the training part are outside it, as this curator's operator declared them consented.", cost.Epsilon, cost.Delta)
}
