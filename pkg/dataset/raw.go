package dataset

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Raw is a parsed data file before scaling: the selected feature columns and
// the target in the file's units. It lets a curator estimate scaling bounds
// with differential privacy (Raw.EstimateScaling), charge the ledger, and
// only then scale (Raw.Scale). Raw holds sensitive data: never log or send
// it.
type Raw struct {
	Name     string   // LoadRaw: file name without directory and extension; ParseRaw: the name given
	Features []string // feature column names, in the order of X's columns
	Target   string   // target column name
	// TargetCategories: the target's public categories (Y holds their index), or nil.
	TargetCategories []string
	N, D             int // number of records and of features

	X []float64 // row-major N×D raw features; Scale does not modify it
	Y []float64 // target column, length N
	// MissingTarget is the number of rows dropped for a missing target: they
	// are no candidates (a statistic of the data, for the operator only).
	MissingTarget int

	file       string   // the input's name in errors
	headerLine int      // line of the header in the file
	lines      []int    // line of each record in the file
	columns    []string // the file's header, every column name in order
}

// Scale returns the dataset of r's records scaled by s. The Dataset shares
// r.X as its raw values (RawRow): do not modify r.X afterwards. Errors are
// *ParseError values naming the data file, or *SchemaError values naming
// the schema file when the schema does not fit the data's columns.
func (r *Raw) Scale(s Scaling) (*Dataset, error) {
	fail := func(line int, col string, err error) (*Dataset, error) {
		return nil, &ParseError{File: r.file, Line: line, Column: col, Err: err}
	}
	if err := s.check(); err != nil {
		return fail(0, "", err)
	}
	sc := s
	sc.Mode = sc.mode()
	sc.Scales, sc.Offsets = maps.Clone(sc.Scales), maps.Clone(sc.Offsets)
	if sc.Mode.Private() {
		sc.ClipNorm, sc.Unit = sc.clipNorm(), sc.unit()
	} else {
		sc.MaxNorm = sc.maxNorm()
	}
	n, d := r.N, r.D
	ds := &Dataset{
		Name:             r.Name,
		Features:         slices.Clone(r.Features),
		Target:           r.Target,
		TargetCategories: slices.Clone(r.TargetCategories),
		N:                n,
		D:                d,
		X:                slices.Clone(r.X),
		Y:                slices.Clone(r.Y),
		Scaling:          sc,
		Private:          sc.Mode.Private(),
		Unit:             unitText(sc, r.Features),
		raw:              r.X,
	}
	var err error
	switch sc.Mode {
	case ScaleStandardiseNonprivate:
		ds.Offset, ds.Scale, err = standardise(ds.X, n, d, sc.MaxNorm)
		if err != nil {
			return fail(0, "", err)
		}
		return ds, nil
	case ScaleMaxNormNonprivate:
		ds.Offset, ds.Scale, err = maxNormScale(ds.X, n, d, sc.MaxNorm)
		if err != nil {
			return fail(0, "", err)
		}
		return ds, nil
	}

	// The private modes: per column an optional clamp to [lo, hi], then the
	// affine map (v − off)/scale; then the row clip and the division by Unit.
	off := make([]float64, d)
	scale := make([]float64, d)
	lo := make([]float64, d)
	hi := make([]float64, d)
	tf := make([]func(float64) float64, d) // the schema's transforms, nil for none
	for j := range d {
		scale[j], lo[j], hi[j] = 1, math.Inf(-1), math.Inf(1)
	}
	switch sc.Mode {
	case ScaleFixed:
		if err := r.applyFixed(sc, off, scale); err != nil {
			return nil, err
		}
	case ScaleSchema, ScalePrivate:
		if sc.Schema == nil {
			return fail(0, "", errPrivateNeedsBounds)
		}
		if err := r.applySchema(sc, off, scale, lo, hi, tf); err != nil {
			return nil, err
		}
		ds.TargetRange = targetRange(sc.Schema, r.Target)
	}
	x := ds.X
	for i := range n {
		for j := range d {
			v := math.Min(math.Max(x[i*d+j], lo[j]), hi[j])
			if tf[j] != nil {
				v = tf[j](v)
			}
			v = (v - off[j]) / scale[j]
			if math.IsInf(v, 0) {
				return fail(r.lines[i], r.Features[j], fmt.Errorf("value overflows after scaling by %s", sc.Mode))
			}
			x[i*d+j] = v
		}
	}
	ds.Clipped = clipRows(x, n, d, sc.ClipNorm)
	if err := divideByUnit(x, scale, sc.Unit); err != nil {
		return fail(0, "", err)
	}
	for j := range scale {
		if !(scale[j] > 0) || math.IsInf(scale[j], 0) {
			return fail(0, r.Features[j], errors.New("the column's scale (with Unit) is outside floating-point range; choose wider bounds or another Unit"))
		}
	}
	ds.Offset, ds.Scale = off, scale
	return ds, nil
}

// applyFixed fills the offsets and scales of r's features from sc's public scales. A
// scale for a column that is not a feature is refused rather than ignored: a scale
// that scales nothing is a mistake (often a misspelt name) the operator should hear of.
func (r *Raw) applyFixed(sc Scaling, off, scale []float64) error {
	var missing []string
	for j, f := range r.Features {
		v, ok := sc.Scales[f]
		if !ok {
			missing = append(missing, f)
		}
		scale[j], off[j] = v, sc.Offsets[f]
	}
	if len(missing) > 0 {
		return &ParseError{File: r.file, Err: fmt.Errorf("fixed scaling has no scale for feature columns %s; give every feature a public scale", nameList(missing))}
	}
	for c := range sc.Scales {
		if !slices.Contains(r.Features, c) {
			return &ParseError{File: r.file, Line: r.headerLine, Column: c, Err: errors.New("fixed scaling gives a scale for a column that is not a feature")}
		}
	}
	return nil
}

// targetRange is the public range of target that sch states (nil if none): its bounds,
// or for a class label the indices 0 … K−1 of its K categories.
func targetRange(sch *Schema, target string) *Bounds {
	c, ok := sch.Column(target)
	if !ok {
		return nil
	}
	tr := &Bounds{Lower: c.Lower, Upper: c.Upper}
	if k := len(c.Categories); k > 0 { // a class label: indices 0 … K−1
		tr = nil
		if k > 1 {
			tr = &Bounds{Lower: 0, Upper: float64(k - 1)}
		}
	}
	return tr
}

// divideByUnit divides the clipped rows x by unit and multiplies the scales by it:
// Dataset.Scale includes the division by Unit.
func divideByUnit(x, scale []float64, unit float64) error {
	if unit == 1 {
		return nil
	}
	for k := range x {
		x[k] /= unit
		if math.IsInf(x[k], 0) {
			return fmt.Errorf("dividing by Unit %g overflows floating-point range; choose a larger Unit", unit)
		}
	}
	for j := range scale {
		scale[j] *= unit
	}
	return nil
}

// applySchema fills the offsets, scales, clamp bounds and transforms of r's
// features from sc.Schema: a bounded column [l, u] with transform t (the
// identity if none) maps t(clamp(x)) onto [−c, c] with c = ClipNorm/√d, so
// off = (t(l)+t(u))/2 and scale = (t(u)−t(l))/(2c).
func (r *Raw) applySchema(sc Scaling, off, scale, lo, hi []float64, tf []func(float64) float64) error {
	sch := sc.Schema
	// A line for a column the file does not have is a mistake (a misspelt name
	// would otherwise leave its column to another line or fail further on).
	if r.columns != nil {
		for _, c := range sch.Columns {
			if !slices.Contains(r.columns, c.Name) {
				return &SchemaError{File: sch.File, Line: c.Line, Column: c.Name, Err: fmt.Errorf("no such column in data file %s (its columns are %s); correct the name or delete the line",
					r.file, nameList(r.columns))}
			}
		}
	}
	var missing []string
	for _, f := range r.Features {
		if _, ok := sch.Column(f); !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return &SchemaError{File: sch.File, Err: fmt.Errorf("no line for feature columns %s of data file %s; give every feature public bounds or a scale",
			nameList(missing), r.file)}
	}
	if t, ok := sch.Column(r.Target); ok && !t.HasBounds && len(t.Categories) == 0 {
		return &SchemaError{File: sch.File, Line: t.Line, Column: t.Name, Err: errors.New("the target column's line must give its range (lower, upper) or its categories, not a scale")}
	}
	c := sc.clipNorm() / math.Sqrt(float64(r.D))
	for j, f := range r.Features {
		col, _ := sch.Column(f)
		if !col.HasBounds {
			off[j], scale[j] = col.Offset, col.Scale
			continue
		}
		lo[j], hi[j] = col.Lower, col.Upper
		l, u := col.Lower, col.Upper
		if col.Transform != "" {
			tf[j] = transforms[col.Transform]
			l, u = tf[j](l), tf[j](u) // finite, l < u (SchemaColumn.check)
		}
		// (l+u)/2 and (u−l)/(2c) without overflow for finite l < u whose
		// difference is finite (SchemaColumn.check).
		off[j] = l/2 + u/2
		scale[j] = (u - l) / (2 * c)
		if !(scale[j] > 0) || math.IsInf(scale[j], 0) {
			return &SchemaError{File: sch.File, Line: col.Line, Column: f, Err: fmt.Errorf("bounds [%g, %g] give a scale outside floating-point range with ClipNorm %g", col.Lower, col.Upper, sc.clipNorm())}
		}
	}
	return nil
}

// String describes r without its data.
func (r *Raw) String() string {
	return fmt.Sprintf("dataset.Raw{%s: %d records, features %s, target %s}", r.Name, r.N, strings.Join(r.Features, ","), r.Target)
}
