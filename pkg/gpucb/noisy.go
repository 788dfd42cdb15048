package gpucb

import (
	"fmt"
	"math"
)

// Answers released with output privacy (the curator clips each evaluation y to a
// public range [L, U] and adds Laplace or Gaussian noise calibrated to the sensitivity
// U − L; package curator, OutputPrivacy) carry noise whose variance is public: it depends only on the
// mechanism, its (ε, δ) and the range. The GP should model it (Rasmussen and Williams
// 2006, §2.2: y = f(x) + ε with ε ~ N(0, σ_n²)) instead of interpolating the noise with
// the near-zero NoiseVariance suited to exact answers. Laplace noise is not Gaussian; a
// GP with σ_n² equal to its variance is the best Gaussian approximation in the sense of
// matching the second moment, which is what GP-UCB's posterior mean (a linear smoother)
// depends on. The variance is the curator's to state (the modeler reads it from the
// wire); this package takes it as a number and knows no mechanism.

// NoiseRule names a rule that sets the GP prior for noisy answers from public
// quantities only (the output range and the noise variance).
type NoiseRule string

// Noise rules. All take the prior signal standard deviation from the public range,
// s_f = (U − L)/4 (a function whose values stay in [L, U] treated as the midpoint ± 2
// standard deviations), and σ_n² the answer noise variance (the curator states it: study.OutputPrivacy.AnswerNoise).
const (
	// NoiseRulePublicRange models the raw answers: no standardisation, answers centred
	// on the range midpoint (U + L)/2 (Prior.Offset), SignalVariance s_f² and
	// NoiseVariance σ_n².
	NoiseRulePublicRange NoiseRule = "public-range"
	// NoiseRuleStandardised keeps the standardisation of the answers (their running
	// mean and standard deviation). The answers' variance is about Var f + σ_n², so in
	// standardised units SignalVariance = s_f²/(s_f² + σ_n²) and NoiseVariance =
	// σ_n²/(s_f² + σ_n²).
	NoiseRuleStandardised NoiseRule = "standardised"
	// NoiseRuleRatio keeps the standardisation and SignalVariance 1 and sets
	// NoiseVariance = σ_n²/s_f²: the right signal-to-noise ratio (so the same
	// posterior mean as NoiseRuleStandardised) but a prior variance inflated by
	// (s_f² + σ_n²)/s_f², hence more exploration.
	NoiseRuleRatio NoiseRule = "ratio"
)

// ParseNoiseRule parses a rule name.
func ParseNoiseRule(s string) (NoiseRule, error) {
	switch r := NoiseRule(s); r {
	case NoiseRulePublicRange, NoiseRuleStandardised, NoiseRuleRatio:
		return r, nil
	}
	return "", fmt.Errorf("gpucb: unknown noise rule %q (want %s, %s or %s)", s, NoiseRulePublicRange, NoiseRuleStandardised, NoiseRuleRatio)
}

// NoisyPrior is the GP prior a rule gives: Config.Standardise, Config.SignalVariance
// and Config.NoiseVariance, and Offset, to be subtracted from every answer before
// Observe (a constant shift does not change which candidate GP-UCB picks).
type NoisyPrior struct {
	Standardise                   bool
	Offset                        float64
	SignalVariance, NoiseVariance float64
}

// minNoiseRatio keeps NoiseVariance positive relative to the signal variance when
// σ_n² is 0 (exact answers), so that the Cholesky factor stays well conditioned.
const minNoiseRatio = 1e-6

// NoisyOutputPrior returns the prior of rule for answers clipped to the public range
// [lower, upper] with noise variance noiseVariance ≥ 0 (the curator states it: study.OutputPrivacy.AnswerNoise).
func NoisyOutputPrior(rule NoiseRule, lower, upper, noiseVariance float64) (NoisyPrior, error) {
	if math.IsNaN(lower) || math.IsNaN(upper) || math.IsInf(lower, 0) || math.IsInf(upper, 0) || !(lower < upper) {
		return NoisyPrior{}, fmt.Errorf("gpucb: the output range must be finite with lower < upper, got [%g, %g]", lower, upper)
	}
	if !(noiseVariance >= 0) || math.IsInf(noiseVariance, 0) {
		return NoisyPrior{}, fmt.Errorf("gpucb: noise variance must be ≥ 0 and finite, got %g", noiseVariance)
	}
	sf2 := (upper - lower) * (upper - lower) / 16
	switch rule {
	case NoiseRulePublicRange:
		return NoisyPrior{Offset: (upper + lower) / 2, SignalVariance: sf2, NoiseVariance: max(noiseVariance, minNoiseRatio*sf2)}, nil
	case NoiseRuleStandardised:
		tot := sf2 + noiseVariance
		return NoisyPrior{Standardise: true, SignalVariance: sf2 / tot, NoiseVariance: max(noiseVariance/tot, minNoiseRatio*sf2/tot)}, nil
	case NoiseRuleRatio:
		return NoisyPrior{Standardise: true, SignalVariance: 1, NoiseVariance: max(noiseVariance/sf2, minNoiseRatio)}, nil
	}
	return NoisyPrior{}, fmt.Errorf("gpucb: unknown noise rule %q", rule)
}
