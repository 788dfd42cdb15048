// Package dp holds privbo's differentially private noise: exact samplers on
// rational numbers, the Laplace, Gaussian and exponential mechanisms built on
// them, and the checks every privacy parameter goes through.
//
// # Why exact
//
// Textbook noise on float64 leaks: the set of outputs the inverse-CDF Laplace
// sampler can reach depends on the true value (Mironov, "On significance of
// the least significant bits for differential privacy", CCS 2012), and
// similar attacks exist on Gaussian and discrete samplers (Jin et al., S&P
// 2022; Haney et al. 2022). This package follows OpenDP and Canonne, Kamath &
// Steinke ("The Discrete Gaussian for Differential Privacy", NeurIPS 2020,
// CKS20): all sampling uses exact integer and rational arithmetic fed by
// uniform random bits, inputs are rounded exactly to a lattice 2^k·ℤ with the
// rounding slack 2^k added to the sensitivity, and conversion to float64
// happens once, on the final (already private) value.
//
// # Randomness
//
// Every sampler takes a *Source. CryptoSource is the only constructor in this
// package: AES-256-CTR keyed from crypto/rand and re-keyed from crypto/rand
// after every MiB of output. Tests get reproducible streams from package
// dptest (seeded ChaCha8), which panics outside a test binary, so a seeded
// generator cannot reach a release. Uniform integers come from rejection
// sampling on random bits (no modulo bias); inside BernoulliExp, Geometric and
// the discrete Laplace and Gaussian samplers a trial with rational probability q
// compares q with a uniform real read 64 bits at a time (the public Bernoulli
// still draws a uniform integer below q's denominator).
//
// The samplers compute on 128-bit machine words (math/bits) and switch a step
// to math/big only where a number would not fit; both paths draw the same
// bits and return the same samples (TestFastPathMatchesBig). No floating point
// enters any decision.
//
// # Samplers (CKS20)
//
//   - BernoulliExp: true with probability exp(−γ), γ ≥ 0 rational: a uniform
//     against exp(−⌊32γ⌋/32), whose binary expansion is tabulated and, when
//     needed, extended exactly in integer arithmetic, and Algorithm 1 on the
//     remainder below 1/32 (exptable.go).
//   - Bernoulli: true with probability p, p ∈ [0, 1] rational.
//   - Geometric: P[X = x] = (1 − e^{−1/t}) e^{−x/t}, x ≥ 0 (Algorithm 2).
//   - DiscreteLaplace: P[X = x] = tanh(1/(2t)) e^{−|x|/t}, x ∈ ℤ (Algorithm 2).
//   - DiscreteGaussian, DiscreteGaussianSampler: P[X = x] ∝ exp(−x²/(2σ²)),
//     x ∈ ℤ (Algorithm 3, with the Laplace scale σ²/⌊σ⌋ and the geometric's
//     acceptance folded into the Gaussian one; gauss_sampler.go).
//
// docs/MATHS.md §5.2 states these algorithms and why each is exact.
//
// DiscreteLaplacePMF and DiscreteGaussianPMF give the exact probabilities
// (in float64) for tests and reports.
//
// # Mechanisms and their guarantees
//
// Neighbouring datasets are whatever relation the caller computed the
// sensitivity Δ for (privbo: datasets differing in one row, docs/MATHS.md §1); each
// mechanism's guarantee holds for inputs whose true values on neighbouring
// datasets differ by at most Δ (absolute difference for Laplace and Gaussian,
// every score for the exponential mechanism).
//
//   - Laplace (NewLaplace): x ↦ 2^k(round(x/2^k) + Z), Z discrete Laplace of
//     integer scale t ≥ (Δ + 2^k)/(2^k ε). (ε, 0)-DP.
//   - Gaussian (NewGaussian): the same with a discrete Gaussian of variance
//     N lattice steps², calibrated with the analytic Gaussian mechanism
//     (Balle & Wang, ICML 2018; AnalyticGaussianSigma) for the effective
//     sensitivity Δ + 2^k and checked against a rigorous bound on the
//     discrete Gaussian's exact δ (CKS20 Theorem 7; DiscreteGaussianDeltaBound).
//     (ε, δ)-DP.
//   - Exponential (NewExponential): selects i with Pr ∝ exp(ε u_i/(2Δ)) after
//     clamping scores to a public range, by exact rejection sampling.
//     (ε, 0)-DP (McSherry & Talwar 2007).
//
// The lattice step is 2^k with k = ⌊log₂ min(Δ, scale)⌋ − 20, so rounding
// costs a relative 2⁻²⁰ ≈ 1e-6 of noise and outputs are effectively
// continuous. Constructors validate every parameter (ValidateEpsilon,
// ValidateDelta, ValidateSensitivity) and return errors beginning "dp: ".
// Cost reports each mechanism's (ε, δ); Rényi-DP accounting of the same
// mechanisms is accountant.go (Rényi DP curves, subsampled Gaussian, conversions, the DP-HyPO and Papernot–Steinke bounds).
//
// # A guarantee for a whole record (curve.go)
//
// A mechanism built for sensitivity Δ is also private, more weakly, for
// inputs that differ by D·Δ (a whole record moving by D protected units;
// group privacy). EpsilonAtDistance(D, δ) states that weaker ε from the
// same accounting that calibrated the mechanism, evaluated at the larger
// shift, never from data:
//
//   - Gaussian: the exact privacy of the discrete Gaussian (CKS20 Theorem 7)
//     at the integer lattice shift ⌊DΔ/2^k⌋ + 1, bounded rigorously and
//     inverted in ε by bisection. It matches the continuous Gaussian curve
//     δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), μ = DΔ/σ (Balle & Wang 2018,
//     Theorem 8; AnalyticGaussianEpsilon) to about 1e-6.
//   - VectorGaussian: ρ_D = (DΔ/2^k + √m)²/(2N)-zCDP (CKS20 Theorem 14)
//     converted with ZCDPEpsilon (CKS20 Proposition 12), as in calibration.
//     ε grows about like D²ρ: for a release at (1, 1e-5) with Δ = 1, D = 50
//     gives ε ≈ 134 (the scalar Gaussian at (1, 1e-5): ≈ 147).
//   - Laplace: pure DP, ε_D = (⌊DΔ/2^k⌋ + 1)/t ≤ D·ε.
//
// Above EpsilonCap (10⁶) the answer is +Inf. WholeRecordTable and
// FormatWholeRecordTable turn a list of public distances (1, 2, 5, 10, the
// clip diameter) into the line a guarantee text shows, every ε rounded up
// to three significant digits (RoundUpEpsilon) so that it stays a bound.
//
// # Timing
//
// The CKS20 samplers and the exponential mechanism run in variable time
// (the number of rejection rounds is random and, for Select, depends on the
// scores). Do not let a requester time a release against its secret input:
// draw the noise before answering, or answer asynchronously.
package dp
