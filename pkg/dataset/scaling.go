package dataset

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ScalingMode names how features are scaled to the protected unit.
type ScalingMode string

const (
	// ScaleStandardise z-scores each feature column, centres the rows and
	// scales all of X by one factor so that the maximal row norm is MaxNorm.
	// It is the default (the zero Mode). Data-dependent.
	ScaleStandardise ScalingMode = "standardise"
	// ScaleMaxNorm centres the columns and scales all of X by one factor so
	// that the maximal row norm is MaxNorm. Data-dependent.
	ScaleMaxNorm ScalingMode = "maxnorm"
	// ScaleFixed divides each column by a public scale given by the operator,
	// after subtracting an optional public offset. Uses no statistic of the
	// data.
	ScaleFixed ScalingMode = "fixed"
	// ScaleNone keeps the raw units.
	ScaleNone ScalingMode = "none"
)

// DefaultMaxNorm is the maximal row norm used by standardise and maxnorm when
// Scaling.MaxNorm is zero: the value of the experiments of Kharkovskii et al.
// (2020, §4).
const DefaultMaxNorm = 25

// Scaling says how features are scaled. The zero value means standardise to
// a maximal row norm of DefaultMaxNorm.
type Scaling struct {
	Mode ScalingMode
	// MaxNorm is the maximal row norm after scaling, for standardise and
	// maxnorm; 0 means DefaultMaxNorm. It must be 0 for fixed and none.
	MaxNorm float64
	// Scales maps every feature column to its public scale (finite, > 0),
	// for fixed mode only.
	Scales map[string]float64
	// Offsets optionally maps feature columns to a public offset (finite)
	// subtracted before dividing by the scale, for fixed mode only. A column
	// without an entry has offset 0.
	Offsets map[string]float64
}

// ParseScaling parses a scaling given on a command line:
//
//	""                         standardise to DefaultMaxNorm
//	"standardise"              the same ("standardize" is accepted too)
//	"standardise:25"           standardise to a maximal row norm of 25
//	"maxnorm", "maxnorm:10"    centre and scale to a maximal row norm of 25 or 10
//	"fixed:age=10,bmi=5"       divide age by 10 and bmi by 5
//	"fixed:age=10@50"          subtract 50 from age, then divide by 10
//	"none"                     raw units
//
// Mode names are case-insensitive. In fixed mode, column names may not contain
// ',' and the last '=' separates name and scale.
func ParseScaling(spec string) (Scaling, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Scaling{Mode: ScaleStandardise, MaxNorm: DefaultMaxNorm}, nil
	}
	name, arg, hasArg := strings.Cut(spec, ":")
	arg = strings.TrimSpace(arg)
	var s Scaling
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "standardise", "standardize":
		s.Mode = ScaleStandardise
	case "maxnorm":
		s.Mode = ScaleMaxNorm
	case "fixed":
		s.Mode = ScaleFixed
	case "none":
		s.Mode = ScaleNone
	default:
		return Scaling{}, fmt.Errorf("dataset: scaling %q: unknown mode %q, want standardise, maxnorm, fixed or none", spec, name)
	}
	switch s.Mode {
	case ScaleStandardise, ScaleMaxNorm:
		s.MaxNorm = DefaultMaxNorm
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: maximal norm must be a finite positive number, got %q", spec, arg)
			}
			s.MaxNorm = v
		}
	case ScaleFixed:
		if arg == "" {
			return Scaling{}, fmt.Errorf("dataset: scaling %q: fixed needs column scales, e.g. \"fixed:age=10,bmi=5\"", spec)
		}
		s.Scales = make(map[string]float64)
		for item := range strings.SplitSeq(arg, ",") {
			item = strings.TrimSpace(item)
			i := strings.LastIndex(item, "=")
			if i < 0 {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: %q is not column=scale", spec, item)
			}
			col := strings.TrimSpace(item[:i])
			scaleText, offText, hasOff := strings.Cut(item[i+1:], "@")
			if col == "" {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: %q has no column name", spec, item)
			}
			if _, dup := s.Scales[col]; dup {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: column %q given twice", spec, col)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(scaleText), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: scale of column %q must be a finite positive number, got %q", spec, col, scaleText)
			}
			s.Scales[col] = v
			if hasOff {
				o, err := strconv.ParseFloat(strings.TrimSpace(offText), 64)
				if err != nil || math.IsNaN(o) || math.IsInf(o, 0) {
					return Scaling{}, fmt.Errorf("dataset: scaling %q: offset of column %q must be a finite number, got %q", spec, col, offText)
				}
				if s.Offsets == nil {
					s.Offsets = make(map[string]float64)
				}
				s.Offsets[col] = o
			}
		}
	case ScaleNone:
		if hasArg {
			return Scaling{}, fmt.Errorf("dataset: scaling %q: none takes no argument", spec)
		}
	}
	return s, nil
}

// String formats s in the syntax ParseScaling accepts.
func (s Scaling) String() string {
	switch s.mode() {
	case ScaleStandardise, ScaleMaxNorm:
		return string(s.mode()) + ":" + formatFloat(s.maxNorm())
	case ScaleFixed:
		cols := make([]string, 0, len(s.Scales))
		for c := range s.Scales {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		var b strings.Builder
		b.WriteString("fixed:")
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(c)
			b.WriteByte('=')
			b.WriteString(formatFloat(s.Scales[c]))
			if o, ok := s.Offsets[c]; ok {
				b.WriteByte('@')
				b.WriteString(formatFloat(o))
			}
		}
		return b.String()
	default:
		return string(s.Mode)
	}
}

// Validate checks s on its own; whether the scales fit the columns of a file
// is checked when the file is parsed.
func (s Scaling) Validate() error {
	if err := s.check(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

// check is Validate without the package prefix.
func (s Scaling) check() error {
	switch s.mode() {
	case ScaleStandardise, ScaleMaxNorm:
		if math.IsNaN(s.MaxNorm) || math.IsInf(s.MaxNorm, 0) || s.MaxNorm < 0 {
			return fmt.Errorf("scaling %s: MaxNorm must be finite and positive (0 for the default %d), got %g", s.mode(), DefaultMaxNorm, s.MaxNorm)
		}
		if len(s.Scales) > 0 || len(s.Offsets) > 0 {
			return fmt.Errorf("scaling %s: Scales and Offsets apply to fixed mode only", s.mode())
		}
	case ScaleFixed:
		if s.MaxNorm != 0 {
			return fmt.Errorf("scaling fixed: MaxNorm does not apply to fixed mode, got %g", s.MaxNorm)
		}
		if len(s.Scales) == 0 {
			return errors.New("scaling fixed: Scales must give a public scale for every feature column")
		}
		for c, v := range s.Scales {
			if c == "" {
				return errors.New("scaling fixed: Scales has an empty column name")
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return fmt.Errorf("scaling fixed: scale of column %s must be finite and positive, got %g", quoteName(c), v)
			}
		}
		for c, o := range s.Offsets {
			if _, ok := s.Scales[c]; !ok {
				return fmt.Errorf("scaling fixed: column %s has an offset but no scale", quoteName(c))
			}
			if math.IsNaN(o) || math.IsInf(o, 0) {
				return fmt.Errorf("scaling fixed: offset of column %s must be finite, got %g", quoteName(c), o)
			}
		}
	case ScaleNone:
		if s.MaxNorm != 0 {
			return fmt.Errorf("scaling none: MaxNorm does not apply, got %g", s.MaxNorm)
		}
		if len(s.Scales) > 0 || len(s.Offsets) > 0 {
			return errors.New("scaling none: Scales and Offsets apply to fixed mode only")
		}
	default:
		return fmt.Errorf("unknown scaling mode %q, want standardise, maxnorm, fixed or none", s.Mode)
	}
	return nil
}

// mode returns the mode with the default filled in.
func (s Scaling) mode() ScalingMode {
	if s.Mode == "" {
		return ScaleStandardise
	}
	return s.Mode
}

// maxNorm returns MaxNorm with the default filled in.
func (s Scaling) maxNorm() float64 {
	if s.MaxNorm == 0 {
		return DefaultMaxNorm
	}
	return s.MaxNorm
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

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

// unitText explains the protected unit for the operator.
func unitText(s Scaling, features []string) string {
	const lead = "Neighbouring datasets differ in one record's feature vector by at most 1 in Euclidean norm"
	const dataDependent = " Scaling used the data's own statistics (data-dependent); use fixed public scales for a strict guarantee."
	switch s.mode() {
	case ScaleStandardise:
		mn := formatFloat(s.maxNorm())
		return lead + " after scaling: columns standardised, rows scaled to a maximal norm of " + mn +
			", so one unit is 1/" + mn + " of the largest record's distance from the average record, measured in standard deviations." + dataDependent
	case ScaleMaxNorm:
		mn := formatFloat(s.maxNorm())
		return lead + " after scaling: columns centred, then all values multiplied by one common factor so that the maximal row norm is " + mn +
			", so one unit is 1/" + mn + " of the largest record's distance from the average record in the columns' raw units." + dataDependent
	case ScaleFixed:
		var b strings.Builder
		b.WriteString(lead)
		b.WriteString(" after scaling: each column divided by a public scale given by the operator (")
		for i, f := range features {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f)
			b.WriteString(" by ")
			b.WriteString(formatFloat(s.Scales[f]))
			if o, ok := s.Offsets[f]; ok && o != 0 {
				b.WriteString(" after subtracting ")
				b.WriteString(formatFloat(o))
			}
		}
		b.WriteString("), so one unit is a change of ")
		f0 := features[0]
		b.WriteString(formatFloat(s.Scales[f0]))
		b.WriteString(" in ")
		b.WriteString(f0)
		b.WriteString(" alone")
		if len(features) > 1 {
			b.WriteString(", or of one scale in any other single column")
		}
		b.WriteString(". Scaling used only public constants, no statistic of the data.")
		return b.String()
	default:
		return lead + " in the columns' raw units (no scaling), so one unit is a change of 1 in the raw value of a single column. No statistic of the data was used."
	}
}
