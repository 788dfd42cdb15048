package dataset

import "math"

// scaleError reports a scaling that the data do not allow.
type scaleError struct{ msg string }

func (e *scaleError) Error() string { return e.msg }

// standardise z-scores the columns of the n×d matrix x in place, then scales
// all of x so that its maximal row norm is maxNorm. It returns the per-column
// offset and scale with x[i,j] = (raw[i,j] − offset[j]) / scale[j].
//
// To stay finite for any finite input, each column is first divided by its
// largest absolute value a_j, so that sums never exceed n. All passes run
// over x in row-major order.
func standardise(x []float64, n, d int, maxNorm float64) (offset, scale []float64, err error) {
	lo, hi := columnRanges(x, n, d)
	a := make([]float64, d)
	constant := 0
	for j := range d {
		if lo[j] == hi[j] {
			constant++
			a[j] = 1
		} else {
			a[j] = math.Max(-lo[j], hi[j])
		}
	}
	if constant == d {
		return nil, nil, &scaleError{"every feature column is constant (all rows are identical); standardise needs at least one column that varies"}
	}
	m := make([]float64, d)
	for i := range n {
		for j, v := range x[i*d : (i+1)*d] {
			m[j] += v / a[j]
		}
	}
	for j := range d {
		if lo[j] == hi[j] {
			// Zero standard deviation: centre to exactly 0, take sd = 1.
			m[j] = lo[j]
		} else {
			m[j] /= float64(n)
		}
	}
	s := make([]float64, d)
	for i := range n {
		for j, v := range x[i*d : (i+1)*d] {
			c := v/a[j] - m[j]
			s[j] += c * c
		}
	}
	for j := range d {
		if lo[j] == hi[j] {
			s[j] = 1
		} else {
			s[j] = math.Sqrt(s[j] / float64(n))
		}
	}
	for i := range n {
		row := x[i*d : (i+1)*d]
		for j, v := range row {
			row[j] = (v/a[j] - m[j]) / s[j]
		}
	}
	f, err := rescaleToMaxNorm(x, n, d, maxNorm, "cannot standardise")
	if err != nil {
		return nil, nil, err
	}
	offset = make([]float64, d)
	scale = make([]float64, d)
	for j := range d {
		offset[j] = a[j] * m[j]
		scale[j] = a[j] * s[j] / f
	}
	return offset, scale, checkScaling(x, offset, scale)
}

// rescaleToMaxNorm multiplies x (n×d, centred) by the factor f that makes its maximal
// row norm maxNorm, and returns f.
func rescaleToMaxNorm(x []float64, n, d int, maxNorm float64, what string) (float64, error) {
	r := maxRowNorm(x, n, d)
	if r == 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, &scaleError{"rows differ only below floating-point resolution; " + what}
	}
	f := maxNorm / r
	for k := range x {
		x[k] *= f
	}
	return f, nil
}

// maxNormScale centres the columns of the n×d matrix x in place and scales
// all of x by one factor so that its maximal row norm is maxNorm.
//
// To stay finite for any finite input, x is first divided by its largest
// absolute value A.
func maxNormScale(x []float64, n, d int, maxNorm float64) (offset, scale []float64, err error) {
	lo, hi := columnRanges(x, n, d)
	var a float64
	constant := 0
	for j := range d {
		a = math.Max(a, math.Max(-lo[j], hi[j]))
		if lo[j] == hi[j] {
			constant++
		}
	}
	if constant == d {
		return nil, nil, &scaleError{"all rows are identical; maxnorm scaling needs at least two different rows"}
	}
	m := make([]float64, d)
	for i := range n {
		for j, v := range x[i*d : (i+1)*d] {
			m[j] += v / a
		}
	}
	for j := range d {
		if lo[j] == hi[j] {
			m[j] = lo[j] / a // centres the column to exactly 0
		} else {
			m[j] /= float64(n)
		}
	}
	for i := range n {
		row := x[i*d : (i+1)*d]
		for j, v := range row {
			row[j] = v/a - m[j]
		}
	}
	f, err := rescaleToMaxNorm(x, n, d, maxNorm, "cannot scale to a maximal norm")
	if err != nil {
		return nil, nil, err
	}
	offset = make([]float64, d)
	scale = make([]float64, d)
	for j := range d {
		offset[j] = a * m[j]
		scale[j] = a / f
	}
	return offset, scale, checkScaling(x, offset, scale)
}

// columnRanges returns the minimum and maximum of each column of the n×d
// matrix x (n ≥ 1).
func columnRanges(x []float64, n, d int) (lo, hi []float64) {
	lo = append([]float64(nil), x[:d]...)
	hi = append([]float64(nil), x[:d]...)
	for i := 1; i < n; i++ {
		for j, v := range x[i*d : (i+1)*d] {
			lo[j] = math.Min(lo[j], v)
			hi[j] = math.Max(hi[j], v)
		}
	}
	return lo, hi
}

// maxRowNorm returns max_i ‖x_i‖₂ of the n×d matrix x.
func maxRowNorm(x []float64, n, d int) float64 {
	var best float64
	for i := range n {
		var s float64
		for _, v := range x[i*d : (i+1)*d] {
			s += v * v
		}
		best = math.Max(best, s)
	}
	return math.Sqrt(best)
}

// checkScaling makes sure the scaled data and the reported offsets and
// scales are finite, so that extreme inputs fail loudly rather than yield
// infinities.
func checkScaling(x, offset, scale []float64) error {
	for j := range scale {
		if s := scale[j]; !(s > 0) || math.IsInf(s, 0) || math.IsNaN(offset[j]) || math.IsInf(offset[j], 0) {
			return &scaleError{"the data's range and MaxNorm put the scale outside floating-point range; choose another MaxNorm or a fixed scaling"}
		}
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &scaleError{"scaling overflowed floating-point range"}
		}
	}
	return nil
}
