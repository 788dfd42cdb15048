// Package dataset loads a curator's CSV or Parquet file and scales its features
// to the protected unit.
//
// # The protected unit
//
// PO-GP-UCB (Kharkovskii, Dai and Low, "Private Outsourced Bayesian
// Optimization", ICML 2020, §3) protects neighbouring datasets X, X′ that
// differ in a single row i* with
//
//	‖x_i* − x′_i*‖₂ ≤ 1,
//
// all other rows being equal. The units of X therefore decide what is
// protected: a change of one record's feature vector of Euclidean length one,
// after scaling, is hidden; larger changes are protected with proportionally
// weaker guarantees (group privacy). This package makes the choice of units
// explicit. Every Dataset carries a Unit text, written for the curator's
// operator, saying what one unit is under the scaling used.
//
// The modes below scale each row with constants fixed before the data are
// seen (or estimated from them with differential privacy), clip every row to
// Euclidean norm ClipNorm (default 25, the maximal norm of Kharkovskii et al.
// 2020, §4) and divide it by Unit (default 1):
//
//   - schema: a public schema file (LoadSchema; examples/data/*.schema.csv)
//     gives each feature public bounds [l, u] or a public scale s and offset
//     o. A bounded column is clamped to [l, u] and mapped affinely onto
//     [−c, c], c = ClipNorm/√d; a scaled column maps x to (x − o)/s. A line
//     for the target gives its public range (Dataset.TargetRange).
//   - private: as schema, with bounds estimated by EstimateBoundsWith, which
//     is (ε, δ)-DP (or ε-DP) under the replacement of one record ("Private
//     bounds" below). Scaling takes three steps: LoadRaw, charge the ledger,
//     Raw.EstimateScaling, Raw.Scale.
//   - fixed: divide each column by a public scale chosen by the operator,
//     optionally after subtracting a public offset.
//   - none: the raw units of the columns.
//
// Clamping is 1-Lipschitz per column and clipping (the projection onto the
// ball of radius ClipNorm) is 1-Lipschitz per row, so a change of one record
// by at most one unit of the affine scaling changes exactly that scaled row,
// by at most one unit, and no other row; replacing a whole record moves its
// row by at most ClipDiameterUnits() = 2·ClipNorm/Unit units, the distance a
// record-level guarantee is converted for. Dataset.Private is true.
//
// Two further modes keep the old behaviour under names that say what it is:
//
//   - standardise-nonprivate (the zero Scaling): z-score each column with the
//     data's mean and population standard deviation, then multiply all of X
//     by one factor so that max_i ‖x_i‖₂ = MaxNorm (default 25). A constant
//     column is centred to zero and treated as if its sd were 1.
//   - maxnorm-nonprivate: centre the columns and multiply by one factor so
//     that max_i ‖x_i‖₂ = MaxNorm.
//
// Their scaling is a function of every record: one patient's change moves
// every scaled row, so the (ε, δ) claim of a release calibrated for one unit
// does NOT hold (Dataset.Private is false, ClipDiameterUnits is +Inf, and the
// Unit text says so). Their Offset and Scale are statistics of the data, for
// the curator's operator only. The old names standardise, standardize and
// maxnorm are refused.
//
// # Private bounds
//
// EstimateBoundsWith estimates, for each of the d columns of an n×d table,
// an interval meant to hold the bulk of the column (about its 1st to 99th
// percentile): the curator clamps and scales features to it and clips private
// answers to the target's. Its utility rests on the rows themselves, not on
// how many rows lie in a tail: the exponential mechanism it replaces picked a
// quantile over a 457-point grid from ±1.5e−5 to ±1.9e12, where at the
// curator's default ε_s = 1 over 11 columns the empty candidates beyond the
// data, tied in score, outweighed the few near it: bounds 10⁶–10¹¹ times too
// wide on diabetes.
//
// Relation. Neighbouring tables differ in one row, replaced by any other row;
// n is public. The estimate is charged under ledger.RelationRecord.
//
// Grid. A signed logarithmic grid with f bins per octave: the zero bin
// (−p₀, p₀), p₀ = 2⁻²⁰, and for j = 1…M, M = 60f, the bins
// p_{j−1} ≤ |v| < p_j of either sign, p_j = p₀·2^{j/f}; magnitudes from 2⁴⁰
// on fall in the outermost bins (K = 2M + 1 bins per column). f is the
// largest power of two with f ≤ 64 and 8fs ≤ n, s the noise sd below: a
// public choice, finer when more rows stand above the noise.
//
// Mechanism. Two releases of counts, all columns at once:
//
//  1. every column's counts on the grid, each plus independent noise;
//  2. per column, chosen from release 1 alone: for a column whose located
//     range (step b below, without margin) lies within two grid bins, or a
//     quarter of an octave, of one sign, the counts of 64 equal bins over
//     that range widened by half its width on each side, with an underflow
//     and an overflow bin; for every other column the grid counts again.
//     Plus independent noise.
//
// Sensitivity. Replacing one row moves, in each column and each release, one
// count down by one and one count up by one (or none, when both values share
// a bin), whatever release 1 chose: each release of d columns changes by at
// most Δ₂ = √(2d) in L2 and Δ₁ = 2d in L1 (TestBoundsHistogramSensitivity).
//
// Noise and composition. With δ > 0 the noise is the discrete Gaussian
// N_ℤ(0, σ_k²) (dp.DiscreteGaussianSampler, exact), which on integer counts
// of L2 sensitivity Δ₂ is ρ_k-zCDP with ρ_k = Δ₂²/(2σ_k²) = d/σ_k² (Canonne,
// Kamath & Steinke 2020, Theorem 14); σ_k² is d/ρ_k rounded up to a multiple
// of 2⁻²⁰, with ρ₁ = (1 − λ)ρ, ρ₂ = λρ, λ = 0.15. Release 2 depends on release
// 1 only through its noisy output, so the two compose adaptively to ρ-zCDP
// (Bun & Steinke 2016, Lemma 2.3), and ρ is the largest whose conversion
// (dp.ZCDPEpsilon: Canonne, Kamath & Steinke 2020, Proposition 12) is at most
// ε at δ (dp.ZCDPRho): the whole is (ε, δ)-DP. With δ = 0 the noise is the
// discrete Laplace of scale t_k = Δ₁/ε_k rounded up (dp.DiscreteLaplace),
// ε₁ = (1 − λ)ε, ε₂ = λε: ε-DP by basic composition (Dwork & Roth 2014,
// Theorem 3.16). Everything after the noise is post-processing. zCDP is the
// default because its noise grows as √d, not d, with the columns, and its
// tails are light: at ε = 1, δ = 1e−7 over diabetes' 11 columns each count's
// noise sd is 23.3 records against 36 for Laplace at ε = 1, and the detection
// threshold τ below is 115 records against 341.
//
// Post-processing, per column, on noisy counts h of noise sd s (for a
// column not refined, the inverse-variance combination of both releases'
// grid counts, whose sd (1/s₁² + 1/s₂²)^{−1/2} is, for the Gaussian, exactly
// that of one release at ρ: the split costs nothing there):
//
//	a. the support S: the window of two octaves (2f bins) with the largest
//	   noisy sum; its mirror across zero if that sum reaches
//	   √(2f)·s·Φ⁻¹(1 − β) (data on both sides of zero); every bin with
//	   h ≥ τ = s·Φ⁻¹(1 − β/(K·d)), an empty bin of any column passing with
//	   probability at most β = 10⁻³ (union bound); the zero bin if it reaches
//	   s·Φ⁻¹(1 − β) (exact zeros are common); each with half an octave on
//	   either side; then, while the noisy mass of S is below (1 − α/2)·n,
//	   the adjacent half-octave with the largest noisy sum, if that sum
//	   reaches 2s times the root of its bin count (at most 8 octaves).
//	   Laplace tails use t·ln(1/(2q)) for a probability q instead of
//	   s·Φ⁻¹(1 − q).
//	b. the narrowest interval [e_a, e_b) of grid edges (in the data's units)
//	   whose S-bins hold noisy mass (1 − α)·min(n, mass of S);
//	c. a margin of m·(e_b − e_a) on each side, not across zero into a sign S
//	   did not reach, and the extension to zero of an interval [L, U] with
//	   0 < L ≤ (U − L)/2 (or its mirror): at most half the width more, for the
//	   small values a log grid spreads over many bins;
//	d. a refined column takes, when a fine bin reaches s₂·Φ⁻¹(1 − β/64), the
//	   narrowest run of fine bins holding (1 − α) of the rows inside the fine
//	   range (n less the noisy under- and overflow counts; less whole noise
//	   sds s₂ when no run holds that much), with the margin; otherwise release
//	   1 alone decides by a–c.
//
// α = clamp(s·√(2f)/n, 0.02, 0.1) and m = 0.15 + 0.2·(α − 0.02)/0.08 follow
// the noise: wider aims where the counts are noisier. The constants were
// chosen on the shipped diabetes and breast cancer data, diamonds and a
// family of synthetic columns (docs/EXPERIMENTS.md, "Private bounds"). The
// bounds are finite with Lower < Upper for any input.
//
// Forecast. ForecastBounds predicts the estimate from public n, d and (ε, δ)
// before anything is spent: the noise sd s, and FoundShare = (τ + 1.645·s)/n,
// the share of a column's rows a single bin must hold to pass τ in 95% of
// runs. Up to 10% the estimate is good, up to 50% coarse (the bulk of each
// column is found, its edges coarsely), above that poor. The curator
// forecasts at start and in check-config: coarse is warned about with the
// schema lines that would replace the estimate, poor is refused before
// anything is charged.
//
// # Input format
//
// A header row of column names, then one row per record, comma-separated
// (RFC 4180 quoting, as read by encoding/csv). A UTF-8 byte-order mark, blank
// lines, CRLF line ends and spaces around fields are allowed. Only the target
// and the selected feature columns are parsed as numbers; other columns may
// hold anything but every row must have the header's number of fields.
// Selected cells must be finite numbers as strconv.ParseFloat reads them, or
// missing: empty, or one of Options.MissingMarkers (DefaultMissingMarkers:
// NA, NaN, N/A, ".", "?", compared without case). Text and infinities are
// errors. A feature's missing cell takes the public value of its schema
// line's missing field (missing_indicator yes adds the 0/1 feature
// "column=missing"); without one the file is refused, naming every such
// column with its count of rows. A row whose target is missing is dropped:
// no candidate. A schema line with bounds may give a public transform (log,
// log1p, sqrt), applied after the clamp and before the affine map, which
// then maps the transformed bounds onto [−c, c]. Both are functions of one
// record alone, so the Lipschitz argument above holds unchanged; the
// guarantee is for the replacement of one record among those with a present
// target (a target turning missing is a removal, which it does not cover).
//
// A file whose name ends in .parquet is read as Parquet, one row group and page
// at a time and only the selected columns, each value as the cell a CSV export
// would hold: a null as an empty cell, a boolean as 1 or 0, an integer or
// decimal as its number, a float as its shortest round-trip text, text (plain
// or dictionary-encoded) as itself; so the same table gives the same Raw. Its
// columns are the schema's top-level fields; a selected nested, repeated,
// date or time column is refused. Errors give the 1-based row for the line.
//
// # Errors never echo data
//
// Bad input gives a *ParseError naming the file, the line (the header is
// line 1 in a file without leading blank lines) and the column by its header
// name. Messages quote header names and describe what is wrong with a cell
// ("not a number", "NaN or infinite", how many rows are missing) but never repeat a cell's
// content, so an error can be logged or shown to a remote user without
// leaking a record.
package dataset
