package learner

import (
	"fmt"
	"math"
)

// Bounds is a range [Lower, Upper] of one feature, in the units the caller's
// features are given in. ScaleToBounds uses such ranges as public
// constants: they must come from outside the data (an operator's domain
// knowledge) or from a differentially private estimate whose cost is
// accounted.
type Bounds struct {
	Lower, Upper float64
}

// BoundedRowNorm is the Euclidean norm every row is clipped to after
// ScaleToBounds has mapped its features to [−1, 1]; it is a public constant,
// the same for every data set. With d features a row of [−1, 1]^d can have
// norm up to √d, so clipping to 1 binds only on rows far from the centre of
// their bounds in many features at once.
//
// The value 1 is Kusner et al.'s (2015) normalisation (their Algorithm 3
// needs ‖x‖₂ ≤ 1); DP-SGD's guarantee does not need any row bound (the
// per-example gradient is clipped), so the row clip is there to keep one
// extreme row from dominating a batch's gradient direction, not for privacy.
const BoundedRowNorm = 1.0

// CheckBounds reports whether b holds one finite range with Lower < Upper
// for each of d features.
func CheckBounds(b []Bounds, d int) error {
	if len(b) != d {
		return fmt.Errorf("learner: %d feature bounds given for %d features (one per feature, in feature order)", len(b), d)
	}
	for j, r := range b {
		if math.IsNaN(r.Lower) || math.IsInf(r.Lower, 0) || math.IsNaN(r.Upper) || math.IsInf(r.Upper, 0) || !(r.Lower < r.Upper) {
			return fmt.Errorf("learner: bounds of feature %d must be finite with lower < upper, got [%g, %g]", j, r.Lower, r.Upper)
		}
		if math.IsInf(r.Upper-r.Lower, 0) {
			return fmt.Errorf("learner: bounds of feature %d span more than the largest float, got [%g, %g]", j, r.Lower, r.Upper)
		}
	}
	return nil
}

// ScaleToBounds returns a copy of d in which every feature x_j is clamped to
// b[j] = [l_j, u_j] and mapped affinely onto [−1, 1],
//
//	x_j ← 2 (min(max(x_j, l_j), u_j) − l_j) / (u_j − l_j) − 1,
//
// after which every row is clipped to Euclidean norm ≤ maxNorm (ClipRows).
// Each output row is a function of its own input row and of b and maxNorm
// alone: no statistic of the data (mean, standard deviation, minimum,
// maximum) enters, so adding, removing or replacing one row leaves every
// other row's output unchanged. That is what lets DP-SGD's add/remove-one
// accounting (see the package documentation) cover the preprocessing too,
// provided b and maxNorm are public or privately estimated with their cost
// accounted. maxNorm must be positive and finite (BoundedRowNorm is the
// default of the tuning jobs).
func ScaleToBounds(d Data, b []Bounds, maxNorm float64) (Data, error) {
	if err := d.check(); err != nil {
		return Data{}, err
	}
	if err := CheckBounds(b, d.D); err != nil {
		return Data{}, err
	}
	if !(maxNorm > 0) || math.IsInf(maxNorm, 0) {
		return Data{}, fmt.Errorf("learner: row norm bound must be positive and finite, got %g", maxNorm)
	}
	out := Data{X: make([]float64, len(d.X)), Y: d.Y, N: d.N, D: d.D}
	for i := range d.N {
		row, src := out.X[i*d.D:(i+1)*d.D], d.X[i*d.D:(i+1)*d.D]
		for j, v := range src {
			l, u := b[j].Lower, b[j].Upper
			v = min(max(v, l), u)
			// (v − l)/(u − l) ∈ [0, 1] in floating point: both differences are
			// rounded results of exact values 0 ≤ v − l ≤ u − l, and rounding
			// is monotone.
			row[j] = min(max(2*((v-l)/(u-l))-1, -1), 1)
		}
	}
	return ClipRows(out, maxNorm), nil
}
