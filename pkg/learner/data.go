package learner

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Data is a labelled data set: X is row-major N×D, Y holds N class labels,
// each an integer in [0, NumClasses()): exactly 0 or 1 for binary data (Classes
// 0 or 2, the zero value), 0 … K−1 for K = Classes > 2 classes. Build it with
// NewData (binary) or NewClassData, which validate it.
//
// The number of classes is part of the learner's shape (softmax regression has
// one weight vector per class), so it must be public: fixed by the operator or
// a public schema, never counted from the labels of the protected rows.
type Data struct {
	X    []float64
	Y    []float64
	N, D int
	// Classes is the number of classes K; 0 and 2 both mean binary labels.
	Classes int
}

// MaxClasses bounds the number of classes of NewClassData, against a
// regression target mistaken for class labels.
const MaxClasses = 1000

// NewData wraps x (row-major n×d) and y (n labels) after checking shapes
// (n ≥ 1, d ≥ 1), that every feature is finite and every label is exactly 0
// or 1. It does not copy x or y. Errors name rows and columns but never
// quote values.
func NewData(x, y []float64, n, d int) (Data, error) {
	return NewClassData(x, y, n, d, 2)
}

// NewClassData is NewData for k ∈ [2, MaxClasses] classes: every label must be
// an integer in [0, k). k = 2 is binary data, as NewData builds.
func NewClassData(x, y []float64, n, d, k int) (Data, error) {
	if k < 2 || k > MaxClasses {
		return Data{}, fmt.Errorf("learner: the number of classes must be in [2, %d], got %d", MaxClasses, k)
	}
	data := Data{X: x, Y: y, N: n, D: d, Classes: k}
	if k == 2 {
		data.Classes = 0
	}
	if err := data.check(); err != nil {
		return Data{}, err
	}
	return data, nil
}

// NumClasses returns K: Classes, or 2 for binary data.
func (d Data) NumClasses() int {
	if d.Classes <= 2 {
		return 2
	}
	return d.Classes
}

// Binary reports whether the labels are 0/1 (two classes).
func (d Data) Binary() bool { return d.NumClasses() == 2 }

func (d Data) check() error {
	if d.N < 1 || d.D < 1 {
		return fmt.Errorf("learner: data needs n ≥ 1 rows and d ≥ 1 features, got %d×%d", d.N, d.D)
	}
	if len(d.X) != d.N*d.D {
		return fmt.Errorf("learner: data has %d feature values, want n·d = %d·%d = %d", len(d.X), d.N, d.D, d.N*d.D)
	}
	if len(d.Y) != d.N {
		return fmt.Errorf("learner: data has %d labels, want n = %d", len(d.Y), d.N)
	}
	for i, v := range d.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("learner: feature %d of row %d is NaN or infinite", i%d.D, i/d.D)
		}
	}
	if d.Classes < 0 || d.Classes > MaxClasses {
		return fmt.Errorf("learner: the number of classes must be in [2, %d], got %d", MaxClasses, d.Classes)
	}
	k := float64(d.NumClasses())
	for i, v := range d.Y {
		if v != math.Trunc(v) || v < 0 || v >= k {
			if k == 2 {
				return fmt.Errorf("learner: label of row %d is not 0 or 1", i)
			}
			return fmt.Errorf("learner: label of row %d is not an integer in [0, %d)", i, int(k))
		}
	}
	return nil
}

// Row returns row i of X (a view). It panics if i is out of range.
func (d Data) Row(i int) []float64 {
	if i < 0 || i >= d.N {
		panic(fmt.Sprintf("learner: row %d out of range [0, %d)", i, d.N))
	}
	return d.X[i*d.D : (i+1)*d.D : (i+1)*d.D]
}

// Positives returns the number of rows labelled 1.
func (d Data) Positives() int {
	k := 0
	for _, v := range d.Y {
		if v == 1 {
			k++
		}
	}
	return k
}

// subset copies the rows whose mask entry equals want, in order.
func (d Data) subset(mask []bool, want bool, count int) Data {
	out := Data{X: make([]float64, 0, count*d.D), Y: make([]float64, 0, count), N: count, D: d.D, Classes: d.Classes}
	for i, m := range mask {
		if m == want {
			out.X = append(out.X, d.X[i*d.D:(i+1)*d.D]...)
			out.Y = append(out.Y, d.Y[i])
		}
	}
	return out
}

// SplitRandom puts round(validationFraction·n) rows, but at least 1 and at
// most n − 1, chosen uniformly at random, into val and the rest into train;
// both keep the original row order and are copies. The choice is a
// deterministic function of seed (a PCG generator): the split seed is
// operator configuration, not a privacy secret. It needs n ≥ 2 and
// 0 < validationFraction < 1.
func SplitRandom(d Data, validationFraction float64, seed uint64) (train, val Data, err error) {
	if err := d.check(); err != nil {
		return Data{}, Data{}, err
	}
	if !(validationFraction > 0 && validationFraction < 1) {
		return Data{}, Data{}, fmt.Errorf("learner: validation fraction must be in (0, 1), got %g", validationFraction)
	}
	if d.N < 2 {
		return Data{}, Data{}, fmt.Errorf("learner: splitting needs at least 2 rows, got %d", d.N)
	}
	m := min(max(int(math.Round(validationFraction*float64(d.N))), 1), d.N-1)
	// Partial Fisher–Yates: the first m entries of perm are a uniform m-subset.
	rng := rand.New(rand.NewPCG(seed, 0x70726976626f5f73)) // "privbo_s"
	perm := make([]int, d.N)
	for i := range perm {
		perm[i] = i
	}
	for i := range m {
		j := i + rng.IntN(d.N-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	mask := make([]bool, d.N)
	for _, i := range perm[:m] {
		mask[i] = true
	}
	return d.subset(mask, false, d.N-m), d.subset(mask, true, m), nil
}

// SplitByMask puts the rows with isValidation[i] true into val and the
// others into train, keeping their order (copies). Both parts must be
// non-empty.
func SplitByMask(d Data, isValidation []bool) (train, val Data, err error) {
	if err := d.check(); err != nil {
		return Data{}, Data{}, err
	}
	if len(isValidation) != d.N {
		return Data{}, Data{}, fmt.Errorf("learner: split mask has %d entries, want one per row (%d)", len(isValidation), d.N)
	}
	m := 0
	for _, v := range isValidation {
		if v {
			m++
		}
	}
	if m == 0 || m == d.N {
		return Data{}, Data{}, fmt.Errorf("learner: split mask puts %d of %d rows in validation; both parts need at least one row", m, d.N)
	}
	return d.subset(isValidation, false, d.N-m), d.subset(isValidation, true, m), nil
}

// ClipRows returns a copy of d with every row x scaled to norm at most
// maxNorm: x ← x·min(1, maxNorm/‖x‖₂). The bound holds in floating point
// (‖x‖₂ as computed by the Euclidean norm below is ≤ maxNorm for every row).
// Kusner et al.'s Algorithm 3 needs maxNorm = 1. It panics if maxNorm is not
// positive and finite, which can only be a programming error once the
// caller has validated its configuration.
func ClipRows(d Data, maxNorm float64) Data {
	if !(maxNorm > 0) || math.IsInf(maxNorm, 0) {
		panic(fmt.Sprintf("learner: ClipRows needs a positive finite norm, got %g", maxNorm))
	}
	out := Data{X: make([]float64, len(d.X)), Y: append([]float64(nil), d.Y...), N: d.N, D: d.D, Classes: d.Classes}
	copy(out.X, d.X)
	for i := range d.N {
		row := out.X[i*d.D : (i+1)*d.D]
		nrm := norm(row)
		if nrm <= maxNorm {
			continue
		}
		src := d.X[i*d.D : (i+1)*d.D]
		// x/‖x‖ first, then the bound: neither step overflows or underflows
		// to zero for any finite row and bound.
		for f := maxNorm; ; f = math.Nextafter(f, 0) {
			for j, v := range src {
				row[j] = v / nrm * f
			}
			if norm(row) <= maxNorm {
				break
			}
		}
	}
	return out
}

// norm returns ‖x‖₂, scaled against overflow.
func norm(x []float64) float64 {
	scale := 0.0
	for _, v := range x {
		scale = max(scale, math.Abs(v))
	}
	if scale == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		v /= scale
		s += v * v
	}
	return scale * math.Sqrt(s)
}

// Standardiser z-scores features with per-feature means and (population)
// standard deviations: x_j ← (x_j − Mean[j]) / SD[j]. Fit it on the training
// part only, so the sensitive validation part does not shape the scaling.
type Standardiser struct {
	Mean, SD []float64
}

// FitStandardiser returns the means and standard deviations of d's columns.
// A constant column gets SD 1, so it maps to zero.
func FitStandardiser(d Data) Standardiser {
	s := Standardiser{Mean: make([]float64, d.D), SD: make([]float64, d.D)}
	for i := range d.N {
		for j, v := range d.X[i*d.D : (i+1)*d.D] {
			s.Mean[j] += v
		}
	}
	for j := range s.Mean {
		s.Mean[j] /= float64(d.N)
	}
	for i := range d.N {
		for j, v := range d.X[i*d.D : (i+1)*d.D] {
			r := v - s.Mean[j]
			s.SD[j] += r * r
		}
	}
	for j := range s.SD {
		s.SD[j] = math.Sqrt(s.SD[j] / float64(d.N))
		if !(s.SD[j] > 0) {
			s.SD[j] = 1
		}
	}
	return s
}

// Apply returns a standardised copy of d. It panics if d has a different
// number of features than the Standardiser.
func (s Standardiser) Apply(d Data) Data {
	if d.D != len(s.Mean) || d.D != len(s.SD) {
		panic(fmt.Sprintf("learner: Standardiser for %d features applied to %d", len(s.Mean), d.D))
	}
	out := Data{X: make([]float64, len(d.X)), Y: append([]float64(nil), d.Y...), N: d.N, D: d.D, Classes: d.Classes}
	for i := range d.N {
		row, src := out.X[i*d.D:(i+1)*d.D], d.X[i*d.D:(i+1)*d.D]
		for j, v := range src {
			row[j] = (v - s.Mean[j]) / s.SD[j]
		}
	}
	return out
}
