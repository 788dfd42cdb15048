// Package gpucb implements exact GP-UCB (Srinivas, Krause, Kakade, Seeger 2010)
// over a fixed, finite candidate set with incremental posterior updates, as used
// by the modeler in PO-GP-UCB (Kharkovskii, Dai, Low, ICML 2020, Algorithm 2;
// docs/MATHS.md §2.4).
//
// # Model
//
// Prior f ~ GP(0, k) over the n candidate rows z ∈ R^dim, observations
// y = f(z) + ε with ε ~ N(0, σ_n²). Two kernels are provided:
//
//	squared exponential  k(z, z') = σ_y² exp(−‖z − z'‖² / (2 l²))
//	Matérn 5/2           k(z, z') = σ_y² (1 + √5 r/l + 5 r²/(3 l²)) exp(−√5 r/l),  r = ‖z − z'‖
//
// After t observations (Z_t, y_t), with A = K_t + σ_n² I = L Lᵀ (Cholesky):
//
//	µ_t(z)  = k(z, Z_t) A⁻¹ y_t
//	σ²_t(z) = k(z, z) − k(z, Z_t) A⁻¹ k(Z_t, z)
//
// GP-UCB picks z_{t+1} = argmax_z µ_t(z) + √β_{t+1} σ_t(z) with
//
//	β_t = 2 log(n t² π² / (6 δ'))     (t the 1-based iteration number)
//
// (Srinivas et al. 2010, Theorem 1, finite decision set), or a constant β.
// Ties go to the lowest candidate index.
//
// # Posterior and acquisition
//
// The model and the rule that chooses from it are separate values (as gonum's
// optimize.Method is separate from the problem): a Posterior (NewPosterior) holds the
// GP conditioned on the observations (Observe, Mean, Variance, SetHyper, Refit,
// Fantasize), and an Acquisition chooses the next candidate from a Posterior. UCB, with
// the β_t schedule above, is the first Acquisition; another rule is one more type with a
// Next method, which scans the candidates with Posterior.ArgmaxUpper (rules of the form
// µ + w σ, on the posterior's workers) or Posterior.Argmax (any score of µ and σ). GP
// (New) is the two together for the sequential loop: a Posterior driven by the UCB of
// its Config.
//
// # Fantasies (GP-BUCB)
//
// GP-BUCB (Desautels, Krause and Burdick 2014) chooses a batch by conditioning on the
// pending candidates as if their outputs were their posterior means. Fantasize(i) does
// that: conditioning on y = µ(z_i) leaves the mean unchanged everywhere, so it appends a
// row to L and to V and updates the variance only (O(n·(dim + t)), as an observation),
// while the standardisation stays that of the real observations. UCB counts pending
// fantasies in the t of β_t. DropFantasies restores the variance (saved before the first
// fantasy) and the queried flags exactly and returns the rows to be reused; a real
// Observe, SetHyper, SetNoiseFactors or Refit needs the fantasies dropped first.
//
// # Per-observation noise
//
// ObserveNoise(i, y, f) observes with noise variance f·σ_n² instead of σ_n² (the
// heteroscedastic GP, K + diag(σ_n² f_j); Rasmussen & Williams 2006, §2.2): the factors
// are kept beside the observations (NoiseFactors, Observed), replayed by SetHyper, and
// replaced all at once by SetNoiseFactors. Refit refuses once some factor is not 1 (its
// likelihood has one noise variance). A fantasy has factor 1 (Fantasize) or the factor
// the pending answer will have (FantasizeNoise), so that it shrinks the variance as that
// answer will.
//
// # Incremental algorithm
//
// The candidate set is fixed, so the package keeps, for every candidate z,
// the column V(z) = L⁻¹ k(Z_t, z) ∈ R^t (stored as t rows of length n, one
// new row per observation), the variance σ²_t(z) = k(z, z) − Σ_j V_j(z)² and
// the mean. Observing y at candidate i appends one row to L and to V
// (a rank-one extension of the Cholesky factor, not a refit):
//
//	l_tt   = sqrt(k(z_i, z_i) + σ_n² − Σ_j V_j(i)²)
//	L_t,·  = (V_1(i), …, V_{t−1}(i), l_tt)
//	V_t(z) = (k(z_i, z) − Σ_j V_j(i) V_j(z)) / l_tt
//	σ²(z) ← σ²(z) − V_t(z)²
//	u_t    = (y_t − Σ_{j<t} L_tj u_j) / l_tt          (u = L⁻¹ y)
//	µ(z)  ← µ(z) + u_t V_t(z)
//
// which costs O(n·(dim + t)) per observation and O(n) memory per
// observation. The loops over candidates are split into contiguous blocks run
// on Config.Workers goroutines; every candidate's value is computed by the
// same sequence of floating-point operations whatever the number of workers,
// so results do not depend on Workers. All O(n) buffers are allocated in New
// or when V grows (geometrically, in chunks that are never copied), never per
// iteration.
//
// # Lazy evaluation
//
// At n = 10⁷ candidates V alone takes 8·n·t bytes (16 GB at t = 200), and the eager
// update reads all of it at every step. PosteriorConfig.Lazy stores no rows of V and
// makes the same choices, bit for bit. Every candidate z keeps a(z), b(z) and σ̃²(z)
// as of the first s(z) real observations (s(z) ≤ t), and, if one of the
// PosteriorConfig.LazyColumns slots is its, its column V_1..V_s(z). With
// w_j = u_j − m′_t e_j (u = L⁻¹(y − c), e = L⁻¹1, m′ as below; w = u without
// Standardise),
//
//	µ_t(z) = c + m′_t + a_s(z) − m′_t b_s(z) + Σ_{s<j≤t} w_j V_j(z)
//	Σ_{s<j≤t} V_j(z)² = σ̃²_s(z) − σ̃²_t(z)
//
// so that, by Cauchy–Schwarz on the sum and then on (‖w‖, √β·s_t)·(√(σ̃²_s − σ̃²_t), σ̃_t),
//
//	µ_t(z) + √β s_t σ̃_t(z) ≤ c + m′_t + a_s(z) − m′_t b_s(z) + σ̃_s(z) · √(W_s + β s_t²),
//	W_s = Σ_{s<j≤t} w_j²,
//
// where W_s, for every s at once, is one backward sum over the observations. A
// fantasy row has w = 0 (it leaves the mean unchanged) and only shrinks σ̃, so the
// bound holds with fantasies pending, from the state under the real observations. A
// scan (ArgmaxUpper) first brings up to date the best candidates of the previous
// scan (the winners of up to eight of its chunks); the best exact score so far is a threshold, and a candidate whose
// bound is below it can be neither the argmax nor tied with it (ties go to the lowest
// index, and only a strictly lower bound prunes), so it stays stale. The others are
// brought up to date by the recurrence of the incremental algorithm, continuing their
// stored column (or, without a slot, from the kernel and L), with the floating-point
// operations of the eager path in the same order: their µ and σ̃² are the eager
// path's values exactly, and so is the argmax. The bound is inflated to cover
// rounding: W by a relative 10⁻⁹, σ̃_s by √(16(t+1)ε σ_y²) (σ̃² is a running difference
// whose rounding error is at most about 2tε σ_y²), the root √(W_s + β s_t²) by a
// relative 10⁻¹², and the score by 64(t+1)ε(|c + m′| + 2σ_y(‖u‖ + |m′|‖e‖ + √β s)) plus
// 10⁻¹² of |µ|, several times the worst-case error of the sums involved; with
// fantasies pending, t counts them too. The σ̃² error bound assumes σ̃²_t does not
// round below 0 (it is then clamped to 0, and the excess is not covered), which needs
// a noise variance near σ_y²·ε·t or below.
//
// On BenchmarkLoop's data (Gaussian candidates, DefaultLengthscale, T = 200) about 5%
// of the candidates pass the bound at a step once the standardisation has settled (at
// t = 1 all do, since s_t jumps), each candidate is brought up to date about 13 times
// over the run, and continuing a stored column costs 0.86 of the eager update's
// multiply-adds while starting from the kernel costs 2.4 times (docs/EXPERIMENTS.md,
// "GP-UCB at 10⁷ candidates"). Candidates without a slot therefore cost more; the
// slots (8·Capacity bytes each) are given first come, first served (replayed on a
// 10⁵ run, other policies did no better). Argmax with an
// arbitrary score, and Mean or Variance of a stale candidate, bring candidates up to
// date on demand. Results do not depend on LazyColumns or Workers.
//
// The work is arranged for the machine, not the arithmetic. Workers take chunks of
// 16,384 candidates and share the threshold as it rises. A scan holds back up to 16
// candidates that pass, prefetching their columns, and brings them up to date four
// at a time in order of s, their columns interleaved so that one row's
// multiply-adds for the four are one vector operation. On amd64 with AVX2 the
// multiply-adds, the squared distances and the exponentials run as assembly whose
// lanes perform the scalar code's operations in its order, without fused
// multiply-adds (simd.go; TestSIMDMatchesScalar), and the rows of V and the
// columns ask for 2 MiB pages.
//
// # Standardised outputs
//
// With Config.Standardise the GP models ỹ = (y − m)/s, where m and s are the
// mean and the sample standard deviation (divisor t−1) of the outputs observed
// so far (s = 1 while t < 2 or when all outputs are equal). The kernel's
// SignalVariance and NoiseVariance are then in standardised units; Mean,
// Variance and the acquisition are reported in the original units:
//
//	µ(z)  = m + s µ̃(z) = m + k(z, Z_t) A⁻¹ (y − m 1)
//	σ²(z) = s² σ̃²(z)
//
// Since m changes with every observation the package keeps two incremental
// means, a(z) = Σ_j V_j(z) (L⁻¹(y − c))_j and b(z) = Σ_j V_j(z) (L⁻¹ 1)_j,
// with c the first observed output (a shift that keeps a and b on the scale of
// the spread of y), so that µ(z) = c + m' + a(z) − m' b(z) with m' = m − c.
// This is algebraically the exact posterior and costs O(n) per step instead of
// recomputing µ in O(n·t).
//
// # Noisy candidates
//
// A private projection released with the Gaussian mechanism (package projection,
// ProjectGaussian) gives candidates z_i = x_i + e_i with e_i ~ N(0, σ²I) independent,
// σ public, while the objective depends on the noise-free x_i. Config.InputNoiseVariance
// = σ² makes the GP use the covariance of f(x_i) and f(x_j) with the rows integrated
// out given the candidates (Girard, Rasmussen, Quiñonero-Candela and Murray-Smith 2003;
// Dallaire, Besse and Chaib-draa 2009).
//
// Which distribution of x given z? Girard et al. take x ~ N(z, σ²I), the posterior under
// a flat prior. Then E‖x_i − x_j‖² = ‖z_i − z_j‖² + 2rσ², while for fixed rows
// E‖z_i − z_j‖² = ‖x_i − x_j‖² + 2rσ² already: the noise is counted twice, and on the
// synthetic table of docs/EXPERIMENTS.md §1 that kernel made regret 4× worse than
// ignoring the noise. The package uses instead an empirical-Bayes Gaussian prior on the
// rows, x ~ N(m, S) with m the candidates' mean and S = Cov(z) − σ²I (eigenvalues below
// 0 set to 0), under which the candidates' spread is matched exactly. In the eigenbasis
// V of S (eigenvalues s_k), with λ_k = s_k/(s_k + σ²):
//
//	x | z ~ N(m + V Λ Vᵀ (z − m), σ² V Λ Vᵀ),  independently over rows,
//
// so x_i − x_j ~ N(µ, 2σ² VΛVᵀ), µ = VΛVᵀ(z_i − z_j), and per eigen-direction
// E exp(−w²/(2l²)) = (1 + 2p/l²)^{−1/2} exp(−µ²/(2(l² + 2p))) for w ~ N(µ, 2p): with
// p_k = σ²λ_k and u_i = ΛVᵀ(z_i − m),
//
//	E k_SE(x_i, x_j) = c σ_y² exp(−½ Σ_k (u_ik − u_jk)² / (l² + 2p_k)),
//	c = Π_k (l² / (l² + 2p_k))^{1/2},
//
// while a candidate with itself keeps k(x_i, x_i) = σ_y². Directions without signal
// (s_k = 0) have λ_k = p_k = 0 and drop out; with σ² → 0, λ → 1 and the plain kernel
// returns. The GP's kernel is therefore the squared exponential on the coordinates
// u_ik/√(l² + 2p_k) (an n × dim matrix beside the caller's candidates, computed in
// O(n·dim²) by New and again when the lengthscale changes)
// with signal c σ_y², plus (1 − c) σ_y² on a candidate's covariance with itself, by
// index: a repeated observation of candidate i, and the posterior variance at i, see
// the full σ_y². The extra (1 − c) σ_y² is variance of f at that candidate that other
// candidates cannot explain, not observation noise: it stays in the predictive
// variance. The GP treats the process f(x_i) as Gaussian (it matches its first two
// moments).
//
// The incremental algorithm is unchanged: only the kernel row k(z_i, ·) changes (other
// coordinates and constants, and σ_y² at index i), so the cost per observation is the
// same.
//
// Matérn 5/2 has no closed-form expectation under Gaussian input noise. Replacing
// ‖z_i − z_j‖² by the de-biased max(‖z_i − z_j‖² − 2·dim·σ², 0) was tried and rejected:
// the result is not a positive semi-definite kernel (two candidates whose de-biased
// distance is 0 become perfectly correlated while their distances to a third differ),
// and posterior variances went negative in the dense reference test. The package uses
// instead the squared exponential's structure: Matérn 5/2 of the distance between the
// same coordinates u_ik/√(l² + 2p_k) (unit lengthscale), signal c σ_y², plus (1 − c) σ_y²
// on the candidate itself — positive semi-definite by construction, the plain kernel at
// σ² = 0, and within 15% of a Monte Carlo expectation in the cases tested
// (TestMaternInputNoiseApproximation).
//
// Refit maximises the likelihood of this same kernel (σ² and the prior held fixed,
// repeats of a candidate keeping σ_y²). DebiasLengthscale corrects DefaultLengthscale,
// which noise inflates, for use as l.
//
// # Numerical guard
//
// l_tt² is at least σ_n² in exact arithmetic. If it falls to
// 1e-10·(σ_y² + σ_n²) or below (a candidate observed again, or a duplicate
// row, with NoiseVariance zero or tiny) Observe returns an error and leaves
// the GP unchanged; no jitter is added silently. Increase NoiseVariance or set
// SkipQueried.
//
// A GP is not safe for concurrent use.
package gpucb
