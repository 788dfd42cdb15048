// Package worth says, before anything is paid, what a study's recommendation is likely
// to be worth, from public facts only: the noise sd of each private answer against the
// width of the target's range the answers are clipped to.
//
// The ratio ρ = sd / (U − L) is what the answers' privacy fixes: for Laplace answers
// sd = √2·(U − L)/ε_out, so ρ = √2/ε_out whatever the range, and the Gaussian
// mechanism's σ is likewise proportional to the width. How much signal an answer
// carries depends also on how much of the range the target's values fill, which is not
// public; the classes below are what the recommended row's true percentile was on the
// shipped and held-out tables at each ρ (docs/EXPERIMENTS.md, "A recommendation worth
// acting on"). The curator states the forecast at start and in its quote's data, and the
// modeler prints it with the quote (modeler run --dry-run pays nothing).
package worth

import (
	"fmt"
	"math"
	"strconv"

	"github.com/privbo/privbo/internal/figure"
)

// Class is a forecast's verdict.
type Class int

// The classes, from the worst.
const (
	// NearRandom: the recommended row is often no better than a random row.
	NearRandom Class = iota + 1
	// BetterThanMost: above most rows in most runs, rarely the best.
	BetterThanMost
	// Good: among the better rows in most runs.
	Good
	// Exact: exact answers, no noise.
	Exact
)

// Thresholds on ρ = sd/width, from the recommended row's true percentile over 200 runs
// of the default study per cell (docs/EXPERIMENTS.md, "A recommendation worth acting
// on"): at ρ = 1.41 (Laplace, ε_out = 1) it fell below the median row in 26–44% of runs,
// depending on the table and T; at ρ = 0.71 (ε_out = 2) in 16–20% on diabetes; at
// ρ = 0.28 and below in at most 10%. A suggestion aims at BetterRatio.
const (
	NearRandomRatio = 1.0
	BetterRatio     = math.Sqrt2 / 2
	GoodRatio       = 0.25
)

// MaxSuggestedEpsilon is the largest ε_out a forecast suggests: a budget a hospital
// would set.
const MaxSuggestedEpsilon = 10

// Forecast is what a study at given settings is worth.
type Forecast struct {
	NoiseSD, Width float64
	// Ratio is NoiseSD/Width.
	Ratio float64
	Class Class
	// Epsilon is the answers' ε_out, and SuggestedEpsilon the ε_out that would bring
	// Ratio down to BetterRatio (GoodRatio when it is below BetterRatio already); 0 when
	// Class is Good or Exact, or when it would exceed MaxSuggestedEpsilon.
	Epsilon, SuggestedEpsilon float64
}

// Study forecasts answers of noise sd on a range [lower, upper] released at ε_out
// epsilon (0 sd: exact answers). The noise sd is proportional to 1/ε for Laplace
// answers and nearly so for Gaussian ones, so the suggested ε_out is epsilon·ρ/target.
func Study(noiseSD, lower, upper, epsilon float64) Forecast {
	f := Forecast{NoiseSD: noiseSD, Width: upper - lower, Epsilon: epsilon}
	switch {
	case noiseSD == 0:
		f.Class = Exact
		return f
	case !(f.Width > 0):
		f.Ratio, f.Class = math.Inf(1), NearRandom
		return f
	}
	f.Ratio = noiseSD / f.Width
	switch {
	case f.Ratio >= NearRandomRatio:
		f.Class = NearRandom
	case f.Ratio >= GoodRatio:
		f.Class = BetterThanMost
	default:
		f.Class = Good
		return f
	}
	target := BetterRatio
	if f.Ratio <= BetterRatio*(1+1e-9) {
		target = GoodRatio
	}
	if e := roundUp2(epsilon * f.Ratio / target); epsilon > 0 && e <= MaxSuggestedEpsilon {
		f.SuggestedEpsilon = e
	}
	return f
}

// Ratio is Study for answers whose range is not known yet (it is estimated at the
// curator's first start): ratio is sd/width, which the mechanism fixes whatever the
// width. Its String gives the ratio without the sd.
func Ratio(ratio, epsilon float64) Forecast {
	return Study(ratio, 0, 1, epsilon).unsized()
}

func (f Forecast) unsized() Forecast { f.NoiseSD, f.Width = 0, 0; return f }

// String is the forecast in one sentence, e.g. "answer noise sd 70.71 is 1.414× the
// range's width: expect a recommendation little better than a random row; ε_out = 2
// would make it 0.71×".
func (f Forecast) String() string {
	if f.Class == Exact {
		return "answers are exact: the recommendation is the best row queried"
	}
	s := fmt.Sprintf("answer noise sd %s is %s× the range's width: expect ", figure.Text(f.NoiseSD), figure.Text(f.Ratio))
	if f.Width == 0 {
		s = fmt.Sprintf("answer noise sd is %s× the range's width: expect ", figure.Text(f.Ratio))
	}
	switch f.Class {
	case NearRandom:
		s += "a recommendation little better than a random row"
	case BetterThanMost:
		s += "a recommendation better than most rows, rarely the best"
	default:
		return s + "a recommendation among the better rows"
	}
	if f.SuggestedEpsilon > 0 {
		return s + fmt.Sprintf("; ε_out = %s would make it %.2g×", strconv.FormatFloat(f.SuggestedEpsilon, 'g', -1, 64), f.Ratio*f.Epsilon/f.SuggestedEpsilon)
	}
	return s + fmt.Sprintf("; no ε_out ≤ %d would do much better: a public range nearer the target's values helps", MaxSuggestedEpsilon)
}

// roundUp2 rounds v > 0 up to two significant digits, ignoring an excess of less than a
// thousandth of the last digit: the samplers round a noise scale up by about 1e-6 of
// itself, which should not turn ε_out = 2 into 2.1.
func roundUp2(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-1)
	r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Ceil(v/p-1e-3)*p, 'g', 2, 64), 64)
	return r
}
