package modeler

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
)

// Config configures a PO-GP-UCB study.
type Config struct {
	// R, Epsilon, Delta are the projection's parameters (docs/MATHS.md §2.1); Label optionally
	// asks for an independent release with the same parameters. Zero leaves a parameter to
	// the curator, which states in its quote of the study (Quote) what it chose: R by the
	// rule Quote.RChoice names, Epsilon and Delta those of its default study (Delta at most what
	// the identity can still spend). RunStudy stores the resolved values; on resume a zero
	// takes the stored one.
	R              int
	Epsilon, Delta float64
	Label          string
	// Quoted, if set, is called with the curator's quote of the study, before anything is
	// charged (also when the quote does not fit and the study is refused).
	Quoted func(*Quote)
	// Iterations T ≥ 1: the number of queries, including the initial one; 0 means
	// NewConfig's.
	Iterations int
	// Batch q ≥ 1 is the number of rows chosen per round and sent in one Query request
	// (GP-BUCB, see the package documentation); 0 means 1. The initial row is a round of
	// its own.
	Batch int
	// GP settings. Lengthscale 0 takes gpucb.DefaultLengthscale of Z. SignalVariance and
	// NoiseVariance 0 take the prior that fits the answers the curator releases
	// (GetDatasetInfo's output privacy, see NoiseRule): with private answers ("laplace"
	// or "gaussian") the noise-aware prior gpucb.NoisyOutputPrior(NoiseRule, L, U, σ_n²)
	// with σ_n² the square of the answers' noise sd the curator states
	// (study.OutputPrivacy.AnswerNoise) and [L, U] the public range; with exact answers SignalVariance 1 and NoiseVariance 1e-3. Both are in
	// standardised output units. A value given explicitly is kept.
	Kernel                                     gpucb.Kernel
	Lengthscale, SignalVariance, NoiseVariance float64
	// FitEvery k > 0 refits the three hyperparameters above by maximum likelihood
	// (gpucb.Posterior.Refit, from the current values) at the end of every round that takes the
	// number of answers t to or past a multiple of k, once t ≥ 3: for q = 1 after every
	// k-th answer, as pkg/simulate does (package documentation). 0 keeps them fixed.
	FitEvery int
	// DeltaUCB is δ' of the β_t schedule (default 0.05); ConstantBeta > 0 overrides it.
	DeltaUCB, ConstantBeta float64
	// AllowRepeats lets GP-UCB choose rows it has already queried (they cost nothing
	// but spend an iteration); by default it moves on to unqueried rows.
	AllowRepeats bool
	// RawOutputs turns off output standardisation.
	RawOutputs bool
	// InitialIndex is the first row queried; -1 (default) draws it uniformly at random,
	// as the paper's runs do.
	InitialIndex int
	// Progress, if set, is called after every observation.
	Progress func(Step)
	// Waiting, if set, is called while a query is unanswered: first after WaitNotice
	// (default 2 s), then every 30 s, with the rows and the time waited. Slow
	// evaluations (a lab test, a person recording a result) make queries wait.
	Waiting    func(rows []int, waited time.Duration)
	WaitNotice time.Duration
	// Resumed, if set, is called when RunStudy continues a stored study.
	Resumed func(Resume)
	// Workers is the GP's parallelism (gpucb.Config.Workers: 0 its default). It
	// changes the speed only, never a choice, and is not a stored setting.
	Workers int
	// WideProjection allows R above the dataset's number of features d. A projection
	// with r > d keeps no more information than r = d (the Gaussian release is an
	// isometry from r = d on) and adds noise in every extra coordinate, so it is
	// refused by default; the paper's lifted experiments (Kharkovskii et al., ICML 2020,
	// Table 1: r = 10 on d = 2) set it. Not a stored setting: it allows, never changes,
	// a choice.
	WideProjection bool
	// ProjectionNoise says how the GP treats the Gaussian noise of the projection (the
	// σ the curator states with the release, Projection.NoiseSD): ProjectionNoiseModel
	// (the zero value) models it, ProjectionNoiseKernel models it in the kernel only and
	// ProjectionNoiseIgnore treats Z as exact. Releases without noise (the lifted
	// mechanism) are exact under every value. A stored setting: a resumed study rebuilds
	// the same GP.
	ProjectionNoise ProjectionNoise
	// Clip, when not zero, asks the curator to clip every answer to [Clip.Lower,
	// Clip.Upper], a range inside its public output range, instead of the public range:
	// the noise is then calibrated to the narrower width at the same ε and the same
	// charge (Clip). Rows whose value lies below Clip.Lower all answer about Clip.Lower:
	// the study learns less about them and more, per answer, about the rows inside the
	// range. The GP models each answer's own noise variance (gpucb.Posterior.ObserveNoise: the
	// prior's noise variance times (width / public width)²). It is chosen before the
	// study from public knowledge, so it depends on no data. A stored setting.
	Clip Clip
	// ConfirmRows k > 0 ends the study with ConfirmPasses (default 1) confirmation
	// passes: the k queried rows with the highest posterior mean are answered again,
	// with fresh noise, clipped to ConfirmClip (zero: Clip), each pass paid by a charge
	// of its own (the curator's ε_out and δ_out again: a declared extra cost), and the
	// GP conditions on these answers before it recommends. 0: none.
	ConfirmRows, ConfirmPasses int
	ConfirmClip                Clip
	// RecommendLikelihood is the likelihood of the answers under which the study
	// recommends its row. With Laplace answers the default ("" or LikelihoodLaplace) is
	// their own Laplace noise: the GP's posterior mode under it, found by iteratively
	// reweighted least squares (the Laplace as a Gaussian scale mixture, EM; see
	// robustRecommend), so that a lucky noise draw moves the recommendation less.
	// LikelihoodGaussian recommends under a Gaussian of the same variance, the GP the
	// rows were chosen with (the rule before; docs/EXPERIMENTS.md, "More informative
	// answers", measures both). It changes the recommendation only, never the rows
	// queried; other answers (exact, Gaussian) are always Gaussian. A stored setting.
	RecommendLikelihood string
	// Direction is study.Maximize (the zero value, the paper's setting) or
	// study.Minimize. A minimisation runs GP-UCB on −y (the answers' public range
	// [L, U] becomes [−U, −L] for the prior); every value the study reports, its best
	// and its recommendation are in the answers' own units.
	Direction study.Direction
}

// NewConfig returns a study's defaults, the one place they are written: `modeler run`'s
// flags take theirs from it (Config.Bind), and Config's zero-means-default fields
// (Iterations, Batch, DeltaUCB, ConfirmPasses) take the same values.
// R, Epsilon and Delta are 0: the curator quotes them (Quote). InitialIndex is −1, a
// random first row as in the paper's runs; a Config built by hand has 0, row 0.
func NewConfig() Config {
	return Config{
		Iterations: 50, Batch: 1, Kernel: gpucb.SquaredExponential, DeltaUCB: 0.05,
		InitialIndex: -1, ConfirmPasses: 1,
		// Direction, ProjectionNoise and RecommendLikelihood default to their zero
		// values (maximise, model the noise, the answers' own likelihood), so that
		// studies stored before these settings existed compare equal.
		Direction: study.Maximize, ProjectionNoise: ProjectionNoiseModel, RecommendLikelihood: "",
	}
}

// ProjectionNoise is how the GP treats the Gaussian noise of a projection release
// (Config.ProjectionNoise).
type ProjectionNoise string

const (
	// ProjectionNoiseModel gives the GP the kernel's expectation over the noise
	// (gpucb.Config.InputNoiseVariance = σ²) and, when the lengthscale is the default,
	// de-biases it (gpucb.DebiasLengthscale): the median distance of noisy rows to their
	// mean is inflated by the noise. The default.
	ProjectionNoiseModel ProjectionNoise = ""
	// ProjectionNoiseKernel gives the GP the expected kernel but keeps the default
	// lengthscale of the noisy rows (to measure what the de-biasing adds).
	ProjectionNoiseKernel ProjectionNoise = "kernel"
	// ProjectionNoiseIgnore treats the noisy rows as exact, as the modeler did before
	// it knew σ.
	ProjectionNoiseIgnore ProjectionNoise = "ignore"
)

// ParseProjectionNoise parses a ProjectionNoise: "model" (or ""), "kernel" or "ignore".
func ParseProjectionNoise(s string) (ProjectionNoise, error) {
	switch s {
	case "", "model":
		return ProjectionNoiseModel, nil
	case "kernel", "ignore":
		return ProjectionNoise(s), nil
	}
	return "", fmt.Errorf("modeler: projection noise %q: want model, kernel or ignore", s)
}

// String returns the flag spelling: "model", "kernel" or "ignore".
func (p ProjectionNoise) String() string {
	if p == ProjectionNoiseModel {
		return "model"
	}
	return string(p)
}

// Resume reports how a stored study was continued.
type Resume struct {
	Study string
	// Iterations already recorded, replayed into the GP; Rebuild is the time from the
	// start of the run to the GP ready (loading Z, or fetching it again, and the replay).
	Iterations int
	Rebuild    time.Duration
	// Projection is true when the release had not been stored and was asked again
	// (the curator replays a release it made before at no cost).
	Projection bool
	// PreviousIterations is the study's T before this run changed it to
	// Config.Iterations, 0 if it did not.
	PreviousIterations int
}

// NoiseRule is the rule that sets the GP prior for answers released with output privacy
// when Config leaves SignalVariance or NoiseVariance at 0: the rule pkg/simulate uses by
// default (simulate.DefaultNoiseRule), which had the best top-1% hit rate and simple
// regret pooled over ε_out = 1, 2, 5 on diabetes (docs/EXPERIMENTS.md, "Honest
// defaults"). It keeps the standardisation of the answers, SignalVariance 1 and
// NoiseVariance σ_n²/s_f² with s_f = (U − L)/4. It is fixed, not a setting, so that a
// study stored with variances 0 resumes with the prior it was run with.
const NoiseRule = gpucb.NoiseRuleRatio

// exactSignalVariance and exactNoiseVariance are the prior for exact answers (and for
// private ones when the user gives the other variance only).
const (
	exactSignalVariance = 1
	exactNoiseVariance  = 1e-3
)

// prior returns the GP's signal and noise variances for answers released under op, and
// the noise variance of those answers (0 for exact answers). A variance given in c
// (non-zero) is kept; the other is the rule's (NoiseRule) with private answers, or the
// exact-answer default. pkg/simulate applies the same rule (GPSettings.NoiseRule).
func (c *Config) prior(op study.OutputPrivacy) (signal, noise, answerNoise float64, err error) {
	signal, noise = c.SignalVariance, c.NoiseVariance
	if !op.Exact() && (signal == 0 || noise == 0) {
		var p gpucb.NoisyPrior
		lo, hi := op.Lower, op.Upper
		if c.Direction == study.Minimize {
			lo, hi = -hi, -lo
		}
		an, err := op.AnswerNoise()
		if err != nil {
			return 0, 0, 0, fmt.Errorf("modeler: the curator's output privacy: %w", err)
		}
		answerNoise = an.Variance
		if p, err = gpucb.NoisyOutputPrior(NoiseRule, lo, hi, answerNoise); err != nil {
			return 0, 0, 0, fmt.Errorf("modeler: the curator's output privacy: %w", err)
		}
		if signal == 0 {
			signal = p.SignalVariance
		}
		if noise == 0 {
			noise = p.NoiseVariance
		}
	}
	if signal == 0 {
		signal = exactSignalVariance
	}
	if noise == 0 {
		noise = exactNoiseVariance
	}
	return signal, noise, answerNoise, nil
}

// The likelihoods of Config.RecommendLikelihood (the noise model a recommendation
// assumes; which one fits the answers comes from the curator's stated noise family,
// study.OutputPrivacy.Noise, never from these spellings).
const (
	LikelihoodLaplace  = "laplace"
	LikelihoodGaussian = "gaussian"
)

// Confirmation is one answer of a confirmation pass.
type Confirmation struct {
	Pass  int     `json:"pass"`
	Index int     `json:"index"`
	Value float64 `json:"value"`
}

// Step reports one observation.
type Step struct {
	// Iteration t ≥ 1 and Round (one Query request) ≥ 1.
	Iteration, Round, Index int
	Value                   float64
	BestIndex               int
	BestValue               float64
	Replayed                bool
	EpsilonRemaining        float64
	DeltaRemaining          float64
}

// Result is the summary of a study.
type Result struct {
	// Study is the name of the stored study ("" for Run).
	Study     string `json:"study,omitempty"`
	Dataset   string `json:"dataset"`
	ReleaseID string `json:"release_id"`
	Rows      int    `json:"rows"`
	R         int    `json:"r"`
	// Direction is "maximize" or "minimize".
	Direction string `json:"direction"`
	// Recommended is the study's answer: the queried row with the best (highest, or
	// lowest when minimising) posterior mean at the end of the study. RecommendedMean
	// and RecommendedSD are the GP's posterior mean and standard deviation of the
	// objective at that row, in the answers' units (the GP's output standardisation and
	// the direction undone). With private (noisy) answers the best single answer
	// (BestIndex) is mostly the luckiest noise draw; the posterior mean pools every
	// answer through the GP and is what to act on, as Vizier and Optuna recommend under
	// noisy objectives. With exact answers the two agree up to the GP's small noise
	// term. −1 (mean and sd 0) before the first answer.
	Recommended     int     `json:"recommended_index"`
	RecommendedMean float64 `json:"recommended_mean"`
	RecommendedSD   float64 `json:"recommended_sd"`
	// AnswerNoiseSD is the standard deviation of the noise the curator's output
	// mechanism adds to each answer (the SD of its output privacy's AnswerNoise; 0 for exact
	// answers), and AnswersRange the target's public range [L, U] the answers are
	// clipped to (nil for exact answers): what one answer can say about its row. With
	// Config.Clip, AnswersClip is the narrower range the study asked for and
	// AnswerClipNoiseSD the noise sd of answers clipped to it.
	AnswerNoiseSD     float64     `json:"answer_noise_sd"`
	AnswersRange      *[2]float64 `json:"answers_range,omitempty"`
	AnswersClip       *[2]float64 `json:"answers_clip,omitempty"`
	AnswerClipNoiseSD float64     `json:"answer_clip_noise_sd,omitempty"`
	// GaussianRecommended, when the recommendation was made under the answers' Laplace
	// likelihood (Config.RecommendLikelihood), is the row the Gaussian likelihood would
	// have recommended; RecommendLikelihood names the likelihood used ("gaussian" or
	// "laplace").
	GaussianRecommended *int   `json:"gaussian_recommended_index,omitempty"`
	RecommendLikelihood string `json:"recommend_likelihood"`
	// Confirmed are the answers of the confirmation passes (Config.ConfirmRows), in
	// order.
	Confirmed []Confirmation `json:"confirmed,omitempty"`
	// BestIndex and BestValue are the row with the best single answer and that
	// answer: with private answers a noisy answer, not the row's value (see
	// Recommended). The names are kept for compatibility; −1 and 0 before the first
	// answer.
	BestIndex int     `json:"best_index"`
	BestValue float64 `json:"best_value"`
	// Interrupted is set by a caller whose run was stopped (Ctrl-C) before the end: the
	// result is then what was known at that point.
	Interrupted bool      `json:"interrupted"`
	Iterations  int       `json:"iterations"`
	Queried     []int     `json:"queried"`
	Values      []float64 `json:"values"`
	Batch       int       `json:"batch"`
	Rounds      int       `json:"rounds"`
	// Lengthscale, SignalVariance and NoiseVariance are the kernel hyperparameters in
	// use at the end: the configured ones, or the last maximum-likelihood fit when
	// Config.FitEvery > 0. Refits counts the fits that succeeded (a failed fit keeps the
	// previous values), those replayed when a study resumed included.
	Lengthscale    float64 `json:"lengthscale"`
	SignalVariance float64 `json:"signal_variance"`
	NoiseVariance  float64 `json:"noise_variance"`
	Refits         int     `json:"refits"`
	// NoisePrior names the rule that set the prior for private answers (NoiseRule), ""
	// when the answers were exact or both variances were given; AnswerNoiseVariance is
	// the variance of the noise the curator adds to each answer (0 for exact answers).
	NoisePrior          string  `json:"noise_prior,omitempty"`
	AnswerNoiseVariance float64 `json:"answer_noise_variance,omitempty"`
	// ProjectionNoiseSD is the σ the curator stated for the noise in every entry of Z
	// (0: none), and ProjectionNoise how the GP treated it ("model", "kernel" or
	// "ignore"; see Config.ProjectionNoise). InputNoiseVariance is the σ² the GP
	// modelled (0 when it treated Z as exact).
	ProjectionNoiseSD  float64 `json:"projection_noise_sd,omitempty"`
	ProjectionNoise    string  `json:"projection_noise,omitempty"`
	InputNoiseVariance float64 `json:"input_noise_variance,omitempty"`
	// RAuto, when the curator chose r (Config.R 0), says how, as the curator's quote states it.
	RAuto *AutoRChoice `json:"r_auto,omitempty"`
	// Quote is the curator's quote of the study, made before anything was charged (nil
	// for a resumed study that held its release).
	Quote            *Quote  `json:"quote,omitempty"`
	EpsilonSpent     float64 `json:"epsilon_spent"`
	DeltaSpent       float64 `json:"delta_spent"`
	EpsilonRemaining float64 `json:"epsilon_remaining"`
	DeltaRemaining   float64 `json:"delta_remaining"`
	// Protection is what the curator stated about the releases the study received.
	Protection Protection `json:"protection"`
}

// Protection is the guarantee of each release a study received, as the curator stated
// it (GetDatasetInfo and the projection header).
type Protection struct {
	// DatasetID is the curator's stable dataset id ("" from curators without one).
	DatasetID string `json:"dataset_id,omitempty"`
	// ProjectionMechanism, ProjectionRelation and ProjectionGuarantee describe the
	// projection release.
	ProjectionMechanism string `json:"projection_mechanism,omitempty"`
	ProjectionRelation  string `json:"projection_relation,omitempty"`
	ProjectionGuarantee string `json:"projection_guarantee"`
	// AnswersMechanism (the curator's name of it), AnswersRelation and
	// AnswersGuarantee describe the query answers; exact answers have no guarantee.
	AnswersMechanism string `json:"answers_mechanism"`
	AnswersRelation  string `json:"answers_relation,omitempty"`
	AnswersGuarantee string `json:"answers_guarantee"`
	// ExactAnswers is true when the answers were released without privacy.
	ExactAnswers bool `json:"exact_answers"`
}

// answersGuarantee is the answers' guarantee of op, stated by the curator or, from a
// curator that states none, derived from its mechanism.
func answersGuarantee(mechanism, stated string, exact bool, eps, delta float64) string {
	switch {
	case stated != "":
		return stated
	case exact:
		return "no guarantee (ε = ∞): exact answers"
	}
	return fmt.Sprintf("each answer (ε=%s, δ=%s)-DP (%s mechanism), as the curator's settings state", figure.Up(eps), figure.Up(delta), mechanism)
}

// protectionOf is the Protection of a stored release.
func protectionOf(rel *study.Release) Protection {
	op := rel.OutputPrivacy
	return Protection{DatasetID: rel.DatasetID, ProjectionMechanism: rel.Mechanism, ProjectionRelation: rel.Relation,
		ProjectionGuarantee: rel.Guarantee, AnswersMechanism: op.Mechanism, AnswersRelation: op.Relation,
		AnswersGuarantee: answersGuarantee(op.Mechanism, op.Guarantee, op.Exact(), op.EpsilonPerIndex, op.DeltaPerIndex), ExactAnswers: op.Exact()}
}

// releaseOf is the stored form of a projection received with the dataset's info.
func releaseOf(info *DatasetInfo, proj *Projection, cfg Config) study.Release {
	return study.Release{ID: proj.ReleaseID, Dataset: info.Name, DatasetID: info.DatasetID, Rows: proj.Rows, Cols: proj.Cols,
		Epsilon: cfg.Epsilon, Delta: cfg.Delta, Replayed: proj.Replayed, Guarantee: proj.Guarantee,
		Mechanism: info.ProjectionMechanism, Relation: info.ProjectionRelation,
		ProtectedUnit: info.ProtectedUnit, MaxQueryIndices: info.MaxQueryIndices,
		Identity: proj.Budget.Identity, OutputPrivacy: info.OutputPrivacy, NoiseSD: proj.NoiseSD, WholePatient: proj.WholePatient}
}

// defaults checks c against its settings' ranges (Bind: a zero field is unset) and
// fills the unset fields that have a default.
func (c *Config) defaults() error {
	if err := c.Bind().Check(); err != nil {
		return fmt.Errorf("modeler: %w", err)
	}
	def := NewConfig()
	c.Iterations, c.Batch, c.DeltaUCB = cmp.Or(c.Iterations, def.Iterations), cmp.Or(c.Batch, def.Batch), cmp.Or(c.DeltaUCB, def.DeltaUCB)
	if c.Direction != study.Maximize && c.Direction != study.Minimize {
		return fmt.Errorf("modeler: direction %q: want maximize or minimize (study.ParseDirection)", string(c.Direction))
	}
	if _, err := ParseProjectionNoise(string(c.ProjectionNoise)); err != nil || c.ProjectionNoise == "model" {
		return fmt.Errorf("modeler: projection noise %q: want ProjectionNoiseModel (\"\"), %q or %q", string(c.ProjectionNoise), ProjectionNoiseKernel, ProjectionNoiseIgnore)
	}
	if c.RecommendLikelihood != "" && c.RecommendLikelihood != LikelihoodLaplace && c.RecommendLikelihood != LikelihoodGaussian {
		return fmt.Errorf("modeler: recommendation likelihood %q: want laplace or gaussian", c.RecommendLikelihood)
	}
	if c.ConfirmPasses > 16 {
		return fmt.Errorf("modeler: %d confirmation passes; the curator answers at most 16", c.ConfirmPasses)
	}
	if c.R < 0 {
		return fmt.Errorf("modeler: projection dimension r must be ≥ 1, or 0 for the curator to choose, got %d", c.R)
	}
	for _, clip := range []Clip{c.Clip, c.ConfirmClip} {
		if !clip.IsZero() && (math.IsInf(clip.Lower, 0) || math.IsInf(clip.Upper, 0) || !(clip.Lower < clip.Upper)) {
			return fmt.Errorf("modeler: clip range [%g, %g]: want finite lower < upper", clip.Lower, clip.Upper)
		}
	}
	// SignalVariance and NoiseVariance stay 0 when not given: they are taken from the
	// answers' privacy once the curator has described it (Config.prior).
	// The GP's settings are checked by gpucb itself, on one stand-in candidate, so that a
	// bad one is refused before the curator charges the projection. A lengthscale of 0
	// is taken from Z later; any positive stand-in checks the rest.
	ls := c.Lengthscale
	if ls == 0 {
		ls = 1
	}
	// Variances left at 0 are checked with the exact-answer stand-ins: the noise-aware
	// prior is positive whenever the curator's output privacy is valid.
	gc := c.gpConfig(ls, cmp.Or(c.SignalVariance, exactSignalVariance), cmp.Or(c.NoiseVariance, exactNoiseVariance))
	gc.Capacity = 0
	if _, err := gpucb.New([]float64{0}, 1, 1, gc); err != nil {
		return fmt.Errorf("modeler: %w", err)
	}
	return nil
}

// gpConfig is the GP configuration of c with lengthscale ls and the given variances.
func (c *Config) gpConfig(ls, signal, noise float64) gpucb.Config {
	return gpucb.Config{
		Kernel: c.Kernel, Lengthscale: ls, SignalVariance: signal, NoiseVariance: noise,
		Delta: c.DeltaUCB, ConstantBeta: c.ConstantBeta, SkipQueried: !c.AllowRepeats,
		Standardise: !c.RawOutputs, Capacity: c.Iterations + c.ConfirmRows*max(c.ConfirmPasses, 1), Workers: c.Workers,
	}
}

// Settings returns the study settings of c, after defaults, as RunStudy stores and
// compares them.
func (c Config) Settings() (study.Settings, error) {
	if err := c.defaults(); err != nil {
		return study.Settings{}, err
	}
	return study.Settings{
		R: c.R, Epsilon: c.Epsilon, Delta: c.Delta, Label: c.Label, Iterations: c.Iterations, Batch: c.Batch,
		Kernel: c.Kernel.String(), Lengthscale: c.Lengthscale, SignalVariance: c.SignalVariance, NoiseVariance: c.NoiseVariance,
		FitEvery: c.FitEvery, DeltaUCB: c.DeltaUCB, ConstantBeta: c.ConstantBeta, AllowRepeats: c.AllowRepeats, RawOutputs: c.RawOutputs,
		InitialIndex: c.InitialIndex, Direction: c.Direction, ProjectionNoise: string(c.ProjectionNoise),
		AnswerClip: c.Clip.String(), RecommendLikelihood: c.RecommendLikelihood,
	}, nil
}

// ConfigFromSettings is the inverse of Config.Settings (without callbacks).
func ConfigFromSettings(s study.Settings) (Config, error) {
	k, err := gpucb.ParseKernel(s.Kernel)
	if err != nil {
		return Config{}, fmt.Errorf("modeler: %w", err)
	}
	clip, err := ParseClip(s.AnswerClip)
	if err != nil {
		return Config{}, err
	}
	return Config{
		R: s.R, Epsilon: s.Epsilon, Delta: s.Delta, Label: s.Label, Iterations: s.Iterations, Batch: s.Batch,
		Kernel: k, Lengthscale: s.Lengthscale, SignalVariance: s.SignalVariance, NoiseVariance: s.NoiseVariance,
		FitEvery: s.FitEvery, DeltaUCB: s.DeltaUCB, ConstantBeta: s.ConstantBeta, AllowRepeats: s.AllowRepeats, RawOutputs: s.RawOutputs,
		InitialIndex: s.InitialIndex, Direction: s.Direction, ProjectionNoise: ProjectionNoise(s.ProjectionNoise),
		Clip: clip, RecommendLikelihood: s.RecommendLikelihood,
	}, nil
}

// Run performs a study against cur, keeping nothing on disk (see RunStudy for a study
// that survives a crash).
func Run(ctx context.Context, cur Curator, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	info, proj, q, err := fetchRelease(ctx, cur, &cfg, nil)
	if err != nil {
		return nil, err
	}
	rel := releaseOf(info, proj, cfg)
	s, err := newSession(cfg, cur, proj.Z, proj.Rows, proj.Cols, rel.OutputPrivacy, rel.NoiseSD)
	if err != nil {
		return nil, err
	}
	s.res.Dataset, s.res.ReleaseID = info.Name, proj.ReleaseID
	s.res.Quote, s.res.RAuto = q, rAuto(q)
	s.res.Protection = protectionOf(&rel)
	s.budget = proj.Budget
	initial, err := initialIndex(cfg.InitialIndex, proj.Rows)
	if err != nil {
		return nil, err
	}
	if err := s.loop(ctx, initial, nil); err != nil {
		return s.finish(), err // what is known so far, for a caller that reports an interruption
	}
	if err := s.confirm(ctx); err != nil {
		return s.finish(), err
	}
	return s.finish(), nil
}

// confirm runs the confirmation passes (Config.ConfirmRows): the k queried rows with the
// highest posterior mean are answered again in pass p = 1, 2, …, and the GP conditions
// on each answer with its own noise variance.
func (s *session) confirm(ctx context.Context) error {
	k := s.cfg.ConfirmRows
	if k <= 0 {
		return nil
	}
	passes := max(s.cfg.ConfirmPasses, 1)
	clip := s.cfg.ConfirmClip
	if clip.IsZero() {
		clip = s.cfg.Clip
	}
	for p := 1; p <= passes; p++ {
		rows := s.topQueried(k)
		obs, budget, err := s.queryWith(ctx, rows, QueryOptions{Clip: clip, Pass: p})
		if err != nil {
			return fmt.Errorf("modeler: confirmation pass %d of rows %v: %w", p, rows, err)
		}
		if len(obs) != len(rows) {
			return fmt.Errorf("modeler: curator answered %d observations for %d indices", len(obs), len(rows))
		}
		s.budget = budget
		for j, o := range obs {
			if o.Index != rows[j] {
				return fmt.Errorf("modeler: curator answered row %d in place of row %d", o.Index, rows[j])
			}
			c := o.Clip
			if c.IsZero() {
				c = clip
			}
			if err := s.observeNoise(o.Index, s.cfg.Direction.Sign()*o.Value, s.noiseFactor(c)); err != nil {
				return fmt.Errorf("modeler: confirmation pass %d: %w", p, err)
			}
			s.res.Confirmed = append(s.res.Confirmed, Confirmation{Pass: p, Index: o.Index, Value: o.Value})
		}
	}
	return nil
}

// robustRecommend conditions the GP on the answers under their Laplace likelihood: the
// Laplace of scale b is a Gaussian scale mixture (noise N(0, v), v exponential with mean
// 2b²), so EM for the posterior mode reweights each answer j to the Gaussian variance
// v_j = b_j·|r_j|, r_j its residual from the current posterior mean (E[1/v | r] =
// 1/(b|r|)), and refits; a few iterations converge. |r_j| is floored at b_j/2 so that no
// answer is trusted more than a Gaussian of variance b_j²/2. b_j is the scale of answer
// j's own range (its noise factor). Iteratively reweighted least squares for a Laplace
// likelihood: Rasmussen & Williams 2006, §9.3 (non-Gaussian likelihoods); Dempster,
// Laird & Rubin 1977 (EM).
func (s *session) robustRecommend() {
	base := s.baseNF
	idx, ys := s.post.Observed()
	if len(idx) < 2 || len(base) != len(idx) {
		return
	}
	bPub := s.res.AnswerNoiseSD / math.Sqrt2
	nf := make([]float64, len(base))
	for range 10 {
		for j, i := range idx {
			b := bPub * math.Sqrt(base[j])
			r := max(math.Abs(ys[j]-s.post.Mean(i)), b/2)
			nf[j] = b * r / (2 * bPub * bPub)
		}
		if err := s.post.SetNoiseFactors(nf); err != nil {
			_ = s.post.SetNoiseFactors(base) // the Gaussian posterior, as before
			return
		}
	}
}

// bestQueried is the queried row with the highest posterior mean (of the GP's Sign·y),
// −1 before the first answer.
func (s *session) bestQueried() int {
	best, m := -1, math.Inf(-1)
	for _, i := range s.res.Queried {
		if v := s.post.Mean(i); best < 0 || v > m {
			best, m = i, v
		}
	}
	return best
}

// topQueried is the k distinct queried rows with the highest posterior mean, best first.
func (s *session) topQueried(k int) []int {
	var rows []int
	seen := map[int]bool{}
	for _, i := range s.res.Queried {
		if !seen[i] {
			seen[i] = true
			rows = append(rows, i)
		}
	}
	slices.SortStableFunc(rows, func(a, b int) int { return cmp.Compare(s.post.Mean(b), s.post.Mean(a)) })
	return rows[:min(k, len(rows))]
}

func checkBatch(q, maxIndices int) error {
	if maxIndices > 0 && q > maxIndices {
		return fmt.Errorf("modeler: batch %d exceeds the curator's %d indices per query", q, maxIndices)
	}
	return nil
}

// session is one study's GP and results while it runs.
type session struct {
	cfg    Config
	cur    Curator
	z      []float64
	n, dim int
	post   *gpucb.Posterior
	acq    gpucb.Acquisition // the rule that chooses rows from post: GP-UCB's
	res    *Result
	budget study.Budget
	rounds int
	// answers is the family of the curator's answers' noise.
	answers noise.Family
	// baseNF is each observation's noise factor from its range (noiseFactor), in the
	// order observed: what robustRecommend starts from. robust is set once
	// robustRecommend reweighted the GP.
	baseNF []float64
	robust bool
	// public is the curator's public output range (zero for exact answers): an answer
	// clipped to a narrower range has the noise variance of the prior times
	// (width / public width)² (noiseFactor).
	public Clip
}

// checkRows refuses more iterations than rows when a row may be queried only once.
func checkRows(iterations, n int, allowRepeats bool) error {
	if iterations > n && !allowRepeats {
		return fmt.Errorf("modeler: %d iterations exceed the %d rows; allow repeats or ask for fewer", iterations, n)
	}
	return nil
}

// lazyColumnBytes bounds the memory of the columns of V a study's GP keeps (gpucb's
// PosteriorConfig.LazyColumns): 1 GiB, all of a 10⁶-row study's at 50 iterations, a
// quarter of a 10⁷-row one's.
const lazyColumnBytes = 1 << 30

// newSession builds the GP over Z for answers released under op (the curator's output
// privacy, which sets the prior when cfg leaves the variances at 0: Config.prior), Z
// carrying Gaussian noise of sd noiseSD in every entry (0: none; Config.ProjectionNoise).
func newSession(cfg Config, cur Curator, z []float64, n, dim int, op study.OutputPrivacy, noiseSD float64) (*session, error) {
	if err := checkRows(cfg.Iterations, n, cfg.AllowRepeats); err != nil {
		return nil, err
	}
	if !(noiseSD >= 0) || math.IsInf(noiseSD, 0) {
		return nil, fmt.Errorf("modeler: the projection's noise sd must be ≥ 0 and finite, got %g", noiseSD)
	}
	// The answers' noise is the curator's statement; the modeler calibrates nothing.
	an, err := op.AnswerNoise()
	if err != nil {
		return nil, fmt.Errorf("modeler: the curator's output privacy: %w", err)
	}
	inVar := 0.0
	if cfg.ProjectionNoise != ProjectionNoiseIgnore {
		inVar = noiseSD * noiseSD
	}
	ls := cfg.Lengthscale
	if ls == 0 {
		ls = gpucb.DefaultLengthscale(z, n, dim)
		if inVar > 0 && cfg.ProjectionNoise == ProjectionNoiseModel {
			ls = gpucb.DebiasLengthscale(ls, dim, inVar)
		}
	}
	signal, noise, answerNoise, err := cfg.prior(op)
	if err != nil {
		return nil, err
	}
	gcfg := cfg.gpConfig(ls, signal, noise)
	gcfg.InputNoiseVariance = inVar
	// Lazy (gpucb's "Lazy evaluation") chooses exactly as the eager GP, and the robust
	// recommendation's reweightings (SetNoiseFactors) then cost O(n + T³) each instead of
	// a pass over every row's column.
	gcfg.Lazy, gcfg.LazyColumns = true, gpucb.LazyColumnsWithin(lazyColumnBytes, n, gcfg.Capacity)
	post, err := gpucb.NewPosterior(z, n, dim, gcfg.Posterior())
	if err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	answerSD := an.SD
	res := &Result{Rows: n, R: dim, Direction: cfg.Direction.String(), BestIndex: -1, BestValue: math.Inf(-1) * cfg.Direction.Sign(), Batch: cfg.Batch,
		Lengthscale: ls, SignalVariance: signal, NoiseVariance: noise, AnswerNoiseVariance: answerNoise,
		ProjectionNoiseSD: noiseSD, InputNoiseVariance: inVar, AnswerNoiseSD: answerSD}
	if !op.Exact() {
		res.AnswersRange = &[2]float64{op.Lower, op.Upper}
	}
	if noiseSD > 0 {
		res.ProjectionNoise = cfg.ProjectionNoise.String()
	}
	var public Clip
	if !op.Exact() {
		public = Clip{op.Lower, op.Upper}
	}
	if !cfg.Clip.IsZero() {
		if err := checkAnswerOptions(&cfg, op); err != nil {
			return nil, err
		}
		res.AnswersClip = &[2]float64{cfg.Clip.Lower, cfg.Clip.Upper}
		res.AnswerClipNoiseSD = answerSD * (cfg.Clip.Upper - cfg.Clip.Lower) / (op.Upper - op.Lower)
	}
	if !op.Exact() && (cfg.SignalVariance == 0 || cfg.NoiseVariance == 0) {
		res.NoisePrior = string(NoiseRule)
	}
	return &session{cfg: cfg, cur: cur, z: z, n: n, dim: dim, post: post, acq: gcfg.UCB(), res: res, public: public, answers: an.Noise}, nil
}

// noiseFactor is the noise variance of an answer clipped to c relative to one clipped
// to the public range: (width / public width)², since every mechanism's noise scale is
// proportional to the sensitivity, the range's width. The zero Clip (unknown: a stored
// observation) takes the study's Config.Clip.
func (s *session) noiseFactor(c Clip) float64 {
	if c.IsZero() {
		c = s.cfg.Clip
	}
	if c.IsZero() || s.public.IsZero() {
		return 1
	}
	r := (c.Upper - c.Lower) / (s.public.Upper - s.public.Lower)
	return r * r
}

// observeNoise conditions the GP on answer y (the GP's sign) at row i with noise factor
// f, its range's (noiseFactor), and keeps f for robustRecommend.
func (s *session) observeNoise(i int, y, f float64) error {
	if err := s.post.ObserveNoise(i, y, f); err != nil {
		return err
	}
	s.baseNF = append(s.baseNF, f)
	return nil
}

// observe conditions the GP on one real answer, clipped to clip, and updates the result.
func (s *session) observe(iteration, round, i int, y float64, clip Clip) error {
	sy := s.cfg.Direction.Sign() * y
	if err := s.observeNoise(i, sy, s.noiseFactor(clip)); err != nil {
		return fmt.Errorf("modeler: iteration %d: %w", iteration, err)
	}
	s.res.Queried = append(s.res.Queried, i)
	s.res.Values = append(s.res.Values, y)
	if s.cfg.Direction.Better(y, s.res.BestValue) {
		s.res.BestValue, s.res.BestIndex = y, i
	}
	s.res.Iterations = iteration
	s.rounds = max(s.rounds, round)
	s.res.Rounds = s.rounds
	return nil
}

// observeRound conditions the GP on one round's answers in order, calling each (if set)
// after each of them, and then refits the hyperparameters if the round took the number
// of answers to or past a multiple of Config.FitEvery. The live loop and the replay of a
// stored study both go through it, so that both refit at the same points.
func (s *session) observeRound(recs []study.Observation, clips []Clip, each func(study.Observation)) error {
	before := s.post.T()
	for k, r := range recs {
		var c Clip
		if clips != nil {
			c = clips[k]
		}
		if err := s.observe(r.Iteration, r.Round, r.Index, r.Value, c); err != nil {
			return err
		}
		if each != nil {
			each(r)
		}
	}
	s.refit(before)
	return nil
}

// refit fits the hyperparameters by maximum likelihood when the answers went from before
// to t ≥ 3 across a multiple of k = Config.FitEvery (for one answer per round: when
// t % k = 0, pkg/simulate's rule). A failed fit leaves the GP as it was (gpucb.Posterior.Refit
// guarantees it) and the study goes on with the previous hyperparameters: which
// happens is as deterministic as the fit itself.
func (s *session) refit(before int) {
	k, t := s.cfg.FitEvery, s.post.T()
	if k <= 0 || t < 3 || t/k == before/k {
		return
	}
	h, err := s.post.Refit(gpucb.FitOptions{Seed: fitSeed(t)})
	if err != nil {
		return
	}
	s.res.Lengthscale, s.res.SignalVariance, s.res.NoiseVariance = h.Lengthscale, h.SignalVariance, h.NoiseVariance
	s.res.Refits++
}

// fitSeed is the seed of the random restarts of the fit after t answers. It is a fixed
// function of t so that a resumed study, which replays its refits, fits exactly as an
// uninterrupted one. The restarts only search the likelihood of data the modeler already
// holds (Z and released answers); they protect nothing, so a seeded generator is the
// right tool. (SplitMix64's finaliser, to spread consecutive t over the seed space.)
func fitSeed(t int) uint64 {
	h := uint64(t) + 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31
}

// loop runs the remaining rounds, starting from the answers already observed; the first
// round (t = 0) is the initial row alone. record, if set, is called with every round's
// answers before they enter the GP.
func (s *session) loop(ctx context.Context, initial int, record func([]study.Observation, study.Budget) error) error {
	for t := s.post.T(); t < s.cfg.Iterations; {
		var batch []int
		if t == 0 {
			batch = []int{initial}
		} else {
			var err error
			if batch, err = s.chooseBatch(min(s.cfg.Batch, s.cfg.Iterations-t)); err != nil {
				return fmt.Errorf("modeler: iteration %d: %w", t+1, err)
			}
		}
		obs, budget, err := s.query(ctx, batch)
		if err != nil {
			return fmt.Errorf("modeler: query of rows %v: %w", batch, err)
		}
		if len(obs) != len(batch) {
			return fmt.Errorf("modeler: curator answered %d observations for %d indices", len(obs), len(batch))
		}
		round := s.rounds + 1
		recs := make([]study.Observation, len(batch))
		clips := make([]Clip, len(batch))
		now := time.Now()
		for k, o := range obs {
			clips[k] = o.Clip
			if o.Index != batch[k] {
				return fmt.Errorf("modeler: curator answered row %d in place of row %d", o.Index, batch[k])
			}
			recs[k] = study.Observation{Iteration: t + 1 + k, Round: round, Index: batch[k], Value: o.Value,
				Replayed: o.Replayed, Time: now}
		}
		s.budget = budget
		if record != nil {
			if err := record(recs, s.budget); err != nil {
				return err
			}
		}
		var progress func(study.Observation)
		if s.cfg.Progress != nil {
			progress = func(r study.Observation) {
				s.cfg.Progress(Step{Iteration: r.Iteration, Round: r.Round, Index: r.Index, Value: r.Value,
					BestIndex: s.res.BestIndex, BestValue: s.res.BestValue, Replayed: r.Replayed,
					EpsilonRemaining: s.budget.EpsilonRemaining, DeltaRemaining: s.budget.DeltaRemaining})
			}
		}
		if err := s.observeRound(recs, clips, progress); err != nil {
			return err
		}
		t += len(batch)
	}
	return nil
}

// query asks the curator for rows (Curator.Query, which waits for a curator that is
// down and asks again after transient failures), reporting through Config.Waiting while
// the answers do not come.
func (s *session) query(ctx context.Context, rows []int) ([]Answer, study.Budget, error) {
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	if s.cfg.Waiting != nil {
		notice := s.cfg.WaitNotice
		if notice <= 0 {
			notice = 2 * time.Second
		}
		go func() {
			t := time.NewTimer(notice)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					s.cfg.Waiting(rows, time.Since(start))
					t.Reset(30 * time.Second)
				}
			}
		}()
	}
	return s.queryWith(ctx, rows, QueryOptions{Clip: s.cfg.Clip})
}

// queryWith is Curator.Query with opt, refused when the curator connection cannot take
// options other than the zero ones.
func (s *session) queryWith(ctx context.Context, rows []int, opt QueryOptions) ([]Answer, study.Budget, error) {
	if opt == (QueryOptions{}) {
		return s.cur.Query(ctx, rows)
	}
	cq, ok := s.cur.(OptionQuerier)
	if !ok {
		return nil, study.Budget{}, errors.New("modeler: this curator connection cannot ask for a clip range or a confirmation pass")
	}
	return cq.QueryWith(ctx, rows, opt)
}

func (s *session) finish() *Result {
	if s.cfg.RecommendLikelihood != LikelihoodGaussian && s.res.AnswerNoiseSD > 0 && s.answers == noise.Laplace {
		if !s.robust { // once: finish may run again (an interrupted study's result)
			g := s.bestQueried()
			s.res.GaussianRecommended = &g
			s.robustRecommend()
			s.robust = true
		}
		s.res.RecommendLikelihood = LikelihoodLaplace
	} else {
		s.res.RecommendLikelihood = LikelihoodGaussian
	}
	s.res.Recommended, s.res.RecommendedMean = -1, math.Inf(-1)
	for _, i := range s.res.Queried {
		if m := s.post.Mean(i); s.res.Recommended < 0 || m > s.res.RecommendedMean {
			s.res.Recommended, s.res.RecommendedMean = i, m
		}
	}
	s.res.RecommendedMean *= s.cfg.Direction.Sign() // the GP's mean is of Sign·y
	if s.res.Recommended >= 0 {
		s.res.RecommendedSD = math.Sqrt(s.post.Variance(s.res.Recommended)) // of Sign·y too: the same sd
	} else { // nothing answered yet (an interrupted study): no ±Inf, which JSON cannot hold
		s.res.RecommendedMean, s.res.BestValue = 0, 0
	}
	b := s.budget
	s.res.EpsilonSpent, s.res.DeltaSpent = b.EpsilonSpent, b.DeltaSpent
	s.res.EpsilonRemaining, s.res.DeltaRemaining = b.EpsilonRemaining, b.DeltaRemaining
	return s.res
}

func initialIndex(i, n int) (int, error) {
	if i >= 0 {
		if i >= n {
			return 0, fmt.Errorf("modeler: initial index %d is out of range [0, %d)", i, n)
		}
		return i, nil
	}
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("modeler: %w", err)
	}
	return int(v.Int64()), nil
}
