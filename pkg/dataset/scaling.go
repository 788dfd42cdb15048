package dataset

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ScalingMode names how features are scaled to the protected unit.
type ScalingMode string

const (
	// ScaleSchema scales with a public schema (LoadSchema): a column with
	// public bounds is clamped to them and mapped affinely onto [−c, c],
	// c = ClipNorm/√d; a column with a public scale is mapped to
	// (x − offset)/scale. Rows are then clipped to norm ClipNorm and divided
	// by Unit. Uses no statistic of the data.
	ScaleSchema ScalingMode = "schema"
	// ScalePrivate is ScaleSchema with per-column bounds estimated from the
	// data with differential privacy (EstimateBounds, Raw.EstimateScaling).
	ScalePrivate ScalingMode = "private"
	// ScaleFixed divides each column by a public scale given by the
	// operator, after subtracting an optional public offset, then clips rows
	// to norm ClipNorm and divides by Unit. Uses no statistic of the data.
	ScaleFixed ScalingMode = "fixed"
	// ScaleNone keeps the raw units, then clips rows to norm ClipNorm and
	// divides by Unit.
	ScaleNone ScalingMode = "none"
	// ScaleStandardiseNonprivate z-scores each feature column, centres the
	// rows and scales all of X by one factor so that the maximal row norm is
	// MaxNorm. The scaling is a function of every record, so the (ε, δ)
	// claim of a release does NOT hold. It is the zero Mode, for simulations
	// on public data.
	ScaleStandardiseNonprivate ScalingMode = "standardise-nonprivate"
	// ScaleMaxNormNonprivate centres the columns and scales all of X by one
	// factor so that the maximal row norm is MaxNorm. Data-dependent: the
	// (ε, δ) claim does NOT hold.
	ScaleMaxNormNonprivate ScalingMode = "maxnorm-nonprivate"
)

// Private reports whether the mode scales each row independently of the
// other rows with public (or differentially private) constants and clips it,
// so that a release calibrated for one unit keeps its guarantee.
func (m ScalingMode) Private() bool {
	switch m {
	case ScaleSchema, ScalePrivate, ScaleFixed, ScaleNone:
		return true
	}
	return false
}

// DefaultMaxNorm is the maximal row norm used by the *-nonprivate modes when
// Scaling.MaxNorm is zero: the value of the experiments of Kharkovskii et al.
// (2020, §4).
const DefaultMaxNorm = 25

// DefaultClipNorm is the radius every row is clipped to in the private modes
// when Scaling.ClipNorm is zero: the maximal norm of the experiments of
// Kharkovskii et al. (2020, §4).
const DefaultClipNorm = 25

// DefaultUnit is the protected distance, in the nominal scaled units, when
// Scaling.Unit is zero.
const DefaultUnit = 1

// Scaling says how features are scaled. The zero value is
// standardise-nonprivate to a maximal row norm of DefaultMaxNorm, which
// gives no privacy guarantee (Dataset.Private is false).
type Scaling struct {
	Mode ScalingMode
	// MaxNorm is the maximal row norm after scaling, for the *-nonprivate
	// modes only; 0 means DefaultMaxNorm.
	MaxNorm float64
	// ClipNorm is the radius every scaled row is clipped to, for the private
	// modes (schema, private, fixed, none); 0 means DefaultClipNorm.
	ClipNorm float64
	// Unit is the protected distance in the nominal scaled units, for the
	// private modes: the clipped rows are divided by Unit, so that the
	// release's "one unit" is Unit nominal units. 0 means DefaultUnit.
	Unit float64
	// Scales maps every feature column to its public scale (finite, > 0),
	// for fixed mode only.
	Scales map[string]float64
	// Offsets optionally maps feature columns to a public offset (finite)
	// subtracted before dividing by the scale, for fixed mode only. A column
	// without an entry has offset 0.
	Offsets map[string]float64
	// Schema holds the public bounds or scales of schema mode, or, in
	// private mode, the bounds estimated by Raw.EstimateScaling (nil before
	// the estimate). It must cover every feature column.
	Schema *Schema
	// Epsilon is, in private mode, the ε spent on estimating the feature
	// bounds (record replacement); 0 until set. TargetEpsilon is the ε spent
	// on the target's range, 0 if it was not estimated. Both are estimated
	// in one release (EstimateBoundsWith) of privacy (Epsilon +
	// TargetEpsilon, Delta).
	Epsilon, TargetEpsilon float64
	// Delta is, in private mode, the δ of that estimate: 0 for a pure ε-DP
	// estimate (discrete Laplace noise), > 0 for an (ε, δ)-DP one through
	// zCDP (discrete Gaussian noise; BoundsPrivacy).
	Delta float64
}

// ParseScaling parses a scaling given on a command line:
//
//	"schema:PATH"              public bounds or scales from the schema file PATH (LoadSchema)
//	"private", "private:EPS"   bounds estimated from the data with ε = EPS (record replacement)
//	"fixed:age=10,bmi=5"       divide age by 10 and bmi by 5
//	"fixed:age=10@50"          subtract 50 from age, then divide by 10
//	"none"                     raw units
//	"standardise-nonprivate[:MAXNORM]"  z-score, maximal row norm 25 or MAXNORM (no guarantee)
//	"maxnorm-nonprivate[:MAXNORM]"      centre, maximal row norm 25 or MAXNORM (no guarantee)
//	""                         standardise-nonprivate (the zero Scaling)
//
// The private modes (schema, private, fixed, none) take options after ';':
// "clip=R" sets ClipNorm, "unit=U" sets Unit, e.g. "schema:d.schema.csv;unit=2".
// Mode names are case-insensitive. The old data-dependent names standardise,
// standardize and maxnorm are refused. In fixed mode, column names may not
// contain ',' or ';' and the last '=' separates name and scale. ParseScaling
// reads the schema file of schema mode.
func ParseScaling(spec string) (Scaling, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Scaling{Mode: ScaleStandardiseNonprivate, MaxNorm: DefaultMaxNorm}, nil
	}
	base, opts, hasOpts := strings.Cut(spec, ";")
	name, arg, hasArg := strings.Cut(base, ":")
	arg = strings.TrimSpace(arg)
	var s Scaling
	lname := strings.ToLower(strings.TrimSpace(name))
	switch lname {
	case "schema":
		s.Mode = ScaleSchema
	case "private":
		s.Mode = ScalePrivate
	case "fixed":
		s.Mode = ScaleFixed
	case "none":
		s.Mode = ScaleNone
	case "standardise-nonprivate", "standardize-nonprivate":
		s.Mode = ScaleStandardiseNonprivate
	case "maxnorm-nonprivate":
		s.Mode = ScaleMaxNormNonprivate
	case "standardise", "standardize", "maxnorm":
		return Scaling{}, fmt.Errorf("dataset: scaling %q: %q is no longer accepted: it scales with the data's own statistics, so no (ε, δ) claim holds; use schema:FILE (public bounds), private[:EPS] (bounds estimated with differential privacy), fixed:col=scale,... or none, or %s-nonprivate to keep the old scaling without a guarantee",
			spec, name, strings.Replace(lname, "standardize", "standardise", 1))
	default:
		return Scaling{}, fmt.Errorf("dataset: scaling %q: unknown mode %q, want schema, private, fixed, none, standardise-nonprivate or maxnorm-nonprivate", spec, name)
	}
	if hasOpts && !s.Mode.Private() {
		return Scaling{}, fmt.Errorf("dataset: scaling %q: options after ';' (clip, unit) apply to schema, private, fixed and none only", spec)
	}
	switch s.Mode {
	case ScaleStandardiseNonprivate, ScaleMaxNormNonprivate:
		s.MaxNorm = DefaultMaxNorm
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !positive(v) {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: maximal norm must be a finite positive number, got %q", spec, arg)
			}
			s.MaxNorm = v
		}
	case ScaleSchema:
		if arg == "" {
			return Scaling{}, fmt.Errorf("dataset: scaling %q: schema needs a schema file, e.g. \"schema:examples/data/diabetes.schema.csv\"", spec)
		}
		sch, err := LoadSchema(arg)
		if err != nil {
			return Scaling{}, err
		}
		s.Schema = sch
	case ScalePrivate:
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !positive(v) {
				return Scaling{}, fmt.Errorf("dataset: scaling %q: ε of the bounds estimate must be a finite positive number, got %q", spec, arg)
			}
			s.Epsilon = v
		}
	case ScaleFixed:
		if err := s.parseFixed(spec, arg); err != nil {
			return Scaling{}, err
		}
	case ScaleNone:
		if hasArg {
			return Scaling{}, fmt.Errorf("dataset: scaling %q: none takes no argument", spec)
		}
	}
	if s.Mode.Private() {
		s.ClipNorm, s.Unit = DefaultClipNorm, DefaultUnit
	}
	if hasOpts {
		seen := map[string]bool{}
		for opt := range strings.SplitSeq(opts, ";") {
			k, v, ok := strings.Cut(opt, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			switch {
			case !ok || (k != "clip" && k != "unit"):
				return Scaling{}, fmt.Errorf("dataset: scaling %q: option %q is not clip=R or unit=U", spec, strings.TrimSpace(opt))
			case seen[k]:
				return Scaling{}, fmt.Errorf("dataset: scaling %q: option %s given twice", spec, k)
			case err != nil || !positive(f):
				return Scaling{}, fmt.Errorf("dataset: scaling %q: %s must be a finite positive number, got %q", spec, k, strings.TrimSpace(v))
			}
			seen[k] = true
			if k == "clip" {
				s.ClipNorm = f
			} else {
				s.Unit = f
			}
		}
	}
	return s, nil
}

// parseFixed reads the column scales of "fixed:...".
func (s *Scaling) parseFixed(spec, arg string) error {
	if arg == "" {
		return fmt.Errorf("dataset: scaling %q: fixed needs column scales, e.g. \"fixed:age=10,bmi=5\"", spec)
	}
	s.Scales = make(map[string]float64)
	for item := range strings.SplitSeq(arg, ",") {
		item = strings.TrimSpace(item)
		i := strings.LastIndex(item, "=")
		if i < 0 {
			return fmt.Errorf("dataset: scaling %q: %q is not column=scale", spec, item)
		}
		col := strings.TrimSpace(item[:i])
		scaleText, offText, hasOff := strings.Cut(item[i+1:], "@")
		if col == "" {
			return fmt.Errorf("dataset: scaling %q: %q has no column name", spec, item)
		}
		if _, dup := s.Scales[col]; dup {
			return fmt.Errorf("dataset: scaling %q: column %q given twice", spec, col)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(scaleText), 64)
		if err != nil || !positive(v) {
			return fmt.Errorf("dataset: scaling %q: scale of column %q must be a finite positive number, got %q", spec, col, scaleText)
		}
		s.Scales[col] = v
		if hasOff {
			o, err := strconv.ParseFloat(strings.TrimSpace(offText), 64)
			if err != nil || math.IsNaN(o) || math.IsInf(o, 0) {
				return fmt.Errorf("dataset: scaling %q: offset of column %q must be a finite number, got %q", spec, col, offText)
			}
			if s.Offsets == nil {
				s.Offsets = make(map[string]float64)
			}
			s.Offsets[col] = o
		}
	}
	return nil
}

// positive reports whether v is finite and > 0.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// String formats s in the syntax ParseScaling accepts. A schema is written as
// its File, which parses back only if it is the path of the schema file; the
// bounds of private mode are not written.
func (s Scaling) String() string {
	var b strings.Builder
	switch m := s.mode(); m {
	case ScaleStandardiseNonprivate, ScaleMaxNormNonprivate:
		return string(m) + ":" + formatFloat(s.maxNorm())
	case ScaleSchema:
		b.WriteString("schema:")
		if s.Schema != nil {
			b.WriteString(s.Schema.File)
		}
	case ScalePrivate:
		b.WriteString("private")
		if s.Epsilon > 0 {
			b.WriteString(":" + formatFloat(s.Epsilon))
		}
	case ScaleFixed:
		cols := make([]string, 0, len(s.Scales))
		for c := range s.Scales {
			cols = append(cols, c)
		}
		sort.Strings(cols)
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
	default:
		b.WriteString(string(s.Mode))
	}
	if s.clipNorm() != DefaultClipNorm {
		b.WriteString(";clip=" + formatFloat(s.clipNorm()))
	}
	if s.unit() != DefaultUnit {
		b.WriteString(";unit=" + formatFloat(s.unit()))
	}
	return b.String()
}

// Validate checks s on its own; whether the scales or schema fit the columns
// of a file is checked when the file is scaled.
func (s Scaling) Validate() error {
	if err := s.check(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

// check is Validate without the package prefix.
func (s Scaling) check() error {
	m := s.mode()
	if m.Private() {
		for _, p := range []struct {
			name string
			v    float64
		}{{"ClipNorm", s.ClipNorm}, {"Unit", s.Unit}} {
			if math.IsNaN(p.v) || math.IsInf(p.v, 0) || p.v < 0 {
				return fmt.Errorf("scaling %s: %s must be finite and positive (0 for the default), got %g", m, p.name, p.v)
			}
		}
		if s.MaxNorm != 0 {
			return fmt.Errorf("scaling %s: MaxNorm applies to the *-nonprivate modes only (rows are clipped to ClipNorm), got %g", m, s.MaxNorm)
		}
	}
	if m != ScaleFixed && (len(s.Scales) > 0 || len(s.Offsets) > 0) {
		return fmt.Errorf("scaling %s: Scales and Offsets apply to fixed mode only", m)
	}
	if m != ScaleSchema && m != ScalePrivate && s.Schema != nil {
		return fmt.Errorf("scaling %s: Schema applies to schema and private mode only", m)
	}
	if m != ScalePrivate && (s.Epsilon != 0 || s.TargetEpsilon != 0 || s.Delta != 0) {
		return fmt.Errorf("scaling %s: Epsilon and Delta apply to private mode only", m)
	}
	switch m {
	case ScaleStandardiseNonprivate, ScaleMaxNormNonprivate:
		if math.IsNaN(s.MaxNorm) || math.IsInf(s.MaxNorm, 0) || s.MaxNorm < 0 {
			return fmt.Errorf("scaling %s: MaxNorm must be finite and positive (0 for the default %d), got %g", m, DefaultMaxNorm, s.MaxNorm)
		}
		if s.ClipNorm != 0 || s.Unit != 0 {
			return fmt.Errorf("scaling %s: ClipNorm and Unit apply to the private modes only", m)
		}
	case ScaleSchema:
		if s.Schema == nil {
			return errors.New("scaling schema: Schema must give public bounds or scales for every feature column (LoadSchema)")
		}
		if err := s.Schema.Validate(); err != nil {
			return err
		}
	case ScalePrivate:
		for _, e := range []float64{s.Epsilon, s.TargetEpsilon} {
			if math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
				return fmt.Errorf("scaling private: Epsilon and TargetEpsilon must be finite and ≥ 0, got %g", e)
			}
		}
		if !(s.Delta >= 0 && s.Delta < 1) {
			return fmt.Errorf("scaling private: Delta must be in [0, 1), got %g", s.Delta)
		}
		if s.Schema != nil {
			if err := s.Schema.Validate(); err != nil {
				return err
			}
			for _, c := range s.Schema.Columns {
				if !c.HasBounds {
					return fmt.Errorf("scaling private: column %s has a scale, but private mode scales with estimated bounds only", quoteName(c.Name))
				}
			}
		}
	case ScaleFixed:
		if len(s.Scales) == 0 {
			return errors.New("scaling fixed: Scales must give a public scale for every feature column")
		}
		for c, v := range s.Scales {
			if c == "" {
				return errors.New("scaling fixed: Scales has an empty column name")
			}
			if !positive(v) {
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
	case "standardise", "standardize", "maxnorm":
		return fmt.Errorf("scaling mode %q is no longer accepted (data-dependent, no guarantee): use %s, %s, %s or %s, or %s/%s without a guarantee",
			string(s.Mode), ScaleSchema, ScalePrivate, ScaleFixed, ScaleNone, ScaleStandardiseNonprivate, ScaleMaxNormNonprivate)
	default:
		return fmt.Errorf("unknown scaling mode %q, want %s, %s, %s, %s, %s or %s",
			string(s.Mode), ScaleSchema, ScalePrivate, ScaleFixed, ScaleNone, ScaleStandardiseNonprivate, ScaleMaxNormNonprivate)
	}
	return nil
}

// mode returns the mode with the default filled in.
func (s Scaling) mode() ScalingMode {
	if s.Mode == "" {
		return ScaleStandardiseNonprivate
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

// clipNorm returns ClipNorm with the default filled in.
func (s Scaling) clipNorm() float64 {
	if s.ClipNorm == 0 {
		return DefaultClipNorm
	}
	return s.ClipNorm
}

// unit returns Unit with the default filled in.
func (s Scaling) unit() float64 {
	if s.Unit == 0 {
		return DefaultUnit
	}
	return s.Unit
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// clipRows scales every row of the n×d matrix x whose Euclidean norm exceeds
// r down onto the sphere of radius r (the projection onto the ball, which is
// 1-Lipschitz: two rows at distance δ are at most δ apart after clipping). It
// returns the number of rows clipped. The norm is computed without overflow.
func clipRows(x []float64, n, d int, r float64) int {
	clipped := 0
	for i := range n {
		row := x[i*d : (i+1)*d]
		// ‖row‖ = a·√s, compared and divided without forming it, which could
		// overflow for finite rows.
		a, s := normParts(row)
		if a == 0 || math.Sqrt(s) <= r/a {
			continue
		}
		// Shrink by a few ulps more than r/‖row‖ so that the computed norm of
		// the result never exceeds r.
		f := r / a / math.Sqrt(s) * (1 - 4*0x1p-53)
		for j := range row {
			row[j] *= f
		}
		clipped++
	}
	return clipped
}

// normParts returns a = max_j |v_j| and s = Σ_j (v_j/a)², so ‖v‖₂ = a·√s
// (a = 0 for a zero vector).
func normParts(v []float64) (a, s float64) {
	for _, x := range v {
		a = math.Max(a, math.Abs(x))
	}
	if a == 0 {
		return 0, 0
	}
	for _, x := range v {
		y := x / a
		s += y * y
	}
	return a, s
}

// rowNorm returns ‖v‖₂ without underflow, and without overflow unless the
// norm itself exceeds the float64 range.
func rowNorm(v []float64) float64 {
	a, s := normParts(v)
	return a * math.Sqrt(s)
}

// unitText explains the protected unit for the operator and the modeler. It
// states only the scaling, never a statistic of the data.
func unitText(s Scaling, features []string) string {
	const lead = "Neighbouring datasets differ in one record's feature vector by at most 1 in Euclidean norm"
	const noClaim = " The (ε, δ) claim does NOT hold: the scaling uses the data's own statistics, so one record's change moves every scaled row."
	d := len(features)
	clip, unit := s.clipNorm(), s.unit()
	clipped := fmt.Sprintf(" Every row is then clipped to norm %s and divided by %s, so replacing a whole record moves it by at most %s units.",
		formatFloat(clip), formatFloat(unit), formatFloat(2*clip/unit))
	// In schema and private mode one unit is unit/(2c) of a bounded column's range.
	frac := "1/" + strconv.FormatFloat(2*clip/math.Sqrt(float64(d))/unit, 'g', 4, 64)
	switch m := s.mode(); m {
	case ScaleStandardiseNonprivate:
		mn := formatFloat(s.maxNorm())
		return lead + " after scaling: columns standardised, rows scaled to a maximal norm of " + mn +
			", so one unit is 1/" + mn + " of the largest record's distance from the average record, measured in standard deviations." + noClaim
	case ScaleMaxNormNonprivate:
		mn := formatFloat(s.maxNorm())
		return lead + " after scaling: columns centred, then all values multiplied by one common factor so that the maximal row norm is " + mn +
			", so one unit is 1/" + mn + " of the largest record's distance from the average record in the columns' raw units." + noClaim
	case ScaleSchema:
		file := "built in code"
		if s.Schema != nil && s.Schema.File != "" {
			// The base name: the text reaches modelers, the operator's file layout must not.
			file = filepath.Base(s.Schema.File)
		}
		return lead + " after scaling: each feature clamped to its public range from the schema " + file +
			" and mapped onto [−c, c] with c = " + formatFloat(clip) + "/√" + strconv.Itoa(d) + " (or divided by its public scale), so one unit is a change of " +
			frac + " of a column's public range (of its transform's, for a transformed column) in that column alone, or of one public scale." + clipped + " Scaling used only public constants, no statistic of the data."
	case ScalePrivate:
		return lead + " after scaling: each feature clamped to bounds estimated from the data with " + BoundsPrivacy{Epsilon: s.Epsilon + s.TargetEpsilon, Delta: s.Delta}.String() +
			" under the replacement of one record (the bounds are not released) and mapped onto [−c, c] with c = " + formatFloat(clip) + "/√" + strconv.Itoa(d) +
			", so one unit is a change of " + frac + " of a column's estimated range in that column alone." + clipped
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
		b.WriteString(formatFloat(s.Scales[f0] * unit))
		b.WriteString(" in ")
		b.WriteString(f0)
		b.WriteString(" alone")
		if d > 1 {
			b.WriteString(", or of one scale in any other single column")
		}
		b.WriteString(".")
		b.WriteString(clipped)
		b.WriteString(" Scaling used only public constants, no statistic of the data.")
		return b.String()
	default:
		return lead + " in the columns' raw units (no scaling), so one unit is a change of " + formatFloat(unit) +
			" in the raw value of a single column." + clipped + " No statistic of the data was used."
	}
}
