package dataset

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Bounds is a closed interval [Lower, Upper] of one column, Lower < Upper.
type Bounds struct{ Lower, Upper float64 }

// SchemaColumn is one line of a schema: a column with either public bounds
// (HasBounds), a public scale and offset, or public categories.
type SchemaColumn struct {
	Name string
	// Line is the column's line in the schema file; 0 for a schema built in
	// code.
	Line int
	// HasBounds says the column has public bounds [Lower, Upper]; otherwise
	// it has a public Scale (> 0) and Offset.
	HasBounds     bool
	Lower, Upper  float64
	Scale, Offset float64
	// Categories, when set, make the column categorical: its cells are text,
	// each one of these public categories, and the loader one-hot encodes it
	// as one feature per category, named "column=category" in this order,
	// each with the public bounds [0, 1] (Schema.Column resolves those names).
	// A categorical line has no bounds, scale or offset. A categorical target
	// is a class label: the loader reads each cell as its category's index
	// 0 … K−1 (Dataset.TargetCategories), as tuning jobs' classes.
	Categories []string
	// Missing, when set, is the public value put in place of a missing cell
	// (Options.MissingMarkers): a number for a numeric column, one of the
	// categories for a categorical one. MissingIndicator adds the public 0/1
	// feature "column=missing", 1 where the cell was missing, with the
	// public bounds [0, 1]. Both are functions of the record alone.
	Missing          string
	MissingIndicator bool
	// Transform, for a column with bounds, is a public monotone map applied
	// after the clamp to [Lower, Upper]: "log", "log1p" or "sqrt"; the affine
	// map then uses the transformed bounds. (Tuning jobs' built-in learner
	// reads the raw values with the bounds alone.)
	Transform string
}

// transforms are the schema's per-column transforms. Each must be finite at
// the column's lower bound: log needs lower > 0, log1p lower > −1, sqrt
// lower ≥ 0.
var transforms = map[string]func(float64) float64{"log": math.Log, "log1p": math.Log1p, "sqrt": math.Sqrt}

// MissingFeature is the suffix of a column's missing-value indicator feature,
// "column=missing".
const MissingFeature = "=missing"

// CategorySeparator separates the categories in a schema's categories cell.
const CategorySeparator = "|"

// Schema holds public, data-independent facts about the columns of a data
// file: for each feature its public bounds or scale, and optionally the
// target's public range. It is what ScaleSchema scales with. Build one with
// LoadSchema, ParseSchema or SchemaFromBounds.
type Schema struct {
	// File names the schema in errors (the path for LoadSchema).
	File    string
	Columns []SchemaColumn // in file order, each name once
	// Fields are the header's field names in file order (ParseSchema), e.g.
	// column, lower, upper; nil for a schema built in code.
	Fields []string
}

// HeaderLine returns the schema's header line, "column,lower,upper" for a
// schema built in code.
func (s *Schema) HeaderLine() string {
	if len(s.Fields) == 0 {
		return "column,lower,upper"
	}
	return strings.Join(s.Fields, ",")
}

// LineFor returns the schema line giving column name the bounds lower and
// upper (numbers or placeholders), its fields in the order of the schema's
// header (HeaderLine), the other fields empty. A header without lower and
// upper gets them appended.
func (s *Schema) LineFor(name, lower, upper string) string {
	fields := s.Fields
	if !slices.Contains(fields, "lower") || !slices.Contains(fields, "upper") {
		return name + "," + lower + "," + upper
	}
	out := make([]string, len(fields))
	for k, f := range fields {
		switch f {
		case "column":
			out[k] = name
		case "lower":
			out[k] = lower
		case "upper":
			out[k] = upper
		}
	}
	return strings.Join(out, ",")
}

// SchemaError reports a bad schema, or a schema that does not fit a data
// file. Its message names the schema file and, where one applies, the line.
// Schemas are public, so messages may repeat their values.
type SchemaError struct {
	File   string // the schema file (Schema.File)
	Line   int    // 1-based line in the schema file; 0 if none applies
	Column string // the column concerned; empty if none
	Err    error
}

// Error returns `dataset: schema FILE:LINE: column "c": what is wrong`,
// leaving out the parts that do not apply.
func (e *SchemaError) Error() string {
	var b strings.Builder
	b.WriteString("dataset: schema ")
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("(built in code)")
	}
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	writeColumnAndCause(&b, e.Column, e.Err, "invalid schema")
	return b.String()
}

// Unwrap returns the underlying error.
func (e *SchemaError) Unwrap() error { return e.Err }

// schemaFields are the header names a schema may use.
var schemaFields = []string{"column", "lower", "upper", "scale", "offset", "categories", "missing", "missing_indicator", "transform"}

// numericFields are the schema fields holding numbers.
var numericFields = []string{"lower", "upper", "scale", "offset"}

// LoadSchema reads the schema file at path; see ParseSchema. A missing file
// satisfies errors.Is(err, fs.ErrNotExist).
func LoadSchema(path string) (*Schema, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, &SchemaError{File: path, Err: err}
	}
	defer f.Close()
	return ParseSchema(f, path)
}

// ParseSchema reads a schema: CSV with a header naming some of column,
// lower, upper, scale, offset, categories (any order, "column" required),
// then one line per column with either lower and upper (public bounds,
// lower < upper), or scale (> 0) and an optional offset, or categories: the
// public categories of a text column, separated by "|" (e.g. "benign|malignant").
// Optional fields: missing (the public value of a missing cell),
// missing_indicator (yes: add the 0/1 feature "column=missing") and transform
// (log, log1p or sqrt, on a line with bounds). Empty cells are absent values; lines
// starting with '#' are comments. A line for the target column gives the
// target's public range (lower and upper). Every value must be a finite
// number and every column appear once. name identifies the input in errors
// and becomes Schema.File. Errors are *SchemaError values.
//
// Whether the schema covers every feature of a data file is checked when it
// is applied (Raw.Scale), since the feature selection is not known here.
func ParseSchema(r io.Reader, name string) (*Schema, error) {
	fail := func(line int, col string, format string, args ...any) (*Schema, error) {
		return nil, schemaErrorf(name, line, col, format, args...)
	}
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'

	idx, err := readSchemaHeader(cr, name)
	if err != nil {
		return nil, err
	}
	s := &Schema{File: name, Fields: make([]string, len(idx))}
	for f, k := range idx {
		s.Fields[k] = f
	}
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, schemaReadError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(idx) {
			return fail(line, "", "line has %d fields, the header has %d", len(rec), len(idx))
		}
		col := strings.TrimSpace(rec[idx["column"]])
		if col == "" {
			return fail(line, "", "empty column name")
		}
		if first, dup := seen[col]; dup {
			return fail(line, col, "column named twice (first on line %d)", first)
		}
		seen[col] = line
		c, err := parseSchemaColumn(name, idx, rec, line, col)
		if err != nil {
			return nil, err
		}
		s.Columns = append(s.Columns, c)
	}
	if len(s.Columns) == 0 {
		return fail(0, "", "no column lines after the header")
	}
	return s, nil
}

// schemaErrorf is the *SchemaError of schema file at line (0: none) and column col
// (empty: none).
func schemaErrorf(file string, line int, col string, format string, args ...any) error {
	return &SchemaError{File: file, Line: line, Column: col, Err: fmt.Errorf(format, args...)}
}

// schemaReadError is the *SchemaError of a schema file that cannot be read as CSV,
// naming the line where the CSV reader found it malformed.
func schemaReadError(file string, err error) error {
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		return schemaErrorf(file, ce.Line, "", "malformed CSV: %v", ce.Err)
	}
	return schemaErrorf(file, 0, "", "read: %v", err)
}

// readSchemaHeader reads the header and returns each field's position in a line. The
// header decides what a line may say, so a header under which no line could describe a
// column is refused before any line is read.
func readSchemaHeader(cr *csv.Reader, file string) (map[string]int, error) {
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, schemaErrorf(file, 0, "", "empty file, want a header naming some of %s", strings.Join(schemaFields, ", "))
	}
	if err != nil {
		return nil, schemaReadError(file, err)
	}
	headerLine, _ := cr.FieldPos(0)
	idx := map[string]int{}
	for k, h := range rec {
		h = strings.ToLower(strings.TrimSpace(h))
		known := false
		for _, f := range schemaFields {
			known = known || f == h
		}
		if !known {
			return nil, schemaErrorf(file, headerLine, "", "header field %d (%q) is not one of %s", k+1, h, strings.Join(schemaFields, ", "))
		}
		if _, dup := idx[h]; dup {
			return nil, schemaErrorf(file, headerLine, "", "header names %q twice", h)
		}
		idx[h] = k
	}
	if _, ok := idx["column"]; !ok {
		return nil, schemaErrorf(file, headerLine, "", "header has no \"column\" field")
	}
	_, hasLower := idx["lower"]
	_, hasUpper := idx["upper"]
	_, hasScale := idx["scale"]
	if hasLower != hasUpper {
		return nil, schemaErrorf(file, headerLine, "", "header names only one of lower and upper; bounds need both")
	}
	_, hasCategories := idx["categories"]
	if !hasLower && !hasScale && !hasCategories {
		return nil, schemaErrorf(file, headerLine, "", "header names neither lower and upper, nor scale, nor categories")
	}
	return idx, nil
}

// parseSchemaColumn reads the line rec (at line, describing column col) under the
// header idx: exactly one of bounds, a scale (with an optional offset) or categories,
// and the optional missing-value and transform fields.
func parseSchemaColumn(file string, idx map[string]int, rec []string, line int, col string) (SchemaColumn, error) {
	fail := func(format string, args ...any) (SchemaColumn, error) {
		return SchemaColumn{}, schemaErrorf(file, line, col, format, args...)
	}
	vals, err := schemaNumbers(file, idx, rec, line, col)
	if err != nil {
		return SchemaColumn{}, err
	}
	c := SchemaColumn{Name: col, Line: line}
	_, lo := vals["lower"]
	_, up := vals["upper"]
	_, sc := vals["scale"]
	_, off := vals["offset"]
	cat := false
	if k, ok := idx["categories"]; ok && strings.TrimSpace(rec[k]) != "" {
		cat = true
		for _, v := range strings.Split(rec[k], CategorySeparator) {
			c.Categories = append(c.Categories, strings.TrimSpace(v))
		}
	}
	switch {
	case cat && (lo || up || sc || off):
		return fail("line gives categories and also bounds or a scale; a categorical column has only its categories")
	case cat:
		// c.Categories, checked below.
	case (lo || up) && (sc || off):
		return fail("line gives both bounds (lower, upper) and a scale or offset; give one or the other")
	case lo != up:
		return fail("line gives only one of lower and upper; bounds need both")
	case lo:
		c.HasBounds, c.Lower, c.Upper = true, vals["lower"], vals["upper"]
	case sc:
		c.Scale, c.Offset = vals["scale"], vals["offset"]
	case off:
		return fail("line gives an offset but no scale")
	default:
		return fail("line gives neither bounds (lower, upper), nor a scale, nor categories")
	}
	text := func(f string) string {
		if k, ok := idx[f]; ok {
			return strings.TrimSpace(rec[k])
		}
		return ""
	}
	c.Missing, c.Transform = text("missing"), strings.ToLower(text("transform"))
	switch strings.ToLower(text("missing_indicator")) {
	case "yes", "true", "1":
		c.MissingIndicator = true
	case "", "no", "false", "0":
	default:
		return fail("missing_indicator %q: want yes or no", text("missing_indicator"))
	}
	if err := c.check(); err != nil {
		return fail("%v", err)
	}
	return c, nil
}

// schemaNumbers returns the numeric fields rec gives (an empty cell gives none),
// refusing any that is not a finite number, since no bound, scale or offset can be.
func schemaNumbers(file string, idx map[string]int, rec []string, line int, col string) (map[string]float64, error) {
	vals := map[string]float64{}
	for _, f := range numericFields {
		k, ok := idx[f]
		if !ok {
			continue
		}
		cell := strings.TrimSpace(rec[k])
		if cell == "" {
			continue
		}
		v, err := strconv.ParseFloat(cell, 64)
		if err != nil && !(errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0)) {
			return nil, schemaErrorf(file, line, col, "%s %q is not a finite number", f, cell)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, schemaErrorf(file, line, col, "%s %q is not a finite number", f, cell)
		}
		vals[f] = v
	}
	return vals, nil
}

// check checks one column's values on their own.
func (c SchemaColumn) check() error {
	if err := c.checkNumbers(); err != nil {
		return err
	}
	if c.MissingIndicator && c.Missing == "" {
		return errors.New("missing_indicator needs a missing value to put in the cell")
	}
	if c.Missing != "" && len(c.Categories) > 0 {
		if !slices.Contains(c.Categories, c.Missing) {
			return fmt.Errorf("missing %q is not one of the column's categories", c.Missing)
		}
		if c.MissingIndicator && slices.Contains(c.Categories, strings.TrimPrefix(MissingFeature, "=")) {
			return errors.New("a category named missing and missing_indicator would both make the feature column=missing")
		}
	} else if c.Missing != "" {
		v, err := strconv.ParseFloat(c.Missing, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || (c.HasBounds && (v < c.Lower || v > c.Upper)) {
			return fmt.Errorf("missing %q must be a finite number within the column's bounds", c.Missing)
		}
	}
	if c.Transform == "" {
		return nil
	}
	tf, ok := transforms[c.Transform]
	switch {
	case !ok:
		return fmt.Errorf("transform %q: want log, log1p or sqrt", c.Transform)
	case !c.HasBounds:
		return errors.New("a transform needs the column's bounds (lower, upper), not a scale or categories")
	}
	if l, u := tf(c.Lower), tf(c.Upper); math.IsNaN(l) || math.IsInf(l, 0) || !(l < u) {
		return fmt.Errorf("transform %s is not finite and increasing on [%g, %g]: log needs lower > 0, log1p lower > −1, sqrt lower ≥ 0", c.Transform, c.Lower, c.Upper)
	}
	return nil
}

// checkNumbers checks a column's bounds, scale or categories.
func (c SchemaColumn) checkNumbers() error {
	if len(c.Categories) > 0 {
		seen := map[string]bool{}
		for _, v := range c.Categories {
			switch {
			case v == "":
				return errors.New("empty category name")
			case seen[v]:
				return fmt.Errorf("category %q listed twice", v)
			}
			seen[v] = true
		}
		if c.HasBounds || c.Scale != 0 || c.Offset != 0 {
			return errors.New("a categorical column has no bounds, scale or offset")
		}
		return nil
	}
	if c.HasBounds {
		if math.IsNaN(c.Lower) || math.IsInf(c.Lower, 0) || math.IsNaN(c.Upper) || math.IsInf(c.Upper, 0) {
			return fmt.Errorf("bounds must be finite, got [%g, %g]", c.Lower, c.Upper)
		}
		if !(c.Lower < c.Upper) {
			return fmt.Errorf("lower %g must be below upper %g", c.Lower, c.Upper)
		}
		if math.IsInf(c.Upper-c.Lower, 0) {
			return fmt.Errorf("bounds [%g, %g] are too far apart for float64", c.Lower, c.Upper)
		}
		return nil
	}
	if math.IsNaN(c.Scale) || math.IsInf(c.Scale, 0) || c.Scale <= 0 {
		return fmt.Errorf("scale must be finite and positive, got %g", c.Scale)
	}
	if math.IsNaN(c.Offset) || math.IsInf(c.Offset, 0) {
		return fmt.Errorf("offset must be finite, got %g", c.Offset)
	}
	return nil
}

// SchemaFromBounds returns a schema giving each named column the bounds at
// the same index, for bounds estimated privately (EstimateBounds) or known in
// code. file names the schema in errors. It panics if the lengths differ.
func SchemaFromBounds(file string, columns []string, bounds []Bounds) *Schema {
	if len(columns) != len(bounds) {
		panic(fmt.Sprintf("dataset: SchemaFromBounds with %d columns and %d bounds", len(columns), len(bounds)))
	}
	s := &Schema{File: file}
	for i, c := range columns {
		s.Columns = append(s.Columns, SchemaColumn{Name: c, HasBounds: true, Lower: bounds[i].Lower, Upper: bounds[i].Upper})
	}
	return s
}

// Validate checks a schema built in code as ParseSchema checks a file.
func (s *Schema) Validate() error {
	if s == nil {
		return &SchemaError{Err: errors.New("nil schema")}
	}
	if len(s.Columns) == 0 {
		return &SchemaError{File: s.File, Err: errors.New("no columns")}
	}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if c.Name == "" {
			return &SchemaError{File: s.File, Line: c.Line, Err: errors.New("empty column name")}
		}
		if seen[c.Name] {
			return &SchemaError{File: s.File, Line: c.Line, Column: c.Name, Err: errors.New("column named twice")}
		}
		seen[c.Name] = true
		if err := c.check(); err != nil {
			return &SchemaError{File: s.File, Line: c.Line, Column: c.Name, Err: err}
		}
	}
	return nil
}

// Column returns the schema's line for the named column. A name
// "column=category" that is not itself a line, for a categorical column and
// one of its categories, is that category's one-hot feature, and
// "column=missing" of a column with MissingIndicator its indicator: a column
// with the public bounds [0, 1] (on the source column's line).
func (s *Schema) Column(name string) (SchemaColumn, bool) {
	for _, c := range s.Columns {
		if c.Name == name {
			return c, true
		}
	}
	if col, cat, ok := strings.Cut(name, "="); ok {
		for _, c := range s.Columns {
			if c.Name == col && (slices.Contains(c.Categories, cat) || c.MissingIndicator && "="+cat == MissingFeature) {
				return SchemaColumn{Name: name, Line: c.Line, HasBounds: true, Lower: 0, Upper: 1}, true
			}
		}
	}
	return SchemaColumn{}, false
}

// fileName is File for a possibly nil schema.
func (s *Schema) fileName() string {
	if s == nil {
		return ""
	}
	return s.File
}

// columnOf is Column for a possibly nil schema.
func (s *Schema) columnOf(name string) (SchemaColumn, bool) {
	if s == nil {
		return SchemaColumn{}, false
	}
	return s.Column(name)
}

// OneHot returns the names of the one-hot features of the categorical column
// c ("c=category" for each category, in the schema's order), or nil if c is
// not a categorical column of s.
func (s *Schema) OneHot(c string) []string {
	col, ok := s.Column(c)
	if !ok || len(col.Categories) == 0 {
		return nil
	}
	out := make([]string, len(col.Categories))
	for k, v := range col.Categories {
		out[k] = c + "=" + v
	}
	return out
}

// Names returns the column names in schema order.
func (s *Schema) Names() []string {
	out := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		out[i] = c.Name
	}
	return out
}
