// Package learner trains and scores L2-regularised logistic regression — binary,
// and multinomial (softmax) for K > 2 classes — on a curator's data: the built-in
// learner of privbo's private hyperparameter search jobs (Kusner et al., ICML 2015;
// DP-HyPO, Wang et al. 2023).
//
// # Data
//
// Data is a row-major n×d feature matrix X with labels y_i ∈ {0, 1}; ỹ_i =
// 2y_i − 1 ∈ {−1, +1} below. Data with K > 2 classes (NewClassData) has labels
// y_i ∈ {0, …, K−1}; K is public (the learner's shape depends on it) and is
// never counted from the labels. SplitRandom and SplitByMask cut a training part
// (not sensitive in Kusner et al.'s setting) from a validation part (the
// sensitive V). The random split is driven by a seeded generator
// (math/rand/v2 PCG): the seed is operator configuration, reproducible on
// purpose, and protects nothing. ClipRows scales each row to ‖x_i‖₂ ≤ R,
// which Kusner et al.'s Algorithm 3 needs with R = 1.
//
// Two preprocessings:
//
//   - ScaleToBounds clamps feature j to public bounds [l_j, u_j], maps it
//     affinely onto [−1, 1] and clips each row to a public norm bound
//     (by default BoundedRowNorm(d) = max(1, √d/2)).
//     Each output row depends on its own input row and the public constants
//     only, so adding or removing a training row changes no other row's
//     features: DP-SGD's add/remove-one guarantee below then covers the
//     preprocessing as well. The bounds must not be computed from the data
//     (or must be estimated with a differentially private mechanism whose
//     cost is accounted separately).
//   - FitStandardiser/Apply z-score features with the means and standard
//     deviations of the training part. Fitted to the training rows, the
//     scaling of every row depends on every other: one added outlier moves
//     all rows' features and hence DP-SGD's summed clipped gradient by far
//     more than the clipping norm R the accounting assumes
//     (ClippedGradientSum measures it). So a Standardiser fitted to DP-SGD's
//     own training rows voids TrainDPSGD's guarantee; it is fine where the
//     training rows are not protected (Kusner et al.'s setting) and the
//     validation rows are scaled with training statistics only.
//
// # Non-private training
//
// TrainLogistic minimises
//
//	F(w, b) = λ/2 ‖w‖² + (1/n) Σ_i log(1 + exp(−ỹ_i (w·x_i + b))),   λ > 0,
//
// with the bias b unregularised, by gonum/optimize's L-BFGS with the analytic
// gradient
//
//	∇_w F = λ w + (1/n) Σ_i (σ(z_i) − y_i) x_i,   ∂_b F = (1/n) Σ_i (σ(z_i) − y_i),
//
// z_i = w·x_i + b, σ(t) = 1/(1 + e^{−t}). F is strictly convex; with both
// labels present it has a unique minimiser. TrainLogisticNoBias fixes b = 0,
// which makes F λ-strongly convex in all its parameters: that is the learner
// Kusner et al.'s Algorithm 3 analyses (w_λ = argmin_w λ/2‖w‖² + (1/n)Σ ℓ,
// ℓ 1-Lipschitz in w when ‖x‖ ≤ 1, which the logistic loss is). An
// unregularised bias is not covered by that analysis: the bound
// ‖w_λ − w_λ'‖ ≤ (λmax − λmin)/(λmax λmin) uses strong convexity in every
// parameter. Use TrainLogisticNoBias for Algorithm 3 (a constant feature
// column, scaled so rows keep ‖x‖ ≤ 1, then plays the bias's role and is
// regularised).
//
// # Validation scores
//
// Accuracy is the fraction of validation rows with the predicted label
// 1[z > 0] equal to y. For Kusner et al.'s Algorithm 3 the score must be
// f_V(w) = −(1/m) Σ g(w, x_i, y_i) with g L-Lipschitz in w and bounded by g*
// (their Assumption 2). Two choices, for rows with ‖x‖ ≤ 1:
//
//   - RampScore: ramp loss g = clamp(1 − ỹ z, 0, 1); |∂g/∂z| ≤ 1, so
//     L = ScoreLipschitz = 1 and g* = ScoreBound = 1.
//   - SigmoidScore: normalised sigmoid g = 1/(1 + exp(ỹ z)) (Huang, Shi &
//     Suykens 2014); |∂g/∂z| ≤ 1/4, so L = SigmoidLipschitz = 1/4 and
//     g* = SigmoidBound = 1. Its smaller L gives Algorithm 3 a smaller
//     sensitivity Δ = (λmax − λmin)L/(λmax λmin) + min(g*/m, L/(m λmin)).
//
// (∂z/∂w = x and ‖x‖ ≤ 1 turn the bound on ∂g/∂z into the Lipschitz constant
// in w.)
//
// # DP-SGD (Abadi et al., CCS 2016)
//
// TrainDPSGD runs Epochs·⌈n/B⌉ steps from w = 0, b = 0. Each step
//
//  1. Poisson-subsamples the rows: row i joins the batch independently with
//     probability q = B/n, exactly (a uniform integer U < n from the Source,
//     accepted when U < B), B = ExpectedBatchSize;
//  2. computes per-example gradients g_i = (σ(z_i) − y_i)·(x_i, 1) over the
//     d + 1 parameters (w, b) and clips them: g_i ← g_i·min(1, R'/‖g_i‖₂);
//  3. releases the noisy sum S = Σ_i g_i + N(0, σ² I), σ = NoiseMultiplier·R,
//     R = ClipNorm;
//  4. steps (w, b) ← (w, b) − η (S/B + (λ w, 0)), η = LearningRate,
//     λ = Lambda (the regulariser is data-independent and not noised).
//
// Floating-point safety (Mironov 2012). The noise is a discrete Gaussian on a
// fine lattice h·ℤ, h = 2^k, k = ⌊log₂ min(σ, R)⌋ − 20, sampled exactly by
// dp.DiscreteGaussian with variance (σ/h)², an exact big.Rat. Each clipped
// g_i is rounded coordinate-wise to the lattice and the batch sum is taken in
// exact integer arithmetic, so the released sum h·(Σ_i round(g_i/h) + Z)
// never exposes low-order bits of the data. Rounding moves a vector by at
// most √(d+1)·h/2, so clipping to R' = R − √(d+1)·h makes every rounded
// per-example vector have norm ≤ R: adding or removing one row changes the
// integer sum by a vector of norm ≤ R/h in lattice units, exactly as the
// continuous analysis assumes. The discrete Gaussian has the same Rényi
// moments as the continuous one for such lattice shifts: for a shift μ on
// the lattice (in lattice units) and an integer j ≥ 1,
// E_{N_ℤ(0,s²I)}[(p_μ/p_0)^j] = exp(j(j−1)‖μ‖²/(2s²)), identical to the
// continuous Gaussian (complete the square; the lattice sum is invariant
// under the integer shift jμ; the same computation gives the discrete
// Gaussian's concentrated-DP bound in Canonne, Kamath & Steinke 2020). The
// subsampled-Gaussian accountant's integer-order bound for the mixture
// against the base (Mironov, Talwar & Zhang 2019, "Rényi Differential
// Privacy of the Sampled Gaussian Mechanism": A_α = Σ_j C(α,j)(1−q)^{α−j} q^j
// E[(p_μ/p_0)^j]) is built from exactly these moments and carries over
// unchanged. Their argument that the reverse direction is no larger is
// written for the continuous Gaussian; privbo applies it to the lattice
// version as well (the one step here that is not re-proved).
//
// # Softmax regression (K classes)
//
// TrainSoftmax minimises λ/2 Σ_k ‖w_k‖² + (1/n) Σ_i −log p_{i,y_i}, p_i =
// softmax(z_i), z_ik = w_k·x_i + b_k (biases unregularised), by L-BFGS: the
// non-private reference. TrainDPSGDSoftmax is DP-SGD on the same loss with the
// same four steps as above, for the K(d + 1) parameters: row i's gradient is
// the outer product (p_i − e_{y_i}) ⊗ (x_i, 1), whose Euclidean norm over all
// parameters is ‖p_i − e_{y_i}‖·‖(x_i, 1)‖; it is clipped to R' over all of
// them together, rounded to the lattice coordinate by coordinate (moving it by
// at most √(K(d+1))·h/2, so R' = R − √(K(d+1))·h) and summed exactly, and the
// noise is added to every coordinate. Adding or removing one row therefore
// moves the integer sum by at most R/h in lattice units, exactly as for
// logistic regression, and the guarantee below holds unchanged.
// TrainDPSGD is the one-output case of the same code (binary models are bit
// for bit what they were before softmax was added; a test pins them).
//
// Guarantee. TrainDPSGD's privacy is that of the Poisson-subsampled Gaussian
// mechanism with sampling rate q = B/n, noise multiplier NoiseMultiplier
// (σ/R) and Steps(n) compositions, neighbouring datasets differing by adding
// or removing one row of the data TrainDPSGD is given; the returned model is
// post-processing. The guarantee extends to the raw rows only through a
// preprocessing that maps each row on its own (ScaleToBounds with public
// bounds), not through one fitted to the rows (a Standardiser). q and the
// number of steps are computed from n, which is treated as public (as in
// Opacus and TF Privacy). The accounting itself (RDP of the subsampled
// Gaussian) lives in package dp. With NoiseMultiplier = 0 no noise is added
// and there is no guarantee: that mode is a non-private baseline.
//
// NoisyAccuracy releases accuracy + N(0, σ²) the same way, for any number of
// classes, in count units:
// the number of correct predictions is an integer, its sensitivity under
// replacing one validation row is 1, and it is released as
// (count + h·Z)/m with the lattice h ≤ 1 a power of two and Z a discrete
// Gaussian of variance (σm/h)². It is (α, α/(2σ²m²))-RDP for replace-one
// neighbours (the validation size m is public).
//
// Randomness for privacy comes from a *dp.Source (dp.CryptoSource in
// production). Nothing here logs, and errors never quote data values.
package learner
