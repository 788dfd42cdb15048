// Package dphypo implements DP-HyPO (Wang, Gao, Zhang, Su & Shen, "DP-HyPO:
// An Adaptive Private Hyperparameter Optimization Framework", NeurIPS 2023;
// docs/MATHS.md §4): adaptive hyperparameter search over a finite grid Λ of N points
// whose privacy cost does not grow with the number of runs. The base
// algorithm is abstract (Base); this package is the search's mathematics.
//
// # The search
//
//	draw T ~ NegBin(θ, γ)                    (truncated: T ≥ 1)
//	π(0) = uniform over Λ
//	for j = 0 … T−1:
//	    π̃ = P_{S_{C,c}}(π(j)),  S_{C,c} = {f : c/N ≤ f_i ≤ C/N, Σ f_i = 1}
//	    λ ~ π̃;  (x, q) ~ M_λ(D)
//	    π(j+1) from everything so far
//	output the (x, q) with the highest q
//
// GP rule (Algorithm 3 of the paper): fit a GP to the (λ, q) seen so far,
// s_λ = µ_λ + τ σ_λ, π(j+1)(λ) ∝ exp(β s_λ) (paper: C = 2, c = 0.75,
// τ = 0.1, β = 1). Uniform rule (Algorithm 2; Liu & Talwar 2019, Papernot &
// Steinke 2022): π(j+1) = π(0), equivalent to C = c = 1. The GP is
// gpucb's exact GP with a Matérn-5/2 kernel on standardised scores.
//
// The paper does not say in which unit s_λ enters exp(β s_λ). By default
// (ScaleStandardised) s_λ is divided by the sample standard deviation of the
// scores seen so far, so β = 1 tilts π by an order of magnitude across the
// grid and the projection onto S_{C,c} binds: the density bounds, whose
// privacy cost is paid whatever π does, are used. In the score's own unit
// (ScaleRaw), validation accuracies spread over a few hundredths move π by a
// few per cent, and the search is uniform search that pays for adaptivity
// (docs/EXPERIMENTS.md, "DP-HyPO"). Either way the guarantee is the same: it
// depends on π̃ only through c ≤ π̃·N ≤ C.
//
// # Run count
//
// NegBin(θ, γ), γ ∈ (0, 1), θ ∈ (−1, ∞), on k ≥ 1:
//
//	θ ≠ 0: P[T=k] = (1−γ)^k / (γ^{−θ} − 1) · Π_{ℓ=0}^{k−1} (ℓ+θ)/(ℓ+1),  E[T] = θ(1−γ)/(γ(1−γ^θ))
//	θ = 0: P[T=k] = (1−γ)^k / (k log(1/γ)),                              E[T] = (1/γ−1)/log(1/γ)
//
// θ = 1 is geometric. SampleNegBin draws T exactly with rational Bernoulli
// trials (see its documentation); NegBinPMF gives the pmf and dp.NegBinMean
// the mean.
//
// # Projection
//
// ProjectDensity solves min ‖f − π‖₂ over S_{C,c} (needs c ≤ 1 ≤ C). The
// KKT conditions give f_i = clip(π_i − ν, c/N, C/N) with one scalar ν,
// found by bisection; no convex solver is needed.
//
// # Privacy
//
// If every base run is (α, ε(α))-RDP, the search is (α, ε'(α))-RDP with
// ε' from DP-HyPO's Theorem 1 (dp.DPHyPORDP); if every run is (ε, 0)-DP, the
// search is ((2+θ)(ε + log(C/c)), 0)-DP (Theorem 2, dp.DPHyPOPure). The
// guarantee covers the best run's output only. The number of runs T, the
// intermediate scores and the chosen hyperparameters are not covered: do not
// release them (see Progress). The λ sampling draws from the projected
// density exactly (the float64 weights are turned into big integers) after
// an exact check that the density bounds hold, so rounding in the
// projection cannot break the hypothesis c ≤ π̃·N ≤ C.
package dphypo
