package learner

import (
	"fmt"
	"math"
)

// Lipschitz constants (in w, for rows with ‖x‖₂ ≤ 1) and bounds g* of the
// per-row validation losses behind RampScore and SigmoidScore; see the
// package documentation. Kusner et al.'s Algorithm 3 needs them.
const (
	ScoreLipschitz   = 1.0  // ramp loss: |∂g/∂z| ≤ 1
	ScoreBound       = 1.0  // ramp loss: 0 ≤ g ≤ 1
	SigmoidLipschitz = 0.25 // normalised sigmoid: |∂g/∂z| = σ(z)(1 − σ(z)) ≤ 1/4
	SigmoidBound     = 1.0  // normalised sigmoid: 0 < g < 1
)

// Accuracy returns the fraction of val's rows whose predicted class (for
// logistic regression 1[z > 0]) equals the label. It panics if the model and
// the data disagree on the number of features or val is empty.
func Accuracy(m Classifier, val Data) float64 {
	return float64(correct(m, val)) / float64(val.N)
}

func correct(m Classifier, val Data) int {
	checkShape(m.NumFeatures(), val)
	k := 0
	for i := range val.N {
		if float64(m.Predict(val.X[i*val.D:(i+1)*val.D])) == val.Y[i] {
			k++
		}
	}
	return k
}

// RampScore returns f_V = −(1/m) Σ_i clamp(1 − ỹ_i z_i, 0, 1), the negated
// mean ramp loss, in [−1, 0]. The loss is ScoreLipschitz-Lipschitz in w for
// ‖x‖ ≤ 1 and bounded by ScoreBound. Panics as Accuracy.
func RampScore(m Model, val Data) float64 {
	checkScoring(m, val)
	s := 0.0
	for i := range val.N {
		z := dot(m.W, val.X[i*val.D:(i+1)*val.D]) + m.B
		s += min(1, max(0, 1-(2*val.Y[i]-1)*z))
	}
	return -s / float64(val.N)
}

// SigmoidScore returns f_V = −(1/m) Σ_i 1/(1 + exp(ỹ_i z_i)), the negated
// mean normalised sigmoid loss, in [−1, 0]. The loss is
// SigmoidLipschitz-Lipschitz in w for ‖x‖ ≤ 1 and bounded by SigmoidBound.
// Panics as Accuracy.
func SigmoidScore(m Model, val Data) float64 {
	checkScoring(m, val)
	s := 0.0
	for i := range val.N {
		z := dot(m.W, val.X[i*val.D:(i+1)*val.D]) + m.B
		s += sigmoid(-(2*val.Y[i] - 1) * z)
	}
	return -s / float64(val.N)
}

func checkShape(features int, val Data) {
	if features != val.D {
		panic(fmt.Sprintf("learner: model has %d weights, data has %d features", features, val.D))
	}
	if val.N < 1 || len(val.X) != val.N*val.D || len(val.Y) != val.N {
		panic(fmt.Sprintf("learner: scoring on malformed data (%d×%d, %d values, %d labels)", val.N, val.D, len(val.X), len(val.Y)))
	}
}

// checkScoring checks a binary score's inputs: shapes, a finite bias and
// binary labels.
func checkScoring(m Model, val Data) {
	checkShape(len(m.W), val)
	if math.IsNaN(m.B) {
		panic("learner: model bias is NaN")
	}
	if !val.Binary() {
		panic(fmt.Sprintf("learner: a binary score on data with %d classes", val.NumClasses()))
	}
}
