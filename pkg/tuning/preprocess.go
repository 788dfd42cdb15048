package tuning

import (
	"context"
	"fmt"
	"math"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/learner"
)

// Preprocessing names how the built-in DP-SGD learner of DP-HyPO jobs scales its
// features. It does not affect Kusner jobs (whose training rows are not protected; see
// the package documentation) or external evaluators.
type Preprocessing string

const (
	// PreprocessBounded, the default: each feature is clamped to per-feature bounds and
	// mapped onto [−1, 1], and each row is clipped to Euclidean norm ≤ Config.RowNorm
	// (learner.ScaleToBounds). The bounds are the operator's public Config.FeatureBounds,
	// or else a private estimate from the training rows (Config.EstimateBounds) whose ε is
	// added to every such job's cost. No statistic of the data is used otherwise, so
	// adding or removing one training record changes no other record's features, and
	// DP-SGD's add/remove accounting covers the preprocessing.
	PreprocessBounded Preprocessing = "bounded"
	// PreprocessStandardiseNonprivate z-scores the features with the means and standard
	// deviations of the training rows themselves. One added training record then moves
	// every record's features, which DP-SGD's accounting does not cover: such jobs
	// still run and are charged, but their guarantee text says that the claim does not
	// hold. For comparisons with earlier results only.
	PreprocessStandardiseNonprivate Preprocessing = "standardise-nonprivate"
)

// BoundsEstimator estimates one range per feature from x (row-major n×d, in the raw
// units of the dataset's feature columns) and must be ε-differentially private, for the
// given epsilon, under replacing one of the n rows by any other row (n fixed).
// dataset.EstimateBounds has this shape. The Runner only ever calls it with n equal to
// the size of the training part fixed when the Runner was built (see fixedRows), which
// makes the estimate ε-DP under adding or removing one training record as well.
type BoundsEstimator func(x []float64, n, d int, epsilon float64) ([]learner.Bounds, error)

// checkPreprocessing validates the preprocessing part of cfg for d features and fills in
// its defaults.
func checkPreprocessing(cfg *Config, d int) error {
	switch cfg.Preprocessing {
	case "":
		cfg.Preprocessing = PreprocessBounded
	case PreprocessBounded, PreprocessStandardiseNonprivate:
	default:
		return fmt.Errorf("tuning: preprocessing must be %q or %q, got %q", PreprocessBounded, PreprocessStandardiseNonprivate, cfg.Preprocessing)
	}
	if cfg.RowNorm == 0 {
		cfg.RowNorm = learner.BoundedRowNorm(d)
	}
	if !(cfg.RowNorm > 0) || math.IsInf(cfg.RowNorm, 0) {
		return fmt.Errorf("tuning: row norm bound must be positive and finite, got %g", cfg.RowNorm)
	}
	if cfg.Preprocessing == PreprocessStandardiseNonprivate {
		if cfg.FeatureBounds != nil {
			return fmt.Errorf("tuning: feature bounds are given but the preprocessing is %s, which ignores them", PreprocessStandardiseNonprivate)
		}
		return nil
	}
	if cfg.FeatureBounds != nil {
		if err := learner.CheckBounds(cfg.FeatureBounds, d); err != nil {
			return fmt.Errorf("tuning: %w", err)
		}
		return nil
	}
	if cfg.EstimateBounds != nil && (!(cfg.BoundsEpsilon > 0) || math.IsInf(cfg.BoundsEpsilon, 0)) {
		return fmt.Errorf("tuning: a private estimate of the feature bounds needs a positive finite ε share, got %g", cfg.BoundsEpsilon)
	}
	return nil
}

// boundsSource says where the built-in learner's bounds come from.
type boundsSource int

const (
	boundsNone        boundsSource = iota // bounded preprocessing with nothing configured: refused
	boundsPublic                          // Config.FeatureBounds
	boundsEstimated                       // Config.EstimateBounds, per job
	boundsStandardise                     // PreprocessStandardiseNonprivate
)

func (r *Runner) boundsSource() boundsSource {
	switch {
	case r.cfg.Preprocessing == PreprocessStandardiseNonprivate:
		return boundsStandardise
	case r.cfg.FeatureBounds != nil:
		return boundsPublic
	case r.cfg.EstimateBounds != nil:
		return boundsEstimated
	}
	return boundsNone
}

// rawFeatures returns the dataset's features in the raw units of its columns, the units
// the operator's bounds are stated in: the values read from the file (dataset.RawRow),
// before any scaling, clamping or clipping, so no statistic of the other rows enters.
func rawFeatures(ds *dataset.Dataset) []float64 {
	x := make([]float64, 0, len(ds.X))
	for i := range ds.N {
		x = append(x, ds.RawRow(i)...)
	}
	return x
}

// fixedRows returns x (row-major n×d) cut or padded with zero rows to exactly rows rows.
// rows is fixed when the Runner is built (the training part's size) and is part of the
// estimation mechanism, not recomputed from the data it is applied to: on the curator's
// own training part it is the identity (a copy). It turns the add/remove relation into
// the replace-one relation a BoundsEstimator is private for: if D' is D with one record
// added or removed, fixedRows(D) and fixedRows(D') differ in at most one row — an added
// record replaces a zero row or pushes out the last kept row; a removed one is replaced
// by a zero row or by the first row beyond the cut. So an estimator that is ε-DP under
// replacing one of rows rows, applied after fixedRows, is ε-DP under adding or removing
// one record. (Calling the estimator on n rows directly need not be: a replace-one
// guarantee says nothing about data sets of different sizes — a mechanism may release n
// itself. Some estimators are add/remove private anyway: for the exponential-mechanism
// quantile with utility −|#{x ≤ c} − q·n|, adding a record moves the count by 0 or 1
// and q·n by q, so the utility by at most max(q, 1 − q) ≤ 1, the same sensitivity as
// under replacement. The Runner does not rely on how an estimator works inside.)
func fixedRows(x []float64, n, d, rows int) []float64 {
	out := make([]float64, rows*d)
	copy(out, x[:min(n, rows)*d])
	return out
}

// postprocessBounds makes estimated bounds usable by learner.ScaleToBounds without
// looking at the data again (post-processing of a private release): a reversed range
// is swapped, and a range of zero width — a constant feature, say — is widened by ½ on
// either side, so that its value maps to 0. It refuses NaN or infinite bounds.
func postprocessBounds(b []learner.Bounds, d int) ([]learner.Bounds, error) {
	if len(b) != d {
		return nil, fmt.Errorf("the estimate has %d ranges for %d features", len(b), d)
	}
	out := make([]learner.Bounds, d)
	for j, r := range b {
		l, u := min(r.Lower, r.Upper), max(r.Lower, r.Upper)
		if l == u {
			l, u = l-0.5, u+0.5
		}
		out[j] = learner.Bounds{Lower: l, Upper: u}
	}
	if err := learner.CheckBounds(out, d); err != nil {
		return nil, err
	}
	return out, nil
}

// sgdData returns the training and validation parts of a DP-HyPO job with the built-in
// learner, preprocessed as configured. With a bounds estimator the bounds are estimated
// anew for each job, from the training part only: the validation records never shape
// the features.
func (r *Runner) sgdData(ctx context.Context) (train, val learner.Data, err error) {
	if r.boundsSource() != boundsEstimated {
		return r.sgdTrain, r.sgdVal, nil
	}
	if err := ctx.Err(); err != nil {
		return learner.Data{}, learner.Data{}, err
	}
	n, d := r.rawTrain.N, r.rawTrain.D
	est, err := r.cfg.EstimateBounds(fixedRows(r.rawTrain.X, n, d, r.boundsRows), r.boundsRows, d, r.cfg.BoundsEpsilon)
	if err == nil {
		est, err = postprocessBounds(est, d)
	}
	if err != nil {
		r.log.Error("private estimate of the feature bounds failed (operator only)", zap.Error(err))
		return learner.Data{}, learner.Data{}, jobspec.Publicf("the private estimate of the feature bounds failed; the curator's operator can find details in its log")
	}
	return prepareSGD(PreprocessBounded, est, r.cfg.RowNorm, r.rawTrain, r.rawVal)
}

// prepareSGD prepares the DP-SGD learner's training and validation parts (raw units):
// with PreprocessBounded by learner.ScaleToBounds with bounds b (public or privately
// estimated) and row norm rowNorm, each row on its own; with
// PreprocessStandardiseNonprivate by a Standardiser fitted to train, which makes every
// row depend on every training row.
func prepareSGD(p Preprocessing, b []learner.Bounds, rowNorm float64, train, val learner.Data) (learner.Data, learner.Data, error) {
	if p == PreprocessStandardiseNonprivate {
		st := learner.FitStandardiser(train)
		return st.Apply(train), st.Apply(val), nil
	}
	t, err := learner.ScaleToBounds(train, b, rowNorm)
	if err != nil {
		return learner.Data{}, learner.Data{}, fmt.Errorf("tuning: %w", err)
	}
	v, err := learner.ScaleToBounds(val, b, rowNorm)
	if err != nil {
		return learner.Data{}, learner.Data{}, fmt.Errorf("tuning: %w", err)
	}
	return t, v, nil
}

// preprocessWords states, for a job's guarantee text, how the built-in learner's
// features were prepared and whether the guarantee covers that.
func (r *Runner) preprocessWords() string {
	switch r.boundsSource() {
	case boundsPublic:
		if e := r.cfg.FeatureBoundsEpsilon; e > 0 {
			return fmt.Sprintf(" Features: each clamped to the per-feature bounds this curator estimated privately from all its records for its scaling "+
				"(ε_s=%g under the record relation, charged once for the dataset, not to this job: what the job reveals is covered by ε plus ε_s, "+
				"and ε_s is part of every whole-patient figure) and mapped onto [−1, 1], each row clipped to norm ≤ %.4g.", e, r.cfg.RowNorm)
		}
		return fmt.Sprintf(" Features: each clamped to the operator's public per-feature bounds and mapped onto [−1, 1], each row clipped to norm ≤ %.4g; no statistic of the data is used, so the guarantee covers the preprocessing.", r.cfg.RowNorm)
	case boundsEstimated:
		return fmt.Sprintf(" Features: each clamped to per-feature bounds estimated from the training records by an ε=%g-DP mechanism (ε-DP for replacing one of a fixed number of rows, which makes it ε-DP for adding or removing one training record) and mapped onto [−1, 1], each row clipped to norm ≤ %.4g; ε includes that %g by basic composition, so the guarantee covers the preprocessing.", r.cfg.BoundsEpsilon, r.cfg.RowNorm, r.cfg.BoundsEpsilon)
	}
	return ""
}

// nonprivateWarning opens the guarantee text of a job whose preprocessing voids it.
const nonprivateWarning = "NO PRIVACY GUARANTEE: this curator's operator chose the preprocessing " + string(PreprocessStandardiseNonprivate) +
	", which standardises the training records with their own means and standard deviations; one added or removed training " +
	"record moves every record's features, which the DP-SGD accounting does not cover, so the claim below does not hold " +
	"for the records. What the accounting alone would give: "
