package modeler

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/study"
)

// Bind declares the study settings of c, each once: its field, its name (the flag of
// `modeler run` and the name a study stores it under, study.Settings), its help and its
// range. Defaults are c's values, NewConfig's for a command line. Validation uses the
// same ranges (Config.defaults: a zero field is unset), so the library and the command
// line refuse alike, and a refusal names the flag. A setting whose text refuses what is
// out of range (r, the clip ranges) has no range of its own: defaults checks the values
// a program can give.
func (c *Config) Bind() *setting.Set {
	leaveOut := func(what string) string { return "leave it out for " + what }
	return setting.New(
		setting.Parsed[rText](&c.R, "r", nil, "projection dimension r, or auto: chosen by the curator from the dataset's n and d and the release's (ε, δ) (docs/MATHS.md §2.6; never above d)"),
		setting.Float(&c.Epsilon, "epsilon", setting.Positive.Why(leaveOut("the curator's default study")), "ε of the projection release (default: the curator's default study's, stated in its quote before anything is charged)"),
		setting.Float(&c.Delta, "delta", setting.Open01.Why(leaveOut("the curator's default study")), "δ of the projection release (default: the curator's default study's, at most what this identity can still spend)"),
		setting.String(&c.Label, "label", "ask for an independent release with the same parameters (costs again)"),
		setting.Int(&c.Iterations, "iterations", setting.AtLeast(1), "number of queries T (with --study on a stored study: a new T, at least the number recorded, extends or shortens it)"),
		setting.Int(&c.Batch, "batch", setting.AtLeast(1), "rows chosen per round and sent in one query (GP-BUCB when > 1)"),
		setting.Parsed[KernelText](&c.Kernel, "kernel", nil, "GP kernel: se (squared exponential) or matern52"),
		setting.Float(&c.Lengthscale, "lengthscale", setting.Positive.Why(leaveOut("the median distance of the released rows to their mean")), "kernel lengthscale (default: the median distance of the released rows to their mean)"),
		setting.Float(&c.SignalVariance, "signal-variance", setting.Positive.Why(leaveOut("the default prior")), "kernel signal variance σ_y² (standardised outputs; default: 1, or with private answers the noise-aware prior's)"),
		setting.Float(&c.NoiseVariance, "noise-variance", setting.Positive.Why(leaveOut("the default prior")), "observation noise variance σ_n² (standardised outputs; default: 1e-3, or with private answers the noise-aware prior's σ_n²/s_f²)"),
		setting.Int(&c.FitEvery, "fit-every", setting.AtLeast(0), "refit lengthscale, signal and noise variance by maximum likelihood every K observations, from the third on (0: fixed)"),
		setting.Float(&c.DeltaUCB, "delta-ucb", setting.Open01, "δ' of the β_t schedule"),
		setting.Float(&c.ConstantBeta, "beta", setting.NonNegative, "constant β instead of the schedule (0: use the schedule)"),
		setting.Bool(&c.AllowRepeats, "allow-repeats", "let GP-UCB choose rows it has already queried"),
		setting.Bool(&c.RawOutputs, "raw-outputs", "do not standardise outputs"),
		setting.Int(&c.InitialIndex, "initial-index", setting.AtLeast(-1), "first row to query (default: uniformly random)"),
		setting.Parsed[DirectionText](&c.Direction, "direction", nil, "maximize or minimize the answers (as Vizier's goal and Optuna's direction)"),
		setting.Parsed[clipText](&c.Clip, "answer-clip", nil, "LOWER,UPPER: ask the curator to clip every answer to this range inside its public output range, for noise calibrated to its width at the same ε and charge (rows below LOWER all answer about LOWER), or public (default: the public range)"),
		setting.Int(&c.ConfirmRows, "confirm-rows", setting.AtLeast(0), "after the study, answer again the K queried rows with the highest posterior mean (confirmation passes, each charged the curator's ε_out again; 0: none)"),
		setting.Int(&c.ConfirmPasses, "confirm-passes", setting.AtLeast(1), "with --confirm-rows: the number of confirmation passes (each a charge of ε_out)"),
		setting.Parsed[clipText](&c.ConfirmClip, "confirm-clip", nil, "with --confirm-rows: LOWER,UPPER, the clip range of the confirmation answers (default: --answer-clip's)"),
		setting.Parsed[likelihoodText](&c.RecommendLikelihood, "recommend-likelihood", nil, "laplace (default) or gaussian: with Laplace answers, recommend under their own Laplace likelihood, or under a Gaussian of the same variance (the rule before; both rows are printed)"),
		setting.Parsed[ProjectionNoiseText](&c.ProjectionNoise, "projection-noise", nil, "how the GP treats the Gaussian noise the curator states for the projection: model (expected kernel and de-biased default lengthscale), kernel (expected kernel only) or ignore (treat the rows as exact)"),
		setting.Bool(&c.WideProjection, "allow-r-above-d", "allow --r above the dataset's number of features (no more information, more noise; for reproducing the paper's lifted runs: the curator refuses it unless it runs the lifted mechanism)"),
	)
}

// rText writes a projection dimension, or auto (0: the curator chooses it,
// Quote.RChoice).
type rText struct{}

func (rText) Format(r int) string {
	if r == 0 {
		return "auto"
	}
	return strconv.Itoa(r)
}

func (rText) Parse(s string) (int, error) {
	if s == "auto" {
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, errors.New("want a positive integer or auto")
	}
	return v, nil
}

// KernelText writes a gpucb.Kernel: se or matern52.
type KernelText struct{}

func (KernelText) Format(k gpucb.Kernel) string { return k.String() }
func (KernelText) Parse(s string) (gpucb.Kernel, error) {
	return choice(gpucb.ParseKernel, s, "se or matern52")
}

// DirectionText writes a study.Direction: maximize or minimize.
type DirectionText struct{}

func (DirectionText) Format(d study.Direction) string { return d.String() }
func (DirectionText) Parse(s string) (study.Direction, error) {
	return choice(study.ParseDirection, s, "maximize or minimize")
}

// ProjectionNoiseText writes a ProjectionNoise: model, kernel or ignore.
type ProjectionNoiseText struct{}

func (ProjectionNoiseText) Format(p ProjectionNoise) string { return p.String() }
func (ProjectionNoiseText) Parse(s string) (ProjectionNoise, error) {
	return choice(ParseProjectionNoise, s, "model, kernel or ignore")
}

// choice is parse(s), refused as "want " + want.
func choice[T any](parse func(string) (T, error), s, want string) (T, error) {
	v, err := parse(s)
	if err != nil {
		return v, errors.New("want " + want)
	}
	return v, nil
}

// clipText writes a Clip: LOWER,UPPER or public.
type clipText struct{}

func (clipText) Parse(s string) (Clip, error) { return ParseClip(s) }
func (clipText) Format(c Clip) string {
	if c.IsZero() {
		return "public"
	}
	return c.String()
}

// likelihoodText writes Config.RecommendLikelihood: laplace or gaussian ("", a stored
// default, is laplace).
type likelihoodText struct{}

func (likelihoodText) Format(s string) string {
	if s == "" {
		return LikelihoodLaplace
	}
	return s
}

func (likelihoodText) Parse(s string) (string, error) {
	if s != "" && s != LikelihoodLaplace && s != LikelihoodGaussian {
		return "", fmt.Errorf("want laplace or gaussian, got %q", s)
	}
	return s, nil
}
