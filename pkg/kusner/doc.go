// Package kusner implements differentially private Bayesian optimisation of
// hyperparameters on the curator's own data: Algorithms 1, 2 and 3 of Kusner,
// Gardner, Garnett & Weinberger, "Differentially Private Bayesian
// Optimization", ICML 2015 (docs/MATHS.md §3). It is pure maths over an abstract
// objective: the caller supplies the finite grid Λ (as GP input coordinates)
// and a function returning the validation gain f_V(λ_i) of candidate i; Run
// searches Λ with GP-UCB (package gpucb) and releases private results with the
// exponential and Laplace mechanisms of package dp.
//
// # Setting
//
// The learner is trained on a non-sensitive training set; its validation gain
// f_V(λ) depends on a sensitive validation set V. Neighbouring V, V' differ in
// one record, replaced by any other (Relation, the privacy ledger's
// validation-record). Everything this package releases is private with
// respect to V, and only V: the training records are not protected, and
// every Guarantee text says so.
// The objective's values, the hyperparameters λ_1 … λ_T visited by the search
// and the posterior µ_T all depend on V: none of them leave Run. Progress
// events carry step counts and fixed messages only. The grid, T and every
// other Config value are public: Constants (γ_T, the lengthscale default,
// the sensitivities) is computed from them alone.
//
// # Algorithm 1 (noisy observations, σ² > 0)
//
// Prior f_V ~ GP(0, k1 ⊗ k2) with k2 the squared exponential kernel over Λ,
// normalised (k2(λ, λ) = 1, so the GP's signal variance is 1), and
// k1(V, V') ∈ [0, 1) the dataset kernel's value for neighbours (Assumption 1
// of the paper). For t = 1 … T:
//
//	β_t = 2 log(|Λ| t² π² / (3δ))
//	λ_t = argmax_λ µ_{t−1}(λ) + √β_t σ_{t−1}(λ)      (ties: lowest index)
//	v_t = f_V(λ_t) + noise,  update µ_t, σ_t with observation noise σ²
//
// then, with
//
//	c  = 2 √((1 − k1) log(3|Λ|/δ))
//	q  = σ √(8 log(3/δ))
//	C1 = 8 / log(1 + σ⁻²)
//
// release
//
//	λ̃ with Pr[λ] ∝ exp(ε µ_T(λ) / (2Δu)),   Δu = 2 √β_{T+1} + c   (exponential mechanism)
//	ṽ = max_t v_t + Lap(Δv/ε),              Δv = √(C1 β_T γ_T / T) + c + q
//
// Each release is (ε, δ)-DP (Corollaries 1 and 2 of the paper: the
// sensitivities Δu and Δv hold with probability ≥ 1 − δ, Theorems 1 and 3);
// together (2ε, 2δ)-DP by basic composition. γ_T is the maximum information
// gain max_{|A|=T} ½ log det(I + σ⁻² K_A); it is either given (Config.GammaT)
// or bounded from above by the greedy maximiser divided by 1 − 1/e
// (GammaGreedy; Srinivas, Krause, Kakade & Seeger 2010, via the submodularity
// of the information gain, Nemhauser et al. 1978).
//
// β_t is gpucb.Beta with δ' = δ/2 (2 log(|Λ| t² π²/(6·δ/2)) is the same
// number), so the search is gpucb's GP-UCB with gpucb.Config.Delta = δ/2.
//
// # Algorithm 2 (noise-free observations)
//
// The same search with exact observations v_t = f_V(λ_t), then
//
//	λ̃ as in Algorithm 1 (Δu = 2 √β_{T+1} + c with Theorem 1's c, 3|Λ|/δ)
//	f̃ = f_V(λ_T) + Lap(Δf/ε),  Δf = A e^{−τT/(log T)^{d/4}} + c₂,
//	c₂ = 2 √((1 − k1) log(2|Λ|/δ))
//
// with d the dimension of Λ and A, τ the constants of de Freitas, Smola &
// Zoghi (2012, Theorem 2) supplied by the caller (Theorem 5 and Corollary 3
// of the paper). The paper says Theorems 1 and 2 "still hold" for λ̃ in the
// noise-free setting; their proof splits δ three ways, so λ̃ uses Theorem 1's
// c (log(3|Λ|/δ)), the larger and so more conservative of the two; the
// smaller c₂ belongs to Theorem 5 only. Note that f̃ releases the last
// observation f_V(λ_T), not the maximum. T ≥ 2 is required: at T = 1,
// (log T)^{d/4} = 0 and the de Freitas bound says nothing.
//
// The paper observes with "the method of de Freitas et al."; this package
// uses the GP-UCB search of Algorithm 1 on a GP with a tiny noise variance
// NoiseFreeJitter (1e-6) for numerical stability. The privacy of f̃ rests on
// the caller's A and τ bounding |f_V(λ_T) − f_V'(λ'_T)| − c₂ for this search,
// which is an assumption the caller makes (it is stated in the guarantee).
//
// # Algorithm 3 (Lipschitz and convex; no GP assumption)
//
// Assumption 2: w_λ = argmin_w λ/2 ‖w‖² + (1/n) Σ ℓ(w, x_i, y_i) with ℓ
// convex and 1-Lipschitz in w, f_V(λ) = −(1/m) Σ g(w_λ, x, y) with g
// L-Lipschitz in w and 0 ≤ g ≤ g*, every λ of the grid in [λ_min, λ_max],
// m = |V|. Any search may pick λ_1 … λ_T; this package uses GP-UCB (β_t
// with δ' = SearchDelta, observation noise Config.NoiseVariance or
// NoiseFreeJitter). Release
//
//	f̃_L = max_t f_V(λ_t) + Lap(Δ/ε),
//	Δ = (λ_max − λ_min) L / (λ_max λ_min) + min(g*/m, L/(m λ_min))
//
// which is (ε, 0)-DP (Theorem 7, Corollary 4). No λ is released.
//
// # Choices made here
//
// Repeated queries. GP-UCB may choose a candidate it has already observed
// (gpucb's SkipQueried is off, so the search is exactly the paper's). In
// Algorithm 1 the objective is evaluated again: the model treats v_t as
// independently noisy. In Algorithms 2 and 3 f_V is deterministic, so the
// recorded value is reused instead of re-running the learner; the GP still
// conditions on it again (a second observation with noise NoiseFreeJitter,
// harmless), so β_t and the search follow the paper's iteration count.
//
// Outputs. The GP is not standardised: f_V is taken as is (validation
// accuracies in [0, 1] match the prior's unit signal variance) and the
// prior mean is 0, as in the paper.
//
// Score range of the exponential mechanism. dp.Exponential clamps scores to
// a finite range before selecting. Privacy here does not come from clamping:
// Theorem 1 bounds |µ_T(λ) − µ'_T(λ)| ≤ Δu for all λ with probability
// ≥ 1 − δ, and the mechanism Pr[λ] ∝ exp(ε µ_T(λ)/(2Δu)) is (ε, δ)-DP on
// unclamped scores. So the range is set to [min µ_T − Δu, max µ_T + Δu],
// which contains every score: clamping is the identity and the distribution
// is exactly the paper's. (The range is data-dependent, but it is never
// used: the exponential mechanism is invariant to shifting all scores.)
//
// Noise. All noise comes from the caller's *dp.Source (dp.CryptoSource in
// production): the Laplace mechanism is dp's lattice-rounded discrete
// Laplace, whose effective scale exceeds the nominal Δ/ε reported in
// Constants by a relative 1e-6 or so (lattice rounding, see dp.Laplace); the
// exponential mechanism samples exactly. dp's samplers run in variable time: do not let a requester time
// Run.
//
// Errors. Run's errors are for the curator's operator: its own messages
// name the failing iteration but never an f_V value or the candidate chosen
// (an error returned by the Objective is wrapped as it is). Nothing is
// released when Run fails.
//
// # Forecast
//
// Config.Forecast states, from the public constants alone and before anything is
// charged, what the releases will be worth against a uniform pick: the exponential
// mechanism's chance of picking a candidate within a gap of the posterior maximum, and
// the Laplace value's chance of landing within that gap of the truth, each beside a
// uniform pick's (forecast.go; docs/MATHS.md §3.4). The curator refuses a job none of
// whose releases beats a uniform pick by ForecastMargin unless the modeler insists.
//
// # References
//
//   - M. J. Kusner, J. R. Gardner, R. Garnett, K. Q. Weinberger.
//     Differentially Private Bayesian Optimization. ICML 2015.
//   - N. Srinivas, A. Krause, S. Kakade, M. Seeger. Gaussian Process
//     Optimization in the Bandit Setting: No Regret and Experimental Design.
//     ICML 2010.
//   - N. de Freitas, A. Smola, M. Zoghi. Exponential Regret Bounds for
//     Gaussian Process Bandits with Deterministic Observations. ICML 2012.
//   - F. McSherry, K. Talwar. Mechanism Design via Differential Privacy.
//     FOCS 2007.
package kusner
