package tuning

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dphypo"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/learner"
)

// Calibrating a DP-HyPO job's noise to a target ε (jobspec.DPHyPOSpec.TargetEpsilon).
//
// One run of the built-in base algorithm is DP-SGD with noise multiplier σ followed by
// a validation accuracy with Gaussian noise of s times its sensitivity 1/m. A target
// fixes the split s = CalibratedScoreRatio·σ, which leaves σ as the one knob, and
// chooses the least σ whose whole search — DP-HyPO's Theorem 1 over the composed
// per-run curve, converted at the spec's δ, plus the ε of a private bounds estimate —
// costs at most the target. The ε is computed by searchEpsilon, the same function that
// prices the job for the ledger, so the figure calibrated is the figure charged.
//
// ε(σ) is non-increasing in σ: at every order the subsampled-Gaussian term
// (log A_α, Mironov, Talwar & Zhang 2019, Section 3.3, a sum of exp((k²−k)/(2σ²))
// terms) and the Gaussian term α/(2s²) fall as σ grows; DP-HyPO's Theorem 1 adds
// terms that do not depend on σ and minimises over α̂ a quantity non-decreasing in
// the curve; and the conversion to (ε, δ) minimises over α a quantity non-decreasing
// in ε(α). So a bisection on log σ finds the least σ with ε(σ) ≤ target up to its
// stopping width. ε(σ) is continuous (a minimum of finitely many continuous
// functions), so the charged ε then lies just below the target; only a target above
// ε(minCalibratedNoise) is met with a smaller ε.
//
// The search cannot cost less than its σ-free part: as σ → ∞ the per-run curve
// vanishes, leaving (α/(α−1) + 1 + θ)·log(C/c) + log E[T]/(α−1) + the α̂ term and the
// conversion's log(1/δ)/(α−1) — at least (2+θ)·log(C/c). A target below ε at
// learner.MaxNoiseMultiplier is refused, with that bound in the message, before
// anything is charged.

// CalibratedScoreRatio is the score noise multiplier of a calibrated job as a multiple
// of its DP-SGD noise multiplier: the ratio of the modeler's defaults before targets
// existed (σ = 1, s = 2). For the modeler's default job on breast cancer (35 DP-SGD
// steps at q = 64/398; calibrated σ ≈ 7.2) the score's one Gaussian release is then
// about a fifth of a run's Rényi curve at the order that decides ε (0.077 of 0.385 at
// α = 32), DP-SGD the rest.
const CalibratedScoreRatio = 2

// scoreRatio is the score-to-DP-SGD noise ratio of calibrated jobs: CalibratedScoreRatio
// unless an experiment in this package's tests set Config.scoreRatio.
func (r *Runner) scoreRatio() float64 {
	if r.cfg.scoreRatio > 0 {
		return r.cfg.scoreRatio
	}
	return CalibratedScoreRatio
}

// minCalibratedNoise is the least noise multiplier a calibration chooses: a target
// that a smaller σ would meet is met with this one, at a lower ε than asked.
const minCalibratedNoise = 0.1

// calibration is the noise chosen for a target ε.
type calibration struct {
	noise float64 // DP-SGD noise multiplier σ; the score's is CalibratedScoreRatio·σ
}

// searchEpsilon is the (ε, δ) guarantee of a DP-HyPO search whose runs each satisfy
// the Rényi-DP curve base: DP-HyPO's Theorem 1 (dp.DPHyPORDP, with α̂ over the same
// curve), converted at δ with the improved bound, minimised over the orders. It
// returns ε and the order attaining it.
func searchEpsilon(base dp.RDPCurve, cfg dphypo.Config, delta float64) (float64, float64, error) {
	total, err := dp.DPHyPORDP(base, base, cfg.Theta, cfg.Gamma, cfg.C, cfg.Cmin)
	if err != nil {
		return 0, 0, err
	}
	return total.ToDPImproved(delta)
}

// calibrate returns the least noise multiplier σ in [minCalibratedNoise,
// learner.MaxNoiseMultiplier] for which searchEps(σ) + boundsEps ≤ s.TargetEpsilon,
// found by bisection on log σ to a relative width of 1e-9. searchEps returns the
// search's ε at σ.
func calibrate(s jobspec.DPHyPOSpec, cfg dphypo.Config, boundsEps float64, searchEps func(sigma float64) (float64, error)) (calibration, error) {
	// at is the charged ε at σ, summed as dphypoPlan sums it, so that ≤ holds of the
	// very figure charged.
	at := func(sigma float64) (float64, error) {
		e, err := searchEps(sigma)
		if err != nil {
			return 0, invalid("target_epsilon: pricing noise multiplier %g: %v", sigma, err)
		}
		return e + boundsEps, nil
	}
	target := s.TargetEpsilon
	hi := float64(learner.MaxNoiseMultiplier)
	floor, err := at(hi)
	if err != nil {
		return calibration{}, err
	}
	if !(floor <= target) {
		msg := fmt.Sprintf("target_epsilon %g is out of reach at delta %g: even with noise multiplier %g this search costs ε=%.4g",
			s.TargetEpsilon, s.Delta, hi, floor)
		if boundsEps > 0 {
			msg += fmt.Sprintf(" (of which ε=%g for the private feature bounds)", boundsEps)
		}
		msg += fmt.Sprintf("; the density bounds alone cost (2+θ)·log(C/c) = %.4g (DP-HyPO Theorem 1, C=%g, c=%g, θ=%g). "+
			"Raise target_epsilon or delta, bring c_max and c_min closer to 1 (or search uniformly), or lower theta",
			(2+cfg.Theta)*math.Log(cfg.C/cfg.Cmin), cfg.C, cfg.Cmin, cfg.Theta)
		return calibration{}, invalid("%s", msg)
	}
	lo := minCalibratedNoise
	e, err := at(lo)
	if err != nil {
		return calibration{}, err
	}
	if e <= target {
		return calibration{noise: lo}, nil
	}
	// Invariant: ε(lo) > target ≥ ε(hi).
	for i := 0; i < 200 && hi/lo > 1+1e-9; i++ {
		mid := math.Sqrt(lo * hi)
		e, err := at(mid)
		if err != nil {
			return calibration{}, err
		}
		if e <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return calibration{noise: hi}, nil
}
