// Package modeler is the modeler's side of PO-GP-UCB (Algorithm 2 of Kharkovskii et
// al. 2020; docs/MATHS.md §2.4): it asks the curator for a private projection Z of the
// dataset, runs GP-UCB over the rows of Z, and queries the curator for the output of the
// chosen rows. It never sees a raw row; all it holds is Z and the answers.
//
// The curator is reached through Curator, an interface in this package's own types:
// pkg/curatorclient implements it over gRPC (waiting, retries, the checked projection
// stream) and pkg/simulate over an in-process curator, so the study session below is the
// same code in the modeler binary and in simulations. This package imports no gRPC.
//
// # Sequential choice (q = 1)
//
// After t answers, the next row is z_{t+1} = argmax_z µ_t(z) + √β_{t+1} σ_t(z) over the
// unqueried rows of Z (pkg/gpucb, incremental exact posterior, O(n·(r + t)) per answer).
//
// # Batches (q > 1): GP-BUCB
//
// With Config.Batch = q the modeler picks q rows per round and sends them in one Query
// request (Desautels, Krause & Burdick, "Parallelizing exploration–exploitation
// tradeoffs in Gaussian process bandit optimization", JMLR 15, 2014). The first row of a
// round is the sequential choice above. Each later row is chosen after the pending ones
// have entered the posterior as hallucinated observations equal to their posterior mean:
//
//	x_{t,1}   = argmax µ_t + √β_{t+1} σ_t
//	ỹ_{t,k}   = µ_{t,k−1}(x_{t,k})                    (the stand-in)
//	x_{t,k+1} = argmax µ_{t,k} + √β_{t+k+1} σ_{t,k}
//
// where µ_{t,k}, σ_{t,k} condition on the t real answers and k stand-ins. Conditioning on
// y = µ(x) leaves the posterior mean unchanged everywhere (µ_{t,k} = µ_t) and shrinks the
// variance around the pending rows, σ²_{t,k}(z) ≤ σ²_{t,k−1}(z), so the batch spreads out
// instead of piling onto the maximiser. With standardised outputs the stand-ins are taken
// in the units standardised by the real answers' mean and deviation, which the stand-ins
// do not change. When the answers come back they replace the stand-ins: the real
// posterior is only ever conditioned on real answers.
//
// The stand-ins are the posterior's own fantasies (gpucb.Posterior.Fantasize), chosen by
// the session's acquisition rule (gpucb.UCB, whose β counts them) and dropped, exactly,
// before the answers are observed (DropFantasies): O(n·(r + t)) per stand-in, as an
// answer, and nothing replayed. A stand-in has the noise variance of the answer it
// stands in for (gpucb.Posterior.FantasizeNoise with the factor of Config.Clip's range;
// 1 for the public range), as the real answers have theirs.
//
// # The projection's noise
//
// A release of the Gaussian projection mechanism carries N(0, σ²) noise in every entry of
// Z, with σ public and stated by the curator (Projection.NoiseSD, kept in the stored
// release). By default (Config.ProjectionNoise) the GP models it: gpucb's expected kernel
// (gpucb.Config.InputNoiseVariance = σ²) and, for the default lengthscale, the median
// distance to the mean de-biased for the noise (gpucb.DebiasLengthscale); docs/MATHS.md
// §2.6. The setting is stored with a study and σ is read from the stored release, so a
// resumed study rebuilds the same GP. For `modeler run --r auto` the curator chooses r
// and states its rule's figures in the quote (Quote.RChoice, docs/MATHS.md §2.6); the
// modeler recomputes none of the curator's calibrations: the projection's σ, the
// answers' noise sd and family come from the curator's statements on the wire.
//
// # Hyperparameters
//
// The kernel's lengthscale l, signal variance σ_y² and noise variance σ_n² (θ) are fixed
// (Config; l defaults to gpucb.DefaultLengthscale of Z) unless Config.FitEvery = k > 0.
// Then θ is refitted by maximum likelihood on the t answers so far (type-II maximum
// likelihood, Rasmussen & Williams 2006 §5.4; gpucb.Posterior.Refit: L-BFGS on log p(y | θ) from
// the current θ and from three random starts, within bounds scaled to Z and the outputs)
// at the end of every round that takes t to or past a multiple of k, once t ≥ 3:
//
//	refit after a round that took t from t₀ to t₁  ⇔  ⌊t₁/k⌋ > ⌊t₀/k⌋ and t₁ ≥ 3
//
// For q = 1 that is after every k-th answer, the rule of pkg/simulate. Refits happen
// only between rounds, never while stand-ins are pending: the q rows of a round are all
// chosen under one θ, the θ of the posterior that holds their stand-ins. A fit costs
// O(t³) per likelihood evaluation (some hundreds of evaluations) and an exact rebuild of
// the posterior, O(n·t·(r + t)).
//
// The fit is deterministic. Its random starts after t answers are seeded by a fixed
// function of t, not by crypto/rand: they search the likelihood of data the modeler
// already holds and protect nothing, and a resumed study must fit as the uninterrupted
// one did. A fit that fails (no start reaches a positive-definite covariance) keeps the
// previous θ. Result reports the θ in use at the end and the number of fits.
//
// # Private answers
//
// A curator that releases answers with output privacy (GetDatasetInfo's OutputPrivacy:
// y clipped to a public [L, U] plus Laplace or Gaussian noise) adds noise whose variance
// σ_n² is public and stated by the curator (OutputPrivacy.noise_sd, study.OutputPrivacy.AnswerNoise). Unless Config gives SignalVariance and
// NoiseVariance explicitly, the GP then models it (Rasmussen and Williams 2006, §2.2)
// with the prior pkg/simulate uses by default, NoiseRule (gpucb.NoisyOutputPrior): the
// answers standardised, σ_y² = 1 and σ_n² ← σ_n²/s_f² with s_f = (U − L)/4, instead of
// the near-interpolating σ_n² = 1e-3 that suits exact answers. On diabetes this raised
// PO-GP-UCB's top-1% hit rate from 0.625–0.64 to 0.695–0.74 at ε_out = 1–2
// (docs/EXPERIMENTS.md, "Honest defaults"). The prior is derived from the release's
// stored output privacy, so a resumed study uses the prior it started with; the stored
// settings keep the variances as given (0: derived).
//
// # The result
//
// A study's answer is Result.Recommended: the queried row with the best posterior mean,
// with that mean and the posterior standard deviation of the objective there, in the
// answers' units (the GP's standardisation and the direction undone). With private
// answers each answer carries noise of public sd (AnswerNoiseSD; 226 for the demo's
// Laplace ε = 2.5 on [0, 400]), so the best single answer (Result.BestIndex) is mostly
// the luckiest noise draw; the posterior mean pools every answer. With Laplace answers
// the posterior is the one under their own Laplace likelihood (Config.RecommendLikelihood,
// robustRecommend), so that one lucky draw moves the recommendation less; the rows were
// chosen under a Gaussian of the same variance, and Result.GaussianRecommended is that
// GP's choice.
//
// The best of many noisy means is biased upwards (the winner's curse): the recommended
// row is the one whose answer, and its neighbours', drew the luckiest noise. The Laplace
// likelihood resists it rather than amplifying it. Under the default prior with Laplace
// answers s_f²/σ_n² = ε_out²/32, so an isolated row's mean moves a small fraction of the
// way to its own answer (the predictive mean, Rasmussen & Williams 2006, §2.2): a lucky
// answer keeps a large residual r, and the EM gives it the variance b·|r|, above the
// Gaussian's 2b². The floor |r| ≥ b/2 (variance b²/2) sharpens only answers close to
// their posterior mean (TestIsolatedLuckyRowNotTrusted). On four shipped tasks at
// ε_out = 1 the rule recommended a row below the median in 33% of runs, against 36–38%
// for the Gaussian, the EM floored at 2b, a prior centred on the public range, µ − σ, a
// smaller s_f or a longer lengthscale (docs/EXPERIMENTS.md, "A recommendation worth
// acting on"). What limits it is the answers' noise, sd √2·(U − L)/ε_out: no rule tried
// ranks the queried rows much better.
//
// A run stopped before its end (a cancelled context) still returns what it knew, with
// its error. Replay rebuilds a stored study's result without the curator, for its
// report.
//
// # Answer options
//
// Config.Clip asks the curator to clip every answer to a range inside its public output
// range (noise calibrated to that width at the same ε and charge, pkg/curator's Clip);
// the GP gives each answer the noise variance of its own range (gpucb.Posterior.ObserveNoise).
// Config.ConfirmRows ends the study with confirmation passes on its best rows, each pass
// charged ε_out again; what a study could not pay is refused before anything is charged.
// Both are off by default: docs/EXPERIMENTS.md ("More informative answers") measured
// neither beating the default at equal ε on diabetes.
//
// # Studies
//
// RunStudy keeps the study in a pkg/study store and resumes it after a crash or an
// interrupt: the projection, the initial row and every answer are recorded durably; the
// posterior is rebuilt by replaying the recorded answers (bit-identical, pkg/gpucb is
// deterministic) and the study continues with the choice the interrupted run would have
// made. A round that was answered but not recorded is asked again, and the curator
// returns the values it released before, at no cost. The replay goes round by round, as
// recorded, through the code that observes live answers, so the hyperparameters are
// refitted at the same points with the same seeds (with FitEvery the rebuild pays for
// those fits again).
//
// # Extending a study
//
// On resume every setting must be given as stored except the number of iterations T,
// which may become any value at least the number of iterations recorded (RunStudy;
// study.Store.SetIterations updates it in a transaction):
//
//   - a larger T continues the study, finished or not, as adding trials to an Optuna or
//     Vizier study does;
//   - a smaller T that is still at least the recorded count ends a stopped study there
//     (nothing recorded is lost, and T can be raised again later);
//   - a T below the recorded count is refused, with the count.
//
// Nothing already chosen depends on T: β_t and the refit points depend on the iteration
// t. So a sequential study extended from T to T' makes the choices of a study created
// with T'. With q > 1 the last round of the shorter study has min(q, T − t) rows and is
// answered before the next round is chosen; the two studies agree when T − 1 is a
// multiple of q (T ends a round of the longer study). Otherwise their first T rows are
// the same (a batch is chosen row by row) and the later ones may differ.
package modeler
