package dphypo

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/gpucb"
)

// Config describes one DP-HyPO search.
type Config struct {
	// Theta θ > −1 and Gamma γ ∈ (0, 1) of the run count T ~ NegBin(θ, γ).
	Theta, Gamma float64
	// C ≥ 1 and Cmin = c ∈ (0, 1] bound the sampling density:
	// c ≤ π̃(λ)·N ≤ C. C = c = 1 is uniform random search.
	C, Cmin float64
	// Tau τ ≥ 0 weighs the GP's standard deviation in s = µ + τσ; Beta
	// β ≥ 0 is the inverse temperature of π ∝ exp(β s). The paper uses
	// τ = 0.1, β = 1. Ignored with Uniform.
	Tau, Beta float64
	// Uniform keeps π = π(0) (Algorithm 2 of the paper) instead of the GP
	// rule (Algorithm 3).
	Uniform bool
	// Candidates are the N hyperparameter points as coordinates for the
	// GP kernel, row-major N×Dim (for example hparam.Space.Coords). With
	// Uniform they may be nil, N alone giving the grid size.
	Candidates []float64
	N, Dim     int
	// Lengthscale of the Matérn-5/2 kernel; 0 selects
	// gpucb.DefaultLengthscale of the candidates.
	Lengthscale float64
	// NoiseVariance of the GP in standardised score units; 0 selects
	// DefaultNoiseVariance. Scores are noisy (they are DP releases), and
	// the same λ is often drawn twice, so it must be positive.
	NoiseVariance float64
	// Scale is the unit of the scores s = µ + τσ in exp(β s); the zero
	// value is ScaleStandardised.
	Scale ScoreScale
}

// ScoreScale says in which unit the GP rule's scores s_λ = µ_λ + τσ_λ enter
// π(λ) ∝ exp(β s_λ). The paper (Algorithm 3) does not say; the unit decides
// how far π can move for a given β, and so whether the density bounds C, c —
// whose privacy cost is paid either way — are used at all.
type ScoreScale int

const (
	// ScaleStandardised divides s_λ by the sample standard deviation of the
	// scores seen so far (1 until two of them differ): β is the inverse
	// temperature per standard deviation of the observed scores, the same
	// whatever the score's unit. With β = 1, π then varies over an order of
	// magnitude between the best and the worst region (the projection onto
	// S_{C,c} caps it at C/c), so the density bounds are used. The default.
	ScaleStandardised ScoreScale = iota
	// ScaleRaw takes s_λ in the base algorithm's own unit. For accuracies in
	// [0, 1] and β = 1, π moves by less than a factor e over the whole
	// range, so the search stays close to uniform while paying the density
	// bounds' cost (privbo's behaviour before ScaleStandardised).
	ScaleRaw
)

// String returns "standardised" or "raw".
func (s ScoreScale) String() string {
	switch s {
	case ScaleStandardised:
		return "standardised"
	case ScaleRaw:
		return "raw"
	}
	return fmt.Sprintf("ScoreScale(%d)", int(s))
}

// DefaultNoiseVariance is the GP noise variance (standardised units) used
// when Config.NoiseVariance is 0.
const DefaultNoiseVariance = 0.1

// Validate reports whether c describes a search that can run, with an
// error a person can act on.
func (c Config) Validate() error {
	if err := validateNegBin(c.Theta, c.Gamma); err != nil {
		return err
	}
	if !(c.Cmin > 0) {
		return fmt.Errorf("dphypo: lower density bound c must be positive, got %g", c.Cmin)
	}
	if c.Cmin > 1 {
		return fmt.Errorf("dphypo: lower density bound c must be ≤ 1 (no density can exceed the uniform one everywhere), got %g", c.Cmin)
	}
	if c.C < 1 {
		return fmt.Errorf("dphypo: upper density bound C must be ≥ 1 (no density can stay below the uniform one everywhere), got %g", c.C)
	}
	if math.IsInf(c.C, 0) || math.IsNaN(c.C) {
		return fmt.Errorf("dphypo: upper density bound C must be finite, got %g", c.C)
	}
	if c.N < 1 {
		return fmt.Errorf("dphypo: the hyperparameter grid is empty (N = %d)", c.N)
	}
	if c.Uniform {
		if c.Candidates != nil && (c.Dim < 1 || len(c.Candidates) != c.N*c.Dim) {
			return fmt.Errorf("dphypo: %d candidate coordinates for N×Dim = %d×%d", len(c.Candidates), c.N, c.Dim)
		}
		return nil
	}
	if c.Dim < 1 || c.N > math.MaxInt/c.Dim || len(c.Candidates) != c.N*c.Dim {
		return fmt.Errorf("dphypo: the GP rule needs N×Dim = %d×%d candidate coordinates, got %d values", c.N, c.Dim, len(c.Candidates))
	}
	for k, x := range c.Candidates {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("dphypo: candidate %d, coordinate %d is not finite (%g)", k/c.Dim, k%c.Dim, x)
		}
	}
	if c.Scale != ScaleStandardised && c.Scale != ScaleRaw {
		return fmt.Errorf("dphypo: unknown score scale %d", int(c.Scale))
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"tau", c.Tau}, {"beta", c.Beta}, {"lengthscale", c.Lengthscale}, {"noise variance", c.NoiseVariance}} {
		if !(p.v >= 0) || math.IsInf(p.v, 0) {
			return fmt.Errorf("dphypo: %s must be finite and ≥ 0, got %g", p.name, p.v)
		}
	}
	return nil
}

// Base is one differentially private base algorithm M_λ per grid point.
// Run trains with hyperparameter i ∈ [0, N) on the protected data and
// returns the run's noisy score q (higher is better); the model stays with
// the caller, which keeps the one of the best run. Every Run must satisfy
// the per-run guarantee the search was accounted for (for example an RDP
// curve given to dp.DPHyPORDP), whatever i is.
type Base interface {
	Run(ctx context.Context, i int) (score float64, err error)
}

// Progress reports that one more base run finished. It deliberately
// carries no score and no hyperparameter: DP-HyPO's guarantee covers only
// the best run's output, not the intermediate scores or choices.
//
// Run counts are not covered either: T is part of the secret state, and
// the theorems need it hidden (with T known, releasing the best of T runs
// costs up to T times a run's ε). Progress events — their number, their
// timing and Run — reveal T, so they are for the curator's operator only;
// do not forward them to the modeler before the search is over and its
// result released, and even then the elapsed time and event count reveal
// T. The same holds for Result.Runs.
type Progress struct {
	Run     int // 1-based number of base runs finished so far
	Message string
	// Err is the run's error if it failed (it was kept with score −∞), for the
	// operator's log only.
	Err error
	// Index is the grid point the run used, Score its score (0 if it failed), and
	// Sampling the distribution π̃ (N values, summing to 1) the point was drawn
	// from: the search's path, for the curator's operator only (none of it is
	// covered by the guarantee). Sampling is a fresh slice per run.
	Index    int
	Score    float64
	Sampling []float64
}

// Result is the outcome of a search.
type Result struct {
	BestIndex int     // grid index of the run with the highest score (first one on ties)
	BestScore float64 // its noisy score
	Runs      int     // T: operator-only, see Progress
	Failed    int     // runs that failed and were kept with score −∞: operator-only, like Runs
}

// ErrAllRunsFailed is returned by Run when every base run failed. It names no run and
// no run count.
var ErrAllRunsFailed = errors.New("dphypo: every base run of the search failed")

// Run executes DP-HyPO (Wang et al. 2023, Framework 1 / Algorithms 2–3):
//
//	draw T ~ NegBin(θ, γ); π(0) = uniform on the N grid points
//	for j = 0 … T−1:
//	    π̃ = projection of π(j) onto S_{C,c}; i ~ π̃ (exact, from src)
//	    q_j = base.Run(i)
//	    GP rule: fit the GP to all (λ, q) so far, s = µ + τσ,
//	             π(j+1) ∝ exp(β s) (log-sum-exp); uniform rule: π(j+1) = π(0)
//	return the run with the highest q
//
// All randomness of the search (T and every λ) comes from src; use
// dp.CryptoSource for real searches. A base run that fails (an error other
// than the context's, or a non-finite score) is kept as a run with score −∞:
// it can never be selected, the GP rule does not observe it (π stays as it
// was, a rule that depends only on what was kept), and the search goes on.
// Aborting instead would reveal that a particular run, not the best one,
// failed, which the guarantee does not cover. If every run failed, Run
// returns ErrAllRunsFailed, which names no run. If ctx is cancelled, Run
// returns the context's error and no result. Either way the privacy cost of
// the runs already made is spent, so charge the whole search before calling
// Run. progress may be nil.
func Run(ctx context.Context, src *dp.Source, cfg Config, base Base, progress func(Progress)) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if base == nil {
		return Result{}, errors.New("dphypo: nil base algorithm")
	}
	t, err := SampleNegBin(src, cfg.Theta, cfg.Gamma)
	if err != nil {
		return Result{}, err
	}
	pi := uniform(cfg.N)
	var gp *gpucb.GP
	if !cfg.Uniform {
		if gp, err = newScoreGP(cfg, t); err != nil {
			return Result{}, err
		}
	}
	res := Result{BestIndex: -1, BestScore: math.Inf(-1), Runs: t}
	logits := make([]float64, cfg.N)
	var seen scoreMoments
	for j := range t {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("dphypo: search stopped after %d runs: %w", j, err)
		}
		proj, err := ProjectDensity(pi, cfg.C, cfg.Cmin)
		if err != nil {
			return Result{}, err
		}
		i, err := sampleIndex(src, proj, cfg.C, cfg.Cmin)
		if err != nil {
			return Result{}, err
		}
		q, err := base.Run(ctx, i)
		if err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
			return Result{}, fmt.Errorf("dphypo: base run %d: %w", j+1, err)
		}
		if err == nil && (math.IsNaN(q) || math.IsInf(q, 0)) {
			err = errors.New("non-finite score")
		}
		if err != nil { // kept with score −∞: never selected, not observed
			res.Failed++
			if progress != nil {
				progress(Progress{Run: j + 1, Message: fmt.Sprintf("base run %d failed; kept with score −∞", j+1), Err: err,
					Index: i, Sampling: proj})
			}
			continue
		}
		if q > res.BestScore {
			res.BestIndex, res.BestScore = i, q
		}
		if gp != nil {
			if err := gp.Observe(i, q); err != nil {
				return Result{}, fmt.Errorf("dphypo: %w", err)
			}
			seen.add(q)
			beta := cfg.Beta
			if cfg.Scale == ScaleStandardised {
				beta /= seen.sd()
			}
			softmaxScores(gp, cfg.Tau, beta, logits, pi)
		}
		if progress != nil {
			progress(Progress{Run: j + 1, Message: fmt.Sprintf("base run %d finished", j+1), Index: i, Score: q, Sampling: proj})
		}
	}
	if res.BestIndex < 0 {
		return Result{}, ErrAllRunsFailed
	}
	return res, nil
}

// newScoreGP returns the GP that models the scores of the GP rule: Matérn 5/2
// with cfg's lengthscale (default: the candidates' median distance to their
// mean) and noise variance (default DefaultNoiseVariance), unit signal
// variance, on standardised scores, sized for runs observations.
func newScoreGP(cfg Config, runs int) (*gpucb.GP, error) {
	ls := cfg.Lengthscale
	if ls == 0 {
		ls = gpucb.DefaultLengthscale(cfg.Candidates, cfg.N, cfg.Dim)
	}
	nv := cfg.NoiseVariance
	if nv == 0 {
		nv = DefaultNoiseVariance
	}
	gp, err := gpucb.New(cfg.Candidates, cfg.N, cfg.Dim, gpucb.Config{
		Kernel: gpucb.Matern52, Lengthscale: ls, SignalVariance: 1, NoiseVariance: nv,
		ConstantBeta: 1, Standardise: true, Workers: 1, Capacity: min(runs, 4096),
	})
	if err != nil {
		return nil, fmt.Errorf("dphypo: %w", err)
	}
	return gp, nil
}

// scoreMoments tracks the mean and variance of the scores observed
// (Welford's recurrence).
type scoreMoments struct {
	n       int
	mean, m float64
}

func (s *scoreMoments) add(q float64) {
	s.n++
	d := q - s.mean
	s.mean += d / float64(s.n)
	s.m += d * (q - s.mean)
}

// sd returns the sample standard deviation, or 1 with fewer than two scores
// or when it is 0 or not finite (as gpucb standardises).
func (s *scoreMoments) sd() float64 {
	if s.n < 2 {
		return 1
	}
	if sd := math.Sqrt(s.m / float64(s.n-1)); sd > 0 && !math.IsInf(sd, 0) {
		return sd
	}
	return 1
}

// softmaxScores sets pi ∝ exp(β(µ_i + τσ_i)), normalised with the
// log-sum-exp shift.
func softmaxScores(gp *gpucb.GP, tau, beta float64, logits, pi []float64) {
	m := math.Inf(-1)
	for i := range logits {
		s := gp.Mean(i) + tau*math.Sqrt(max(gp.Variance(i), 0))
		logits[i] = beta * s
		m = max(m, logits[i])
	}
	var z float64
	for i, l := range logits {
		pi[i] = math.Exp(l - m)
		z += pi[i]
	}
	for i := range pi {
		pi[i] /= z
	}
}
