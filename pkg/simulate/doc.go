// Package simulate is privbo's experiment harness: it runs the curator in-process over a
// dataset or a synthetic GP function, repeats independent Bayesian-optimisation runs of
// several methods, and reports the simple regret per iteration as a CSV file and a PNG
// plot (mean with standard-error bars per method). It reproduces the experiments of
// Kharkovskii, Dai and Low, "Private Outsourced Bayesian Optimization", ICML 2020, §4
// (docs/MATHS.md §2.5).
//
// # Methods
//
//   - po-gp-ucb(r): PO-GP-UCB. Each run asks the curator for a new private projection
//     Z ∈ Rⁿˣʳ (Algorithm 1, docs/MATHS.md §2.1, a new M per run) and runs GP-UCB
//     over the rows of Z (Algorithm 2, docs/MATHS.md §2.4).
//   - gp-ucb: non-private GP-UCB over the scaled inputs X themselves.
//   - random: uniformly random rows without replacement.
//
// The GP methods run the modeler's own study session (modeler.Run: GP-UCB, or GP-BUCB
// with Config.Batch = q > 1 rows per round, refits every GPSettings.FitEvery answers,
// the recommendation) over Local, a modeler.Curator over the in-process curator: the
// simulation measures the code the modeler binary runs, not a copy of it. The GP's
// settings are given to the session explicitly (the noise rule below is applied here).
//
// Every method starts from the same uniformly random row in a given (draw, run) pair
// (common random numbers), and every answer comes from the curator's Query, so all
// methods see exactly the same recorded evaluations.
//
// # Regret
//
// With f the noise-free objective (after the optional log transform and sign change for
// minimisation) and x_1, …, x_t the rows queried so far, the simple regret is
//
//	S_t = max_i f(x_i) − max_{s ≤ t} f(x_s)   (over all n rows i),
//
// which is ≥ 0 and non-increasing in t. The tables report the mean of S_T over all
// draws and runs with its standard error sd/√N (sd with divisor N − 1).
//
// # The curator in-process
//
// Run builds a curator.Curator per run (package curator, no gRPC) over an in-memory
// dataset.Dataset, with one SQLite ledger (package ledger) in a temporary state
// directory removed at the end. Each run is its own ledger identity; the ledger dataset
// is named per (draw, method) so that the dataset-wide δ cap (< 1) is never reached by
// summing many runs. The projection's generator is
// projection.SeededSource(seed of the run) through
// curator.Config.SimulationProjectionSource: with the default lifted mechanism,
// simulations are reproducible and therefore NOT differentially private; they measure
// utility only. (With the Gaussian mechanism the noise comes from crypto/rand: runs are
// not reproducible, and a known M does not break its guarantee.)
//
// # Output privacy
//
// Config.Output makes the curator release each answer as clip(y, [L, U]) plus Laplace or
// Gaussian noise (curator.OutputPrivacy); the zero value releases exact answers, the
// paper's setting. [L, U] is the public range of the target in its own units and is
// transformed as the target is (log for LogOutputs, [−U, −L] for Minimize). Regret is
// still measured on the noise-free f. The GP then models the public noise
// (GPSettings.NoiseRule, gpucb.NoisyOutputPrior with the answer mechanism's NoiseVariance; default
// DefaultNoiseRule, chosen by the measurements in docs/EXPERIMENTS.md, "Honest
// defaults"). The curator draws this noise from crypto/rand, so such runs are not
// reproducible from Seed.
//
// # Top-1% hit rate
//
// Besides S_T, the summary reports the fraction of runs whose best f reaches the top 1%
// of the objective (f ≥ its 99th percentile, TopOnePercentThreshold; per draw for the
// synthetic problem) with its binomial standard error sqrt(p(1 − p)/N).
//
// # Synthetic GP (the paper's §4, Table 1; docs/MATHS.md §2.5)
//
// Inputs: a g×g grid on [−1, 1]² scaled by 25/√2 so that the corners have norm 25.
// f ~ GP(0, σ_y² exp(−‖x − x'‖²/(2 l²))) with the l = 0.25 × 25 = 6.25 (the
// authors' public configuration; the paper's text gives 1.25, see docs/MATHS.md §2.5). The
// squared-exponential kernel on a product grid factorises,
//
//	K = σ_y² K₁ ⊗ K₁,   K₁[a, a'] = exp(−(c_a − c_a')²/(2 l²)),
//
// so with K₁ = Q Λ Qᵀ (symmetric eigendecomposition, negative rounding eigenvalues set
// to 0) and S = Q Λ^{1/2}, the grid values F[a, b] = σ_y (S W Sᵀ)[a, b] with W a g×g
// matrix of i.i.d. N(0, 1) have covariance exactly K (up to rounding): an exact draw
// in O(g³) instead of the O(g⁶) Cholesky of the n×n matrix, without jitter. The route
// "cholesky" (SyntheticConfig.Sampler) factorises K + jitter·I of size n×n instead
// (gonum mat.Cholesky, jitter 1e−8 multiplied by 10 until it succeeds, reported), for
// comparison. The answers the curator holds are y = f + ε_GP with ε_GP ~ N(0, σ_n²)
// drawn once per row from the seed (the paper's noisy measurement, recorded once).
//
// # Parallelism
//
// Runs are independent; Config.Workers goroutines (default 2) take them from a queue,
// and each GP uses one goroutine so that the workers do not oversubscribe the cores.
// Results do not depend on the number of workers.
package simulate
