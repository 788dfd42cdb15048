package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/dphypo"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/learner"
)

// The built-in DP-HyPO base algorithm M_λ is DP-SGD logistic regression on the training
// part followed by a noisy validation accuracy. These settings may be grid axes; the
// others (noise multiplier, epochs, batch size, score noise) are fixed per job so that
// every run has the same privacy curve.
var dpsgdAxes = []string{"learning_rate", "clip_norm", "l2"}

// dphypoRunner plans and runs DP-HyPO jobs (jobspec.DPHyPOSpec).
var dphypoRunner = kindRunner{
	plan: func(r *Runner, s jobspec.Spec) (jobspec.Plan, error) {
		_, plan, err := r.dphypoPlan(*s.DPHyPO)
		return plan, err
	},
	relation: func(r *Runner, s jobspec.Spec) (privacy.Relation, error) { return r.dphypoRelation(*s.DPHyPO) },
	run: func(r *Runner, ctx context.Context, s jobspec.Spec, progress func(jobspec.Progress)) (jobspec.Result, error) {
		return r.runDPHyPO(ctx, *s.DPHyPO, progress)
	},
}

// dphypoRelation is the relation of a DP-HyPO job: privacy.RelationTrainingAddRemove
// with the built-in learner, the relation its operator declared for an external
// evaluator.
func (r *Runner) dphypoRelation(s jobspec.DPHyPOSpec) (privacy.Relation, error) {
	if s.Evaluator == "" {
		return privacy.RelationTrainingAddRemove, nil
	}
	e, err := r.evaluator(s.Evaluator)
	if err != nil {
		return "", err
	}
	return e.cfg.Relation, nil
}

type dphypoJob struct {
	cfg       dphypo.Config
	space     hparam.Space
	eval      *evaluatorEntry
	sgd       learner.DPSGDConfig // fixed settings; grid axes override per run
	scoreSD   float64             // standard deviation of the noisy accuracy
	boundsEps float64             // ε of the private bounds estimate (0: none)
	// calibrated is the noise chosen for DPHyPOSpec.TargetEpsilon (nil: the spec's).
	calibrated *calibration
	guarantee  string
	// train, val: the built-in learner's preprocessed data, set by runDPHyPO.
	train, val learner.Data
}

// dphypoPlan validates the spec and computes the search's (ε, δ) from the base
// algorithm's Rényi-DP curve through DP-HyPO's Theorem 1 (or Theorem 2 for a pure-ε
// external evaluator), minimised over the order grid.
//
// Neighbouring datasets (the built-in learner): the curator's data with one training
// record added or removed — privacy.RelationTrainingAddRemove, the relation the job is
// charged under. DP-SGD is accounted for add/remove of a training row (Abadi et al.
// 2016; Mironov, Talwar & Zhang 2019), on features that depend on no other record
// (PreprocessBounded); the noisy accuracy is accounted for replacing one validation
// record, and its curve is composed in, so the same (ε, δ) also covers replacing one
// validation record. A private bounds estimate adds its ε by basic composition.
func (r *Runner) dphypoPlan(s jobspec.DPHyPOSpec) (dphypoJob, jobspec.Plan, error) {
	space, err := r.space(s.Space)
	if err != nil {
		return dphypoJob{}, jobspec.Plan{}, err
	}
	cfg, err := r.dphypoConfig(s, space)
	if err != nil {
		return dphypoJob{}, jobspec.Plan{}, err
	}
	job := dphypoJob{cfg: cfg, space: space}
	var base dp.RDPCurve
	pureEps := 0.0
	if s.Evaluator != "" {
		base, pureEps, err = r.evaluatorBase(&job, s)
	} else {
		base, err = r.dpsgdBase(&job, s)
	}
	if err != nil {
		return dphypoJob{}, jobspec.Plan{}, err
	}
	plan, err := r.dphypoCost(&job, s, base, pureEps)
	if err != nil {
		return dphypoJob{}, jobspec.Plan{}, err
	}
	if err := r.dphypoWords(&job, &plan, base, pureEps, s.Delta); err != nil {
		return dphypoJob{}, jobspec.Plan{}, err
	}
	return job, plan, nil
}

// dphypoConfig checks the spec's DP-HyPO settings before any privacy is computed from
// them: a δ, a run-count distribution and a target this curator can honour.
func (r *Runner) dphypoConfig(s jobspec.DPHyPOSpec, space hparam.Space) (dphypo.Config, error) {
	if !(s.Delta > 0 && s.Delta < 1) {
		return dphypo.Config{}, invalid("delta must be in (0, 1), got %g", s.Delta)
	}
	cfg := dphypo.Config{Theta: s.Theta, Gamma: s.Gamma, C: s.CMax, Cmin: s.CMin, Tau: s.Tau, Beta: s.Beta,
		Uniform: s.Uniform, Candidates: space.Coords(), N: space.Size(), Dim: space.Dim()}
	if s.Uniform {
		cfg.C, cfg.Cmin = 1, 1
	}
	if err := cfg.Validate(); err != nil {
		return dphypo.Config{}, invalid("%v", err)
	}
	if mean := dp.NegBinMean(s.Theta, s.Gamma); mean > float64(r.cfg.MaxIterations) {
		return dphypo.Config{}, invalid("the expected number of runs is %.0f; this curator allows at most %d", mean, r.cfg.MaxIterations)
	}
	if t := s.TargetEpsilon; !(t >= 0) || math.IsInf(t, 0) {
		return dphypo.Config{}, invalid("target_epsilon must be positive and finite (or 0: noise multipliers given), got %g", t)
	}
	return cfg, nil
}

// evaluatorBase sets job.eval and returns the per-run Rényi curve an external evaluator's
// operator declared, and its pure ε (0: none), which may allow Theorem 2. The curator
// cannot tune the noise of an evaluator it does not run, so a target ε is refused.
func (r *Runner) evaluatorBase(job *dphypoJob, s jobspec.DPHyPOSpec) (dp.RDPCurve, float64, error) {
	var err error
	if job.eval, err = r.evaluator(s.Evaluator); err != nil {
		return dp.RDPCurve{}, 0, err
	}
	if s.TargetEpsilon != 0 {
		return dp.RDPCurve{}, 0, invalid("target_epsilon calibrates the noise of the built-in DP-SGD learner; evaluator %q's per-run guarantee is fixed by its operator, so leave target_epsilon unset", s.Evaluator)
	}
	pureEps := job.eval.cfg.Epsilon
	switch {
	case job.eval.cfg.RDP != nil:
		return *job.eval.cfg.RDP, pureEps, nil
	case pureEps > 0:
		base, err := dp.PureDPRDP(dp.DefaultOrders(), pureEps)
		if err != nil {
			return dp.RDPCurve{}, 0, invalid("%v", err)
		}
		return base, pureEps, nil
	default:
		return dp.RDPCurve{}, 0, invalid("evaluator %q declares no per-run privacy guarantee; DP-HyPO composes the runs' own guarantees, so the curator's operator must declare one (a per-run ε or an RDP curve) before it can be used", s.Evaluator)
	}
}

// dpsgdBase sets the built-in learner's part of job (bounds ε, DP-SGD settings, score
// noise, calibration) and returns the Rényi curve of one run. Every grid point is
// checked here, before anything is charged, so that no run fails half-way through.
func (r *Runner) dpsgdBase(job *dphypoJob, s jobspec.DPHyPOSpec) (dp.RDPCurve, error) {
	switch r.boundsSource() {
	case boundsNone:
		return dp.RDPCurve{}, invalid("the built-in DP-SGD learner needs public feature bounds or a private bounds estimate, and this curator's operator has configured neither (or must choose the preprocessing %s explicitly)", PreprocessStandardiseNonprivate)
	case boundsEstimated:
		job.boundsEps = r.cfg.BoundsEpsilon
	}
	for _, name := range job.space.Names() {
		if !slices.Contains(dpsgdAxes, name) {
			return dp.RDPCurve{}, invalid("the built-in DP-SGD learner tunes %v; %q is not one of them", dpsgdAxes, name)
		}
	}
	g := s.DPSGD
	if s.TargetEpsilon != 0 {
		if g.NoiseMultiplier != 0 || g.ScoreNoiseMultiplier != 0 {
			return dp.RDPCurve{}, invalid("target_epsilon calibrates dpsgd.noise_multiplier and dpsgd.score_noise_multiplier, so leave them unset (got %g and %g), or leave target_epsilon unset and choose them", g.NoiseMultiplier, g.ScoreNoiseMultiplier)
		}
		// A placeholder while the grid points are checked; calibrate sets both.
		g.NoiseMultiplier, g.ScoreNoiseMultiplier = 1, r.scoreRatio()
	}
	job.sgd = learner.DPSGDConfig{LearningRate: g.LearningRate, ClipNorm: g.ClipNorm, NoiseMultiplier: g.NoiseMultiplier,
		Epochs: g.Epochs, ExpectedBatchSize: g.BatchSize, Lambda: g.L2}
	for i := 0; i < job.space.Size(); i++ { // every grid point must give a valid configuration
		if err := r.runConfig(*job, i).Validate(); err != nil {
			return dp.RDPCurve{}, invalid("grid point %d: %v", i, err)
		}
	}
	if job.sgd.NoiseMultiplier <= 0 {
		return dp.RDPCurve{}, invalid("a private search needs a positive DP-SGD noise multiplier (or target_epsilon, to have the curator choose it)")
	}
	if !(g.ScoreNoiseMultiplier > 0) || math.IsInf(g.ScoreNoiseMultiplier, 0) {
		return dp.RDPCurve{}, invalid("score_noise_multiplier must be positive, got %g", g.ScoreNoiseMultiplier)
	}
	if job.sgd.ExpectedBatchSize > r.train.N {
		return dp.RDPCurve{}, invalid("batch size %d exceeds the %d training rows", job.sgd.ExpectedBatchSize, r.train.N)
	}
	n, m := r.train.N, float64(r.val.N)
	// curve is the Rényi-DP curve of one run: DP-SGD with noise multiplier sigma,
	// composed with the noisy accuracy of noise multiplier score. The orders, the
	// sampling rate and the steps do not depend on the noise: computed once, not per
	// bisection step of calibrate.
	orders := dpsgdOrders()
	q, steps := job.sgd.SamplingRate(n), job.sgd.Steps(n)
	curve := func(sigma, score float64) (dp.RDPCurve, error) {
		sgdCurve, err := dp.SubsampledGaussianRDP(orders, q, sigma, steps)
		if err != nil {
			return dp.RDPCurve{}, err
		}
		scoreCurve, err := dp.GaussianRDP(orders, 1/m, score/m)
		if err != nil {
			return dp.RDPCurve{}, err
		}
		return sgdCurve.Compose(scoreCurve)
	}
	if s.TargetEpsilon != 0 {
		c, err := calibrate(s, job.cfg, job.boundsEps, func(sigma float64) (float64, error) {
			base, err := curve(sigma, r.scoreRatio()*sigma)
			if err != nil {
				return 0, err
			}
			e, _, err := searchEpsilon(base, job.cfg, s.Delta)
			return e, err
		})
		if err != nil {
			return dp.RDPCurve{}, err
		}
		job.calibrated = &c
		job.sgd.NoiseMultiplier, g.ScoreNoiseMultiplier = c.noise, r.scoreRatio()*c.noise
	}
	job.scoreSD = g.ScoreNoiseMultiplier / m
	base, err := curve(job.sgd.NoiseMultiplier, g.ScoreNoiseMultiplier)
	if err != nil {
		return dp.RDPCurve{}, invalid("%v", err)
	}
	return base, nil
}

// dphypoCost prices the search from the per-run curve (Theorem 1, or Theorem 2 when a
// pure per-run ε gives less) and starts job.guarantee with the (ε, δ) it states.
func (r *Runner) dphypoCost(job *dphypoJob, s jobspec.DPHyPOSpec, base dp.RDPCurve, pureEps float64) (jobspec.Plan, error) {
	cfg := job.cfg
	eps, order, err := searchEpsilon(base, cfg, s.Delta)
	if err != nil {
		return jobspec.Plan{}, invalid("%v", err)
	}
	plan := jobspec.Plan{}
	plan.Cost.Epsilon, plan.Cost.Delta = eps+job.boundsEps, s.Delta
	job.guarantee = fmt.Sprintf("(ε=%.4g, δ=%g)-DP for the released best run (DP-HyPO Theorem 1, Rényi DP at order %g, improved conversion; C=%g, c=%g, runs ~ NegBin(θ=%g, γ=%g)",
		plan.Cost.Epsilon, s.Delta, order, cfg.C, cfg.Cmin, cfg.Theta, cfg.Gamma)
	if job.boundsEps > 0 {
		job.guarantee += fmt.Sprintf("; ε=%.4g for the search plus ε=%g for the private feature bounds", eps, job.boundsEps)
	}
	job.guarantee += ")"
	if c := job.calibrated; c != nil {
		job.guarantee += fmt.Sprintf(". Noise calibrated to target ε=%g: DP-SGD noise multiplier %.6g and score noise multiplier %.6g (%g×), the least that keep ε ≤ %g",
			s.TargetEpsilon, c.noise, r.scoreRatio()*c.noise, r.scoreRatio(), s.TargetEpsilon)
	}
	if pureEps > 0 {
		if pe, err := dp.DPHyPOPure(pureEps, cfg.Theta, cfg.C, cfg.Cmin); err == nil && pe <= eps {
			plan.Cost.Epsilon, plan.Cost.Delta = pe, 0
			job.guarantee = fmt.Sprintf("(ε=%.4g, 0)-DP for the released best run (DP-HyPO Theorem 2: (2+θ)(ε+log(C/c)) with per-run ε=%g)", pe, pureEps)
		}
	}
	return plan, nil
}

// dphypoWords completes job.guarantee with what is released, the neighbour relation and
// the whole-patient guarantee (set in plan.Patient), and copies it to plan.Guarantee.
func (r *Runner) dphypoWords(job *dphypoJob, plan *jobspec.Plan, base dp.RDPCurve, pureEps, delta float64) error {
	job.guarantee += ". Only the best run is released; the number of runs stays on the curator, as the guarantee requires."
	if job.eval != nil {
		job.guarantee += fmt.Sprintf(" Neighbour relation %s, as this curator's operator declared for evaluator %q's per-run guarantee.", job.eval.cfg.Relation, job.eval.cfg.Name)
	} else {
		job.guarantee += " Neighbour relation " + string(privacy.RelationTrainingAddRemove) + ": one record added to or removed from the " +
			"training data (the DP-SGD runs); the same (ε, δ) holds when one validation record is replaced instead (the noisy " +
			"validation accuracy is composed in)." + r.classWords() + r.preprocessWords()
		if r.boundsSource() == boundsStandardise {
			job.guarantee = nonprivateWarning + job.guarantee
		}
	}
	var err error
	if plan.Patient, err = r.dphypoPatient(*job, base, pureEps, delta, plan.Cost); err != nil {
		return invalid("%v", err)
	}
	job.guarantee += " Whole patient: " + plan.Patient.String()
	switch {
	case plan.Patient.Unbounded:
		job.guarantee += " (the evaluator's declared relation does not cover a whole patient's record)."
	case job.eval != nil && job.eval.cfg.Relation == privacy.RelationRecord:
		job.guarantee += " (the evaluator's guarantee is stated for replacing one record already)."
	default:
		job.guarantee += " for replacing one patient's record by any other: removing it and adding another are two add/remove steps, " +
			"converted on the runs' Rényi curve (Mironov 2017, Proposition 11) before DP-HyPO's Theorem 1."
	}
	plan.Guarantee = job.guarantee
	return nil
}

// classWords states, for a job's guarantee text, what a multi-class learner changes (for
// two classes: nothing, and nothing is said).
func (r *Runner) classWords() string {
	k := r.Classes()
	if k == 2 {
		return ""
	}
	return fmt.Sprintf(" Learner: softmax regression over the %d public classes, with %d parameters per class; each record's gradient is "+
		"clipped to the clipping norm over all %d classes' parameters together, so one record added or removed moves each noisy "+
		"gradient sum by at most that norm and the accounting is the same as for two classes, as is the noisy accuracy's "+
		"(a count of correct predictions: one replaced record changes it by at most 1). Nothing in the guarantee changes with the "+
		"number of classes.", k, r.sgdFeatures()+1, k)
}

// sgdFeatures is the number of features the built-in DP-SGD learner sees.
func (r *Runner) sgdFeatures() int { return r.rawTrain.D }

// dphypoPatient is a DP-HyPO job's whole-patient cost: what replacing one patient's
// record by any other costs. A patient of the training part is removed and another
// added — two add/remove steps — so the search is accounted on the runs' curve for
// two steps (dp.RDPCurve.GroupOfTwo, the weak triangle inequality of Rényi
// divergence) through the same Theorem 1 and conversion as its cost, at the job's δ;
// for a pure-ε evaluator, Theorem 2 at 2ε when smaller. A patient of the validation
// part changes the noisy accuracy only, whose curve is composed into the runs' and is
// stated for replacing a record, so the figure covers them too. A private bounds
// estimate's ε (replace-one) is added as it is. An external evaluator's declared
// relation decides: record, as stated; validation-record, only with the training part
// declared consented; feature-unit, not bounded.
func (r *Runner) dphypoPatient(job dphypoJob, base dp.RDPCurve, pureEps, delta float64, cost privacy.Cost) (*privacy.PatientCost, error) {
	if job.eval != nil {
		switch job.eval.cfg.Relation {
		case privacy.RelationRecord:
			return &privacy.PatientCost{Epsilon: cost.Epsilon, Delta: cost.Delta}, nil
		case privacy.RelationValidationRecord:
			if r.cfg.TrainingConsented {
				return &privacy.PatientCost{Epsilon: cost.Epsilon, Delta: cost.Delta}, nil
			}
			return &privacy.Unbounded, nil
		case privacy.RelationTrainingAddRemove:
		default:
			return &privacy.Unbounded, nil
		}
	}
	two, err := base.GroupOfTwo()
	if err != nil {
		return nil, err
	}
	eps, _, err := searchEpsilon(two, job.cfg, delta)
	if err != nil {
		return nil, err
	}
	p := privacy.PatientCost{Epsilon: eps + job.boundsEps, Delta: delta}
	if pureEps > 0 {
		if pe, err := dp.DPHyPOPure(2*pureEps, job.cfg.Theta, job.cfg.C, job.cfg.Cmin); err == nil && pe <= p.Epsilon {
			p = privacy.PatientCost{Epsilon: pe}
		}
	}
	if math.IsInf(p.Epsilon, 0) || math.IsNaN(p.Epsilon) {
		return &privacy.Unbounded, nil
	}
	return &p, nil
}

// dpsgdOrders is the order grid the built-in DP-SGD base algorithm is accounted on:
// dp.DefaultOrders without its fractional orders (1.25, 1.5, 1.75).
//
// learner.TrainDPSGD adds lattice discrete-Gaussian noise. Its Rényi guarantee rests on
// the moments E[(p_μ/p_0)^j] of the discrete Gaussian, which equal the continuous
// Gaussian's only for integer j (see pkg/learner's documentation), and on Mironov, Talwar
// & Zhang's integer-order bound A_α = Σ_j C(α,j)(1−q)^{α−j} q^j E[(p_μ/p_0)^j], which is
// built from exactly those moments. At fractional α, dp.SubsampledGaussianRDP evaluates
// the two-sided series of the continuous Gaussian, which nobody has shown to bound the
// lattice mechanism. So the DP-SGD curve, and the score release composed with it (whose
// curve must share its orders), use integer orders only; the minimum over orders is then
// taken over orders where the bound is proved. The fractional orders matter only for
// very large ε, where the best order is close to 1.
func dpsgdOrders() []float64 {
	return slices.DeleteFunc(dp.DefaultOrders(), func(a float64) bool { return a != math.Trunc(a) })
}

// runConfig is the DP-SGD configuration of grid point i.
func (r *Runner) runConfig(job dphypoJob, i int) learner.DPSGDConfig {
	c := job.sgd
	for name, v := range job.space.Point(i) {
		switch name {
		case "learning_rate":
			c.LearningRate = v
		case "clip_norm":
			c.ClipNorm = v
		case "l2":
			c.Lambda = v
		}
	}
	return c
}

type dphypoBase struct {
	r   *Runner
	job dphypoJob
	src *dp.Source
}

// Run is one private run M_λ: DP-SGD training (logistic regression, or softmax
// regression for more than two classes) and a noisy validation accuracy.
func (b dphypoBase) Run(ctx context.Context, i int) (float64, error) {
	if b.job.eval != nil {
		return b.r.evaluate(ctx, b.job.eval, b.job.space.Point(i))
	}
	m, err := learner.TrainDPSGDClassifier(ctx, b.src, b.job.train, b.r.runConfig(b.job, i))
	if err != nil {
		return 0, err
	}
	return learner.NoisyAccuracy(b.src, m, b.job.val, b.job.scoreSD)
}

func (r *Runner) runDPHyPO(ctx context.Context, s jobspec.DPHyPOSpec, progress func(jobspec.Progress)) (jobspec.Result, error) {
	job, plan, err := r.dphypoPlan(s)
	if err != nil {
		return jobspec.Result{}, err
	}
	if job.eval == nil {
		if job.train, job.val, err = r.sgdData(ctx); err != nil {
			return jobspec.Result{}, err
		}
	}
	src := dp.CryptoSource()
	// The number of runs is part of what the guarantee hides: progress reports only that
	// the search runs, and the run count goes to the operator's log alone.
	progress(jobspec.Progress{Message: "searching (the number of runs is private)"})
	// A failed base run is kept with score −∞ and the search goes on (dphypo.Run); its
	// error goes to the operator's log only.
	// The path (every run's point, score and sampling distribution) is for the operator
	// only: it goes to the operator's log and to the result's Trace, which the job manager
	// keeps apart from the release.
	trace := &jobspec.Trace{Grid: s.Space, Visits: make([]int, job.space.Size())}
	res, err := dphypo.Run(ctx, src, job.cfg, dphypoBase{r: r, job: job, src: src}, func(p dphypo.Progress) {
		point := job.space.Point(p.Index)
		step := jobspec.NewTraceStep(p.Run, p.Index, point, p.Score, p.Err != nil, p.Sampling)
		trace.Steps = append(trace.Steps, step)
		trace.Visits[p.Index]++
		trace.Final = trace.Final[:0]
		for _, v := range p.Sampling {
			trace.Final = append(trace.Final, v*float64(len(p.Sampling)))
		}
		if p.Err != nil {
			r.log.Warn("DP-HyPO base run failed; kept with score −∞ (operator only)", zap.Int("run", p.Run), zap.Any("hyperparameters", point), zap.Error(p.Err))
			return
		}
		r.log.Info("DP-HyPO run (operator only: the run count, points and scores are not released)", zap.Int("run", p.Run),
			zap.Any("hyperparameters", point), zap.Float64("noisy_score", p.Score),
			zap.Float64("max_density", step.MaxDensity), zap.Float64("min_density", step.MinDensity), zap.Float64("entropy", step.Entropy))
	})
	if errors.Is(err, dphypo.ErrAllRunsFailed) {
		return jobspec.Result{}, jobspec.Publicf("every run of the search failed; the curator's operator can find details in its log")
	} else if err != nil {
		return jobspec.Result{}, fmt.Errorf("tuning: dphypo: %w", err)
	}
	r.log.Info("DP-HyPO search finished (operator only)", zap.Int("runs", res.Runs), zap.Int("failed_runs", res.Failed))
	constants := map[string]float64{"expected_runs": dp.NegBinMean(job.cfg.Theta, job.cfg.Gamma), "score_noise_sd": job.scoreSD}
	if c := job.calibrated; c != nil {
		constants["target_epsilon"] = s.TargetEpsilon
		constants["noise_multiplier"] = c.noise
		constants["score_noise_multiplier"] = r.scoreRatio() * c.noise
	}
	if job.boundsEps > 0 {
		constants["bounds_epsilon"] = job.boundsEps
	}
	return jobspec.Result{
		HasHyperparameters: true, Hyperparameters: job.space.Point(res.BestIndex), Score: res.BestScore,
		Epsilon: plan.Cost.Epsilon, Delta: plan.Cost.Delta, Guarantee: plan.Guarantee,
		Constants: constants, Trace: trace,
	}, nil
}
