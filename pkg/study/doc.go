// Package study is the modeler's local, embedded record of its PO-GP-UCB studies
// (Kharkovskii, Dai & Low, ICML 2020, Algorithm 2; docs/MATHS.md §2.4) and renders reports of
// them.
//
// # What a study holds
//
// A study is everything the modeler needs to continue where it stopped, and nothing the
// curator protects: how to reach the curator again (an address and the paths of the
// identity's files, never their contents), the settings that determine the sequence of
// queries (r, ε, δ, label, T, q, kernel, hyperparameter-fitting and UCB parameters), the released projection Z
// (an n × r matrix, already public to the modeler), the initial row drawn uniformly at
// random, every query and its answer in order, the caller's budget as last reported by
// the curator, and optionally the known optimum max_i f(x_i) of a simulation.
//
// # Storage and durability
//
// One SQLite database (modernc.org/sqlite, pure Go) per studies directory, studies.db,
// in WAL mode with synchronous=FULL: a transaction is on disk when its commit returns, so
// a modeler killed at any instant (SIGKILL, power loss) finds every observation it
// recorded, and none half-written. Z lives beside it as NAME.z in pkg/matrixio's format,
// written and fsynced before the row that names it and its SHA-256 is committed; a stale
// file left by a crash between the two is replaced. Observations of one round (one Query
// request, q rows) are recorded in one transaction, and iteration numbers must continue
// the stored sequence, so the log has no gaps or duplicates.
//
// A study is run by one process at a time: Store.Lock takes an exclusive flock(2) on
// NAME.lock, which the kernel releases when the holder dies.
//
// # Resuming
//
// GP-UCB over a fixed candidate set is deterministic (pkg/gpucb: the same observations
// in the same order give bit-identical state), so replaying the stored observations
// rebuilds the modeler's posterior exactly and the next choice is the one the
// interrupted run would have made. An answer received but not yet recorded is asked
// again; the curator returns the value it released before, at no cost.
//
// The settings are fixed when the study is created, except the number of iterations T:
// Store.SetIterations moves it to any value not below the number of observations
// recorded (raising it un-finishes a done study, as adding trials to an Optuna or Vizier
// study does). Past choices do not depend on T (β_t depends on the iteration t), so a
// sequential study continues as if it had been created with the larger T; pkg/modeler
// says when the same holds for batches.
//
// # Reports
//
// WriteReport renders a study as one self-contained HTML page (inline CSS, images as
// base64 data URIs; the PNGs are also written beside it): first the recommended row (the
// GP's, as package modeler computes it: Recommendation) with its posterior mean ± sd and
// what the answers' noise allows (AnswerNoiseText); then the best answers — labelled
// noisy answers when the answers are private — the value of every query with the running
// best y*_t = max_{s ≤ t} y_s, the privacy spent, and, when the optimum f* is known, the
// simple regret r_t = f* − y*_t (Srinivas et al. 2010).
package study
