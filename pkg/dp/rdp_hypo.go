package dp

import (
	"fmt"
	"math"
)

// Privacy of hyperparameter search with a random number of runs.
//
// DP-HyPO (Wang, Gao, Zhang, Su & Shen, "DP-HyPO: An Adaptive Private
// Hyperparameter Optimization Framework", NeurIPS 2023) runs T base
// algorithms, T ~ NegBin(θ, γ) truncated to T ≥ 1, each with a
// hyperparameter drawn from a density kept within [c, C] times the uniform
// prior, and releases only the best run. With C = c = 1 it is the random
// search of Papernot & Steinke ("Hyperparameter Tuning with Renyi
// Differential Privacy", ICLR 2022), whose Theorem 2 DP-HyPO's Theorem 1
// generalises. The number of runs T must stay secret: the theorems cover
// the best run alone, not T.

// NegBinMean returns E[T] for the truncated negative binomial NegBin(θ, γ),
// θ > −1, γ ∈ (0, 1) (DP-HyPO Appendix B; Papernot & Steinke 2022):
//
//	θ ≠ 0: E[T] = θ(1−γ) / (γ(1−γ^θ))
//	θ = 0: E[T] = (1/γ − 1) / log(1/γ)
//
// θ = 1 is the geometric distribution, E[T] = 1/γ. It returns NaN for
// parameters outside those ranges.
func NegBinMean(theta, gamma float64) float64 {
	if !(theta > -1) || math.IsInf(theta, 0) || !(gamma > 0 && gamma < 1) {
		return math.NaN()
	}
	lg := math.Log(gamma)
	if theta == 0 {
		return (1 - gamma) / (gamma * -lg) // (1/γ − 1) without its cancellation
	}
	// 1 − γ^θ = −expm1(θ log γ), accurate for small |θ|.
	return theta * (1 - gamma) / (gamma * -math.Expm1(theta*lg))
}

func validateHyPO(theta, gamma, bigC, smallC float64) error {
	if !(theta > -1) || math.IsInf(theta, 0) {
		return fmt.Errorf("dp: DP-HyPO theta must be finite and > −1, got %g", theta)
	}
	if !(gamma > 0 && gamma < 1) {
		return fmt.Errorf("dp: DP-HyPO gamma must be in (0, 1), got %g", gamma)
	}
	if !(smallC > 0 && smallC <= 1) {
		return fmt.Errorf("dp: DP-HyPO lower density bound c must be in (0, 1], got %g", smallC)
	}
	if !(bigC >= 1) || math.IsInf(bigC, 0) {
		return fmt.Errorf("dp: DP-HyPO upper density bound C must be finite and ≥ 1, got %g", bigC)
	}
	return nil
}

// DPHyPORDP returns the Rényi-DP curve of DP-HyPO (Wang et al. 2023,
// Theorem 1) when every base algorithm satisfies the curve base (at the
// orders α) and the curve baseHat (at the orders α̂), with T ~ NegBin(θ, γ)
// and density bounds c ≤ π̃·|Λ| ≤ C:
//
//	ε'(α) = ε(α) + (α/(α−1) + 1 + θ) log(C/c) + log(E[T])/(α−1)
//	        + min_α̂ [ (1+θ)(1 − 1/α̂) ε̂(α̂) + (1+θ) log(1/γ)/α̂ ].
//
// The minimum runs over the orders of baseHat and over α̂ = 1, which the
// theorem allows (α̂ ∈ [1, ∞)): there the ε̂ term vanishes and the
// hypothesis, a finite KL divergence, follows from any finite ε̂(α̂) of the
// curve because Rényi divergences increase with the order. Infinite orders
// are taken as limits: α = ∞ gives ε(∞) + (2+θ) log(C/c) + min_α̂[…], and
// α̂ = ∞ gives (1+θ) ε̂(∞). With C = c = 1 this is Theorem 2 of Papernot &
// Steinke (2022). Usually baseHat is base itself.
func DPHyPORDP(base, baseHat RDPCurve, theta, gamma, bigC, smallC float64) (RDPCurve, error) {
	if err := validateHyPO(theta, gamma, bigC, smallC); err != nil {
		return RDPCurve{}, err
	}
	if err := base.Validate(); err != nil {
		return RDPCurve{}, err
	}
	if err := baseHat.Validate(); err != nil {
		return RDPCurve{}, fmt.Errorf("dp: baseHat: %w", err)
	}
	lr := math.Log(bigC / smallC)
	logMean := math.Log(NegBinMean(theta, gamma))
	lg := -math.Log(gamma)

	// The α̂ part does not depend on α.
	hat := math.Inf(1)
	finite := false
	for i, ah := range baseHat.Orders {
		eh := baseHat.Epsilons[i]
		if math.IsInf(eh, 1) {
			continue
		}
		finite = true
		var v float64
		if math.IsInf(ah, 1) {
			v = (1 + theta) * eh
		} else {
			v = (1+theta)*(1-1/ah)*eh + (1+theta)*lg/ah
		}
		hat = math.Min(hat, v)
	}
	if finite {
		hat = math.Min(hat, (1+theta)*lg) // α̂ = 1
	}

	out := RDPCurve{Orders: append([]float64(nil), base.Orders...), Epsilons: make([]float64, len(base.Orders))}
	for i, a := range base.Orders {
		e := base.Epsilons[i]
		if math.IsInf(a, 1) {
			e += (2 + theta) * lr
		} else {
			e += (a/(a-1)+1+theta)*lr + logMean/(a-1)
		}
		out.Epsilons[i] = e + hat
	}
	return out, nil
}

// DPHyPOPure returns the ε of DP-HyPO when every base algorithm is
// (ε, 0)-DP (Wang et al. 2023, Theorem 2): the search is
// ((2+θ)(ε + log(C/c)), 0)-DP. With C = c = 1 it is Corollary 3 of
// Papernot & Steinke (2022), (2+θ)ε; θ = 1 (geometric T) gives the 3ε of
// Liu & Talwar (STOC 2019). γ does not enter.
func DPHyPOPure(eps, theta, bigC, smallC float64) (float64, error) {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("dp: DP-HyPO base epsilon must be ≥ 0 and finite, got %g", eps)
	}
	if err := validateHyPO(theta, 0.5, bigC, smallC); err != nil {
		return 0, err
	}
	return (2 + theta) * (eps + math.Log(bigC/smallC)), nil
}
