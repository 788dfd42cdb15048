// Package projection implements the curator part of PO-GP-UCB (Kharkovskii, Dai
// and Low, "Private Outsourced Bayesian Optimization", ICML 2020, Algorithm 1):
// a Johnson–Lindenstrauss random projection of a data matrix meant to be
// differentially private (docs/MATHS.md §2.1; [Project]), and the same projection
// with Gaussian noise that is (ε, δ)-DP ([ProjectGaussian], the curator's
// default; see "The claim does not hold" below).
//
// # The mechanism
//
// Input: X ∈ Rⁿˣᵈ (row-major), privacy parameters ε > 0, 0 < δ < 1 and the
// projection dimension r ≥ 1.
//
//  1. Centre the columns: X ← X − 1 1ᵀ X / n.
//  2. Draw M ∈ Rᵈˣʳ with i.i.d. N(0, 1) entries.
//  3. Thin SVD X = U Σ Vᵀ, σ₁ ≥ … ≥ σ_d, σ_min = σ_d (zero when n < d or X
//     is rank-deficient).
//  4. ω = 16 · sqrt(r · log(2/δ)) · log(16 r / δ) / ε.
//  5. If σ_min ≥ ω: Z = r^(−1/2) X M.
//  6. Otherwise: X̃ = U · sqrt(Σ² + ω² I) · Vᵀ, that is every singular value
//     σ_j is lifted to sqrt(σ_j² + ω²) while U and V are kept, and
//     Z = r^(−1/2) X̃ M.
//
// Z ∈ Rⁿˣʳ is released.
//
// Neighbouring relation and guarantee: X and X′ are neighbours when they differ
// in one row i* with ‖x_i* − x′_i*‖₂ ≤ 1, all other rows equal. The paper
// claims that under that relation the output Z is (ε, δ)-differentially private
// (Theorem 1; the proof follows Blocki, Blum, Datta and Sheffet, FOCS 2012, and
// needs every singular value of the projected matrix to be at least ω, which
// step 6 enforces). The units of X therefore decide what is protected: the
// caller must scale the data so that one unit is the change to hide.
//
// # The claim does not hold
//
// Z = r^(−1/2) X̃ M lies in the column space of X̃, span(U) ⊇ colspace(X_c)
// (equal when X_c has full column rank: lifting changes Σ, not U). Blocki et
// al. multiply on the other side (R·X mixes rows, and each output row is
// N(0, XᵀX) with a full-rank d×d covariance); here every column of Z is
// N(0, X̃X̃ᵀ/r) with an n×n covariance of rank at most d, and when n > d + 1
// moving one row by less than a unit moves its support. An adversary who knows
// every other row — the adversary of the DP definition — computes X̃ under
// both hypotheses, tests which column space holds Z's columns, and is right
// with probability 1 (TestLiftedReleaseRevealsColumnSpace). Far less is
// needed to do harm: Z = X_c B with B = C M/√r for a fixed d×d matrix C (C = I
// in step 5; in step 6 C = V diag(sqrt(1 + ω²/σ_j²)) Vᵀ at full rank), so
// anyone who knows d + 1 affinely independent rows solves for B and reads r
// exact linear measurements x_i B of every other row — every row in full
// when r ≥ d. [ProjectGaussian] releases the same JL projection plus Gaussian
// noise calibrated to its sensitivity, which is (ε, δ)-DP against any
// adversary; Project stays for fidelity to the paper's Algorithm 1.
//
// Distance preservation (Lemma 1 and Theorem 2 of the paper): if
// r ≥ 8 log(n²/µ)/ν² with ν ∈ (0, ½), µ ∈ (0, 1), then with probability at least
// 1 − µ every pair of rows satisfies
//
//	(1 − ν)‖x − x′‖² ≤ ‖z − z′‖² ≤ (1 + ν) C′ ‖x − x′‖²,
//
// with C′ = 1 in step 5 and C′ = 1 + ω²/σ_min² in step 6.
//
// # Randomness
//
// M must be secret and unpredictable: [SecureSource] seeds a ChaCha8 generator
// with 32 bytes from crypto/rand and never exposes the seed. [SeededSource]
// exists for simulations and tests only. [Source] is a struct with unexported
// fields, so a caller cannot hand Project an arbitrary generator by accident.
// Neither M, the seed nor any data row is logged or returned; the [Report] holds
// data-dependent quantities (σ_min, which branch was taken) for the curator's
// operator only and must never be sent to the modeler.
//
// # Computation
//
// Z is always computed as a product of the (centred) n×d data with a small d×r
// matrix, so the cost after the factorisation is O(n·d·r) and nothing n×n is
// ever formed. Two routes compute the factorisation:
//
//   - "gram": the d×d Gram matrix G = XᵀX = V Σ² Vᵀ is accumulated in one
//     parallel pass over row blocks and diagonalised (gonum mat.EigenSym). Step 5
//     needs only σ_min. In step 6, U = X V Σ⁻¹ gives
//     X̃ = X · V diag(sqrt(1 + ω²/σ_j²)) Vᵀ, so Z = X · (A M) with A d×d.
//     Cost O(n·d²) plus O(d³). The centred matrix is never materialised: each
//     block of rows is centred into a small buffer.
//   - "svd": the thin SVD of the centred copy (gonum mat.SVD, LAPACK dgesvd).
//     Used when the Gram route is not numerically sound (see below), when
//     X is rank-deficient (the directions with σ_j = 0 need the orthonormal
//     completion of U, which the thin SVD provides) and when n < d. Its memory
//     is about three n×d matrices (the centred copy, gonum's working copy and U).
//
// Soundness of the Gram route. Forming G and diagonalising it perturbs the
// eigenvalues by about τ·λ_max with τ = (d + sqrt(n))·ε_mach (a probabilistic
// rounding model for the blocked sums plus the backward error of the
// eigensolver), so σ_j² is only known to ±τ·σ₁². Project uses the Gram route
// only when (a) the branch decision σ_min ≥ ω is unambiguous,
// |σ_min² − ω²| > τ·σ₁², and (b) in step 6, the worst-case relative error of
// the smallest lifted singular value, about ½·τ·κ³·ω²/(σ_min² + ω²) with
// κ = σ₁/σ_min, is at most 1e−6 (a first-order bound on ‖X (f(G+E) − f(G))‖
// for f(λ) = sqrt(1 + ω²/λ)). Otherwise it factorises X directly. In
// particular singular values below about sqrt(τ)·σ₁ (rank deficiency,
// near-duplicate columns) always take the SVD route.
//
// When n < d only min(n, d) = n singular directions exist: the thin SVD gives
// U n×n, V d×n, and X̃ = U diag(sqrt(σ_j² + ω²)) Vᵀ over those n directions,
// which is the paper's line 9 with its n×d matrix I_{n×d}. After centring,
// rank(X) ≤ n − 1, so at least one of those n directions has σ_j = 0 and is
// lifted to ω; X̃ then has n singular values, all at least ω.
//
// Row blocks are processed by up to GOMAXPROCS goroutines; partial sums are
// combined in a fixed order, so the result does not depend on scheduling or on
// the number of workers. ctx is checked between blocks.
//
// # Memory
//
// Z = A·B (A the centred data or U, B a small matrix derived from M) is computed
// a window of WindowBytes (8 MiB) of rows at a time. ProjectStream and
// ProjectGaussianStream return it as a Stream, a reader of its bytes in package
// matrixio's format that computes the next window while the last is read, so a
// release can be hashed, stored and sent without ever being held whole; Project
// and ProjectGaussian fill one slice through the same windows, with the same
// bytes. MemoryNeed bounds what a Stream allocates from public quantities
// (n, d, r, the mechanism), so that a curator can admit a release before
// touching the data: about two windows, M and the q×q matrices derived from it
// (q = max(d, r)), and for the lifted mechanism the SVD route's copies of the
// n×d data (about 5·n·d values), which the data decide whether it needs.
package projection
