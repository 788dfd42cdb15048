package kusner

import (
	"cmp"
	"errors"
	"fmt"
	"math"
)

// What a release will be worth, stated before it is paid for.
//
// Kusner et al.'s sensitivities hold for a unit-variance GP prior and do not shrink with
// the data: at T = 10 on a grid of 16, Δu = 2√β_{T+1} + c ≈ 13–16, so the exponential
// mechanism Pr[λ] ∝ exp(ε µ_T(λ)/(2Δu)) at ε = 1 moves no candidate's probability by
// more than a few per cent from a uniform pick when the objective (an accuracy) spans
// one unit. Forecast says so from public quantities only — |Λ|, T, δ, k1, σ², ε, γ_T's
// bound, the objective's public range — before anything is charged.
//
// Selection (λ̃, Algorithms 1 and 2). Let s = ε/(2Δu), N = |Λ|, R the spread of the
// posterior mean µ_T over Λ (at most the objective's range), g a gap. If exactly one
// candidate lies within g of the posterior maximum, the mechanism picks it with
// probability
//
//	1/(1 + (N−1) e^{−s g})  ≤  P  ≤  1/(1 + (N−1) e^{−s R}),
//
// the lower bound when every other candidate sits just below g, the upper when all lie a
// full R below; a uniform pick has 1/N. The upper bound over 1/N, N/(1 + (N−1)e^{−sR}),
// is the most the mechanism can favour any one candidate over a uniform pick, whatever
// the data: below 1 + Margin the release is no better than a uniform pick by that margin.
// It reaches 1 + m at ε = 2Δu·s*, s* = −log((N/(1+m) − 1)/(N−1))/R (for N > 1 + m).
//
// Value (ṽ, f̃, f̃_L). The Laplace release is within g of the value it perturbs with
// probability 1 − e^{−g/b}, b = Δ/ε its scale; a value guessed uniformly in the range
// [a, a + R] is within g of any point with probability at most 2g/R. The ratio is the
// value's lift; it reaches 1 + m at b* = −g/log(1 − (1+m)·2g/R), ε = Δ/b*.
//
// A job is informative when either release's lift reaches 1 + Margin. (For Algorithm 3,
// which releases no hyperparameter, only the value counts.)

// ForecastMargin is the lift over a uniform pick (or guess) below which a release is
// called no better than uniform: 10%.
const ForecastMargin = 0.1

// DefaultGapFraction is the default gap g of a forecast as a fraction of the objective's
// range: 0.05 (five accuracy points for an accuracy in [0, 1]).
const DefaultGapFraction = 0.05

// PriorRange is the objective range a forecast assumes when the objective's own range is
// not known (an external evaluator): ±2 standard deviations of the unit-variance GP prior
// Kusner et al.'s sensitivities are derived for.
const PriorRange = 4.0

// Forecast is what a job's releases will be worth, from public quantities only. Every
// field may be shown to anyone.
type Forecast struct {
	// Candidates is N = |Λ|; Epsilon the ε of each release; Range the objective range R
	// assumed; Gap the gap g; Margin the lift a release must reach.
	Candidates           int
	Epsilon, Range, Gap  float64
	Margin               float64
	UniformProbability   float64 // 1/N
	HasSelection         bool    // the job releases a hyperparameter (Algorithms 1, 2)
	SelectionTemperature float64 // s = ε/(2Δu), log-odds per unit of the objective
	// WithinGapMin and WithinGapMax bound the probability of picking the one candidate
	// within Gap of the posterior maximum (see above).
	WithinGapMin, WithinGapMax float64
	// SelectionLift is WithinGapMax·N; SelectionEpsilon the ε at which it reaches
	// 1 + Margin (+Inf if no ε does, e.g. N = 1).
	SelectionLift, SelectionEpsilon float64
	// LaplaceScale is b = Δ/ε of the value; ValueWithinGap = 1 − e^{−g/b};
	// UniformValueWithinGap = min(1, 2g/R); ValueLift their ratio; ValueEpsilon the ε at
	// which it reaches 1 + Margin (+Inf if none).
	LaplaceScale, ValueWithinGap, UniformValueWithinGap float64
	ValueLift, ValueEpsilon                             float64
	// Informative: a release reaches 1 + Margin. EpsilonNeeded is the least ε at which
	// one would (+Inf if none).
	Informative   bool
	EpsilonNeeded float64
}

// Forecast returns the forecast of c's releases, with constants k (Constants()),
// objective range R > 0 and gap g ∈ (0, R] (0: DefaultGapFraction·R).
func (c Config) Forecast(k Constants, objectiveRange, gap float64) (Forecast, error) {
	if !(objectiveRange > 0) || math.IsInf(objectiveRange, 0) {
		return Forecast{}, fmt.Errorf("kusner: forecast needs a positive finite objective range, got %g", objectiveRange)
	}
	gap = cmp.Or(gap, DefaultGapFraction*objectiveRange)
	if !(gap > 0 && gap <= objectiveRange) {
		return Forecast{}, fmt.Errorf("kusner: forecast gap must be in (0, %g] (the objective's range), got %g", objectiveRange, gap)
	}
	if !(k.LaplaceSensitivity > 0) || (c.Algorithm != Lipschitz && !(k.ExpSensitivity > 0)) {
		return Forecast{}, errors.New("kusner: forecast needs the constants of a validated configuration")
	}
	n, R, m := float64(c.N), objectiveRange, ForecastMargin
	f := Forecast{Candidates: c.N, Epsilon: c.Epsilon, Range: R, Gap: gap, Margin: m, UniformProbability: 1 / n,
		SelectionEpsilon: math.Inf(1), ValueEpsilon: math.Inf(1), EpsilonNeeded: math.Inf(1)}
	if c.Algorithm != Lipschitz {
		s := c.Epsilon / (2 * k.ExpSensitivity)
		f.HasSelection, f.SelectionTemperature = true, s
		f.WithinGapMin = 1 / (1 + (n-1)*math.Exp(-s*gap))
		f.WithinGapMax = 1 / (1 + (n-1)*math.Exp(-s*R))
		f.SelectionLift = f.WithinGapMax * n
		if r := (n/(1+m) - 1) / (n - 1); n > 1+m && r > 0 {
			f.SelectionEpsilon = 2 * k.ExpSensitivity * (-math.Log(r) / R)
		}
	}
	b := k.LaplaceSensitivity / c.Epsilon
	f.LaplaceScale = b
	f.ValueWithinGap = -math.Expm1(-gap / b)
	f.UniformValueWithinGap = math.Min(1, 2*gap/R)
	f.ValueLift = f.ValueWithinGap / f.UniformValueWithinGap
	if u := (1 + m) * 2 * gap / R; u < 1 {
		f.ValueEpsilon = k.LaplaceSensitivity / (-gap / math.Log1p(-u))
	}
	f.Informative = f.ValueLift >= 1+m || (f.HasSelection && f.SelectionLift >= 1+m)
	f.EpsilonNeeded = f.ValueEpsilon
	if f.HasSelection {
		f.EpsilonNeeded = math.Min(f.EpsilonNeeded, f.SelectionEpsilon)
	}
	return f, nil
}

// String states the forecast in words for people (logs, command lines); programs read
// the fields.
func (f Forecast) String() string {
	s := ""
	if f.HasSelection {
		s = fmt.Sprintf("the hyperparameter release picks the one candidate within %g of the posterior maximum with probability %.4g to %.4g, against %.4g for a uniform pick (at most %.3g× as likely); ",
			f.Gap, f.WithinGapMin, f.WithinGapMax, f.UniformProbability, f.SelectionLift)
	}
	s += fmt.Sprintf("the value release has Laplace scale %.4g against the objective's range %g: within %g of the truth with probability %.4g, against %.4g for a uniform guess (%.3g×)",
		f.LaplaceScale, f.Range, f.Gap, f.ValueWithinGap, f.UniformValueWithinGap, f.ValueLift)
	if !f.Informative {
		s += fmt.Sprintf("; no better than uniform by the margin of %g%%", 100*f.Margin)
		if !math.IsInf(f.EpsilonNeeded, 1) {
			s += fmt.Sprintf(" (a release would reach it at ε ≥ %.4g)", f.EpsilonNeeded)
		}
	}
	return s
}
