package dataset

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Options selects the columns of a file and how features are scaled.
type Options struct {
	// Target is the name of the target column; empty means the last column.
	Target string
	// Features lists the feature columns in the order wanted in X; empty
	// means every column but the target and those in Exclude, in file order.
	// A column the scaling's schema declares categorical (SchemaColumn's
	// Categories) becomes one one-hot feature per category, named
	// "column=category", in the schema's order.
	Features []string
	// Exclude lists columns to leave out (a text column, an identifier) when
	// Features is empty; every name must be a column of the file.
	Exclude []string
	// MissingMarkers are the cell texts read as a missing value (compared
	// without case, after trimming spaces; an empty cell is always missing);
	// nil means DefaultMissingMarkers. A feature's missing cell takes its
	// schema line's public Missing value, and is refused without one; a row
	// whose target is missing is dropped (Raw.MissingTarget).
	MissingMarkers []string
	// Scaling says how features are scaled; the zero value is
	// standardise-nonprivate (no privacy guarantee). LoadRaw and ParseRaw
	// ignore it.
	Scaling Scaling
}

// DefaultMissingMarkers are the usual texts of a missing value, besides the
// empty cell.
var DefaultMissingMarkers = []string{"NA", "NaN", "N/A", ".", "?"}

// Dataset is a loaded data set: features scaled to the protected unit and the
// target in raw units.
type Dataset struct {
	Name     string   // LoadCSV: file name without directory and extension; ParseCSV: the name given
	Features []string // feature column names, in the order of X's columns
	Target   string   // target column name
	// TargetCategories are the target's public categories when the schema declares it
	// categorical (a class label): Y then holds each record's category index 0 … K−1.
	TargetCategories []string
	N, D             int // number of records and of features

	X []float64 // row-major N×D, scaled to the protected unit
	Y []float64 // target column in raw units, length N

	// Unit says in a few plain sentences what one unit of change protects
	// under the scaling used, for the operator log, the modeler or a README.
	// It states the scaling, never a statistic of the data.
	Unit string

	// Private reports whether the scaling keeps a release's guarantee: every
	// row was scaled with public (schema, fixed, none) or differentially
	// private (private) constants, independently of the other rows, and
	// clipped to norm ClipNorm/Unit, so changing one record changes only its
	// own row, by at most its change in scaled units and by at most
	// ClipDiameterUnits() in all. False for the *-nonprivate modes.
	Private bool

	// TargetRange is the target's range from the schema's line for the
	// target column (public in schema mode, estimated with
	// Scaling.TargetEpsilon in private mode); nil if there is none. Private
	// query answers are clipped to it.
	TargetRange *Bounds

	// Scaling is the scaling applied, with defaults filled in.
	Scaling Scaling

	// Offset and Scale give the affine part of the scaling per feature:
	// X[i,j] = c_i · (t_j(clamp_j(raw[i,j])) − Offset[j]) / Scale[j], where clamp_j
	// clamps to the column's bounds (schema and private mode only), t_j is
	// the schema's transform of the column (the identity if none) and
	// c_i ∈ (0, 1] is row i's clipping factor (1 unless the row was clipped;
	// the nonprivate modes do not clip). Scale includes the division by
	// Unit. Under the *-nonprivate modes they are statistics of the data
	// (means, standard deviations, the maximal row norm): for the curator's
	// operator only, never to be sent to a modeler. Use RawRow for a row's
	// raw values.
	Offset, Scale []float64

	// Clipped is the number of rows whose norm was clipped (private modes).
	// It is a statistic of the data: for the curator's operator only.
	Clipped int

	raw []float64 // row-major N×D raw features; nil for a Dataset built in code
}

// ClipDiameterUnits returns the distance, in protected units, that covers
// the replacement of one whole record: every scaled row has norm at most
// ClipNorm/Unit, so two rows are at most 2·ClipNorm/Unit apart. A guarantee
// stated for one unit holds for the replacement of a record with ε and δ
// converted for a change of this many units (group privacy). It is +Inf for
// the *-nonprivate modes, where one record's change moves every row.
func (d *Dataset) ClipDiameterUnits() float64 {
	if !d.Scaling.mode().Private() {
		return math.Inf(1)
	}
	return 2 * d.Scaling.clipNorm() / d.Scaling.unit()
}

// Row returns row i of X (a view, not a copy). It panics if i is out of range.
func (d *Dataset) Row(i int) []float64 {
	if i < 0 || i >= d.N {
		panic(fmt.Sprintf("dataset: row %d out of range [0, %d)", i, d.N))
	}
	return d.X[i*d.D : (i+1)*d.D : (i+1)*d.D]
}

// RawRow returns the raw (unscaled) feature values of row i, a fresh slice,
// for evaluating a row in the operator's units. For a Dataset built in code
// without raw values it inverts Offset and Scale (exact only for rows that
// were neither clamped nor clipped). It panics if i is out of range.
func (d *Dataset) RawRow(i int) []float64 {
	if i < 0 || i >= d.N {
		panic(fmt.Sprintf("dataset: row %d out of range [0, %d)", i, d.N))
	}
	if d.raw != nil {
		return slices.Clone(d.raw[i*d.D : (i+1)*d.D])
	}
	out := slices.Clone(d.Row(i))
	if d.Scale != nil {
		for j := range out {
			out[j] = out[j]*d.Scale[j] + d.Offset[j]
		}
	}
	return out
}

// LoadCSV reads and scales the data file at path (CSV, or Parquet: LoadRaw): LoadRaw, then Raw.Scale
// with opt.Scaling. Private mode needs bounds estimated from the data first
// (LoadRaw, Raw.EstimateScaling, Raw.Scale); LoadCSV accepts it only with
// the estimated bounds already in opt.Scaling.Schema. Errors are *ParseError
// or *SchemaError values naming path; a missing file satisfies
// errors.Is(err, fs.ErrNotExist).
func LoadCSV(path string, opt Options) (*Dataset, error) {
	if err := checkBeforeRead(path, opt.Scaling); err != nil {
		return nil, err
	}
	r, err := LoadRaw(path, opt)
	if err != nil {
		return nil, err
	}
	return r.Scale(opt.Scaling)
}

// ParseCSV reads CSV data from r and scales it: ParseRaw, then Raw.Scale with
// opt.Scaling. name identifies the input in errors and becomes Dataset.Name.
// See LoadCSV for private mode.
func ParseCSV(r io.Reader, name string, opt Options) (*Dataset, error) {
	if err := checkBeforeRead(name, opt.Scaling); err != nil {
		return nil, err
	}
	raw, err := ParseRaw(r, name, opt)
	if err != nil {
		return nil, err
	}
	return raw.Scale(opt.Scaling)
}

// checkBeforeRead refuses a scaling that cannot apply to any file before the
// file is read.
func checkBeforeRead(file string, s Scaling) error {
	if err := s.check(); err != nil {
		return &ParseError{File: file, Err: err}
	}
	if s.mode() == ScalePrivate && s.Schema == nil {
		return &ParseError{File: file, Err: errPrivateNeedsBounds}
	}
	return nil
}

var errPrivateNeedsBounds = errors.New("private scaling needs per-column bounds estimated from the data first: load the raw table (LoadRaw), charge the ε to the ledger, estimate the bounds (Raw.EstimateScaling or EstimateBounds), then Raw.Scale")

// LoadRaw reads the data file at path without scaling it: a Parquet file if
// its name ends in .parquet (see the package documentation, "Input format"),
// CSV otherwise (see ParseRaw). The Raw's Name is the file name without
// directory and extension.
func LoadRaw(path string, opt Options) (*Raw, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, &ParseError{File: path, Err: err}
	}
	defer f.Close()
	var t table
	if isParquet(path) {
		pt, err := openParquet(f, path)
		if err != nil {
			return nil, err
		}
		defer pt.close() // its chunk readers, also when a cell is refused part-way
		t = pt
	} else {
		ct, err := newCSVTable(f, path)
		if err != nil {
			return nil, err
		}
		ct.f = f
		t = ct
	}
	r, err := parseTable(t, path, opt)
	if err != nil {
		return nil, err
	}
	r.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return r, nil
}

// countLines returns the number of line ends in f plus one, read with ReadAt so that
// f's offset is left where it was: an upper bound on a CSV file's records, used only
// to size the columns. 0 (no hint) when f is not a regular file (a pipe cannot be
// read twice) or cannot be read; the parse then reports what is wrong.
func countLines(f *os.File) int {
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return 0
	}
	buf := make([]byte, 1<<20)
	r := io.NewSectionReader(f, 0, 1<<62)
	n := 1
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n
		}
		if err != nil {
			return 0
		}
	}
}

// ParseRaw reads CSV data from r without scaling it: a header row of column
// names, then one record per row. name identifies the input in errors and
// becomes Raw.Name. opt selects the target and feature columns; its Scaling
// is used for its schema's categorical columns and missing values only. The
// target and feature cells must be finite numbers or missing (see the package
// documentation, "Input format"); other columns are not parsed. At least two
// records with a present target are needed. Errors are
// *ParseError values.
func ParseRaw(r io.Reader, name string, opt Options) (*Raw, error) {
	t, err := newCSVTable(r, name)
	if err != nil {
		return nil, err
	}
	raw, err := parseTable(t, name, opt)
	if err != nil {
		return nil, err
	}
	raw.Name = name
	return raw, nil
}

// maxPresized bounds the values parseTable allocates up front from a table's row count
// (x, y and lines: 4 GiB); the count is a hint, capped by the file's size.
const maxPresized = 1 << 29

// table is a data file's cells, one record at a time: the lines of a CSV file
// or the column chunks of a Parquet file.
type table interface {
	// header returns the column names, checked (checkHeader), and the header's
	// line (0 if the file has none).
	header() ([]string, int)
	// use says which columns (header indices) read must fill; it refuses one
	// that cannot be read as cells.
	use(cols []int) error
	// read returns the next record, one cell per column (those not in use may be
	// empty), valid until the next call; io.EOF after the last. Other errors are
	// *ParseError values.
	read() ([]string, error)
	// pos is the position of cell k of the last record read: its line in a CSV
	// file, its 1-based row in a Parquet file.
	pos(k int) int
	// rows is an upper bound on the records left to read, 0 if not known.
	rows() int
}

// csvTable is a CSV file's table; f, if set, is the file it reads, whose line count
// sizes the columns.
type csvTable struct {
	cr    *csv.Reader
	name  string
	names []string
	line  int
	f     *os.File
}

func newCSVTable(r io.Reader, file string) (*csvTable, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	names, line, err := readHeader(cr, file)
	if err != nil {
		return nil, err
	}
	return &csvTable{cr: cr, name: file, names: names, line: line}, nil
}

func (t *csvTable) header() ([]string, int) { return t.names, t.line }
func (t *csvTable) use([]int) error         { return nil }

// rows counts the file's lines (one pass, far cheaper than parsing, made once the
// columns are known to exist), so that a large file is not read into arrays grown by
// doubling: at 10⁷ rows that growth held 3 GiB for 1.5. 0 without a file.
func (t *csvTable) rows() int {
	if t.f == nil {
		return 0
	}
	return countLines(t.f)
}
func (t *csvTable) pos(k int) int { l, _ := t.cr.FieldPos(k); return l }

func (t *csvTable) read() ([]string, error) {
	rec, err := t.cr.Read()
	if err == io.EOF {
		return nil, err
	}
	if err != nil {
		return nil, readError(t.name, err)
	}
	if len(rec) != len(t.names) {
		return nil, &ParseError{File: t.name, Line: t.pos(0), Err: fmt.Errorf("row has %d fields, the header has %d", len(rec), len(t.names))}
	}
	return rec, nil
}

// parseTable reads t's records into a Raw; file names the input in errors.
func parseTable(t table, file string, opt Options) (*Raw, error) {
	fail := func(line int, col string, err error) (*Raw, error) {
		return nil, &ParseError{File: file, Line: line, Column: col, Err: err}
	}
	header, headerLine := t.header()
	index := make(map[string]int, len(header))
	for k, h := range header {
		index[h] = k
	}
	target, features, err := selectColumns(header, index, headerLine, file, opt)
	if err != nil {
		return nil, err
	}
	ti := index[target]
	cols := []int{ti}
	for _, f := range features {
		cols = append(cols, index[f])
	}
	if err := t.use(cols); err != nil {
		return nil, err
	}
	sch := opt.Scaling.Schema
	srcs, expanded := sourcesOf(features, index, sch)
	if c, ok := sch.columnOf(target); ok && c.Missing != "" {
		return nil, &SchemaError{File: sch.File, Line: c.Line, Column: target, Err: errors.New("the target's line gives a missing value: a row with a missing target is no candidate and is dropped, so delete the value")}
	}
	markers := opt.MissingMarkers
	if markers == nil {
		markers = DefaultMissingMarkers
	}
	// Trimmed once here, not once per cell.
	trimmed := make([]string, len(markers))
	for k, m := range markers {
		trimmed[k] = strings.TrimSpace(m)
	}
	isMissing := func(cell string, cats []string) bool { return missingCell(cell, trimmed, cats) }
	undeclared := make([]int, len(srcs)) // rows with a missing cell and no schema value, per source
	missingTarget := 0
	// A categorical target is a class label: its cells are the schema's categories,
	// read as their index 0 … K−1 in the schema's order.
	var targetCats []string
	targetLine := 0
	if c := categorical(sch, target); c != nil {
		targetCats, targetLine = c.Categories, c.Line
	}
	columns := features // the source columns, before one-hot and indicators
	features = expanded
	d := len(features)

	// Records.
	var x, y []float64
	var lines []int
	if m := t.rows(); m > 0 && m <= maxPresized/(d+2) {
		x, y, lines = make([]float64, 0, m*d), make([]float64, 0, m), make([]int, 0, m)
	}
	n := 0
	for {
		rec, err := t.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line := t.pos(0)
		if isMissing(rec[ti], targetCats) {
			missingTarget++ // not a candidate
			continue
		}
		if len(x)+d > cap(x) {
			// Double, rather than append's 1.25×, to copy less on large files.
			x = slices.Grow(x, max(cap(x), 1024*d))
			y = slices.Grow(y, max(cap(y), 1024))
		}
		lines = append(lines, line)
		for j, s := range srcs {
			missing := isMissing(rec[s.k], s.cats)
			undeclared[j] += b2i(missing && s.miss == "") // the file is refused below, once every row is counted
			if x, err = s.append(x, rec[s.k], missing, sch); err != nil {
				// The cell is data: the message names where it is, not what it holds.
				return fail(t.pos(s.k), header[s.k], err)
			}
		}
		v, err := targetValue(rec[ti], targetCats, sch, targetLine)
		if err != nil {
			return fail(t.pos(ti), target, err)
		}
		y = append(y, v)
		n++
	}
	if err := undeclaredMissing(columns, undeclared, target, markers, sch); err != nil {
		return fail(0, "", err)
	}
	if err := enoughRows(n, missingTarget); err != nil {
		return fail(0, "", err)
	}
	// A target whose values are further apart than float64 can hold cannot be
	// modelled (the modeler's GP works with differences of answers): refuse it
	// here, before a curator serves it and charges a release for it.
	if lo, hi := slices.Min(y[:n]), slices.Max(y[:n]); math.IsInf(hi-lo, 0) {
		return fail(0, target, errors.New("the target's values are further apart than float64 can hold (largest − smallest overflows); rescale the target column"))
	}

	return &Raw{
		Features:         features,
		Target:           target,
		TargetCategories: slices.Clone(targetCats),
		N:                n,
		D:                d,
		X:                x[: n*d : n*d],
		Y:                y[:n:n],
		MissingTarget:    missingTarget,
		file:             file,
		headerLine:       headerLine,
		lines:            lines,
		columns:          header,
	}, nil
}

// source is a selected column of the file: a numeric feature, or a categorical one
// (from the schema) that becomes one one-hot feature per category; either may add the
// indicator feature "column=missing".
type source struct {
	k    int      // index in the header
	cats []string // the schema's categories, nil for a numeric column
	line int      // the categorical column's schema line
	miss string   // the schema's value for a missing cell; "" for none
	ind  bool     // add the indicator feature "column=missing"
}

// append appends the features of one cell to x: its value, or its one-hot categories,
// and its indicator. A missing cell takes the schema's value; one without (counted by
// the caller) appends zeros. Errors describe the cell without its content.
func (s source) append(x []float64, cell string, missing bool, sch *Schema) ([]float64, error) {
	if missing {
		cell = s.miss
	}
	switch {
	case missing && cell == "":
		x = append(x, make([]float64, max(len(s.cats), 1))...)
	case s.cats != nil:
		hit := slices.Index(s.cats, strings.TrimSpace(cell))
		if hit < 0 {
			return x, fmt.Errorf("value is not one of the %d categories schema %s lists for this column on line %d", len(s.cats), sch.File, s.line)
		}
		x = append(x, make([]float64, len(s.cats))...)
		x[len(x)-len(s.cats)+hit] = 1
	default:
		v, err := parseCell(cell)
		if err == errNotANumber {
			return x, fmt.Errorf("%w (a text column? exclude it, or list its public categories in the schema)", err)
		}
		if err != nil {
			return x, err
		}
		x = append(x, v)
	}
	if s.ind {
		x = append(x, float64(b2i(missing)))
	}
	return x, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sourcesOf returns the source of each selected feature column in order and the names
// of the features they become: a categorical column (from the schema) one one-hot feature
// per category, and a column with a missing indicator one more, "column=missing".
func sourcesOf(features []string, index map[string]int, sch *Schema) ([]source, []string) {
	srcs := make([]source, len(features))
	var expanded []string
	for j, f := range features {
		srcs[j].k = index[f]
		c, _ := sch.columnOf(f)
		srcs[j].miss, srcs[j].ind = c.Missing, c.MissingIndicator
		if c := categorical(sch, f); c != nil {
			srcs[j].cats, srcs[j].line = c.Categories, c.Line
			expanded = append(expanded, sch.OneHot(f)...)
		} else {
			expanded = append(expanded, f)
		}
		if srcs[j].ind {
			expanded = append(expanded, f+MissingFeature)
		}
	}
	return srcs, expanded
}

// missingCell reports whether a cell is missing: empty, or one of markers (trimmed, and
// compared without case, after trimming the cell) unless it is one of the column's
// declared categories.
func missingCell(cell string, markers, cats []string) bool {
	cell = strings.TrimSpace(cell)
	return cell == "" || slices.ContainsFunc(markers, func(m string) bool { return strings.EqualFold(cell, m) }) && !slices.Contains(cats, cell)
}

// targetValue reads a target cell: a number, or for a categorical target (cats, on
// the schema's line) its category's index. Errors describe the cell without its content.
func targetValue(cell string, cats []string, sch *Schema, line int) (float64, error) {
	if cats == nil {
		return parseCell(cell)
	}
	hit := slices.Index(cats, strings.TrimSpace(cell))
	if hit < 0 {
		return 0, fmt.Errorf("value is not one of the %d categories schema %s lists for the target on line %d", len(cats), sch.File, line)
	}
	return float64(hit), nil
}

// enoughRows refuses a file with fewer than two rows whose target is present.
func enoughRows(n, missingTarget int) error {
	switch {
	case n == 0 && missingTarget == 0:
		return errors.New("header only, no data rows")
	case n == 0:
		return fmt.Errorf("no data rows with a present target (%d rows have a missing target)", missingTarget)
	case n == 1:
		return errors.New("only 1 data row with a present target; need at least 2")
	}
	return nil
}

// readHeader reads the header row: the column names, checked (checkHeader), and
// its line.
func readHeader(cr *csv.Reader, file string) ([]string, int, error) {
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, 0, &ParseError{File: file, Err: errors.New("empty file, want a header row of column names")}
	}
	if err != nil {
		return nil, 0, readError(file, err)
	}
	line, _ := cr.FieldPos(0)
	header := make([]string, len(rec))
	for k, h := range rec {
		header[k] = strings.TrimSpace(h)
	}
	return header, line, checkHeader(header, line, file)
}

// checkHeader refuses an empty column name and a name given twice.
func checkHeader(header []string, line int, file string) error {
	seen := make(map[string]bool, len(header))
	for k, h := range header {
		if h == "" {
			return &ParseError{File: file, Line: line, Err: fmt.Errorf("header field %d is empty; every column needs a name", k+1)}
		}
		if seen[h] {
			return &ParseError{File: file, Line: line, Column: h, Err: errors.New("column name appears twice in the header")}
		}
		seen[h] = true
	}
	return nil
}

// selectColumns resolves opt's target and feature columns against the header.
func selectColumns(header []string, index map[string]int, headerLine int, file string, opt Options) (target string, features []string, err error) {
	fail := func(col string, err error) (string, []string, error) {
		return "", nil, &ParseError{File: file, Line: headerLine, Column: col, Err: err}
	}
	target = strings.TrimSpace(opt.Target)
	if target == "" {
		target = header[len(header)-1]
	}
	if _, ok := index[target]; !ok {
		return fail(target, fmt.Errorf("target column not in the header; columns are %s", nameList(header)))
	}
	if len(opt.Features) == 0 {
		excluded := make(map[string]bool, len(opt.Exclude))
		for _, e := range opt.Exclude {
			e = strings.TrimSpace(e)
			if _, ok := index[e]; !ok {
				return fail(e, fmt.Errorf("excluded column not in the header; columns are %s", nameList(header)))
			}
			if e == target {
				return fail(e, errors.New("the target column cannot be excluded"))
			}
			excluded[e] = true
		}
		for _, h := range header {
			if h != target && !excluded[h] {
				features = append(features, h)
			}
		}
	} else {
		if len(opt.Exclude) > 0 {
			return fail("", errors.New("give the feature columns or the columns to exclude, not both"))
		}
		seen := make(map[string]bool, len(opt.Features))
		for _, f := range opt.Features {
			f = strings.TrimSpace(f)
			switch {
			case f == "":
				return fail("", errors.New("empty feature column name in options"))
			case f == target:
				return fail(f, errors.New("target column is also listed as a feature"))
			case seen[f]:
				return fail(f, errors.New("feature column listed twice"))
			}
			if _, ok := index[f]; !ok {
				return fail(f, fmt.Errorf("feature column not in the header; columns are %s", nameList(header)))
			}
			seen[f] = true
			features = append(features, f)
		}
	}
	if len(features) == 0 {
		return fail("", fmt.Errorf("no feature columns: the header has only the target %s (and excluded columns)", quoteName(target)))
	}
	return target, features, nil
}

// undeclaredMissing refuses missing cells in the feature columns without a
// schema value: every such column with its count of rows (for the operator,
// who owns the data; no cell's content), and the two fixes.
func undeclaredMissing(columns []string, counts []int, target string, markers []string, sch *Schema) error {
	var what []string
	for j, c := range columns {
		if counts[j] == 1 {
			what = append(what, quoteName(c)+" (1 row)")
		} else if counts[j] > 0 {
			what = append(what, fmt.Sprintf("%s (%d rows)", quoteName(c), counts[j]))
		}
	}
	if what == nil {
		return nil
	}
	fix, template := "give in schema "+sch.fileName()+", with the field missing on each such column's line,", ""
	if sch == nil {
		fix, template = "give in a schema (scaling schema), with the field missing,", ". A schema to fill in:\n  column,lower,upper,missing"
		for j, c := range append(slices.Clone(columns), target) {
			template += "\n  " + c + ",LOWER,UPPER,"
			if j < len(counts) && counts[j] > 0 {
				template += "VALUE"
			}
		}
	}
	return fmt.Errorf("missing cells (empty or one of %q) in feature columns with no declared value, counted in the rows with a present target: %s. "+
		"Either %s the public value of a missing cell (missing_indicator yes adds the 0/1 feature column=missing), or exclude the columns%s",
		markers, strings.Join(what, ", "), fix, template)
}

// errNotANumber is parseCell's error for text.
var errNotANumber = errors.New("not a number")

// categorical returns the schema's entry for column name if s declares it
// categorical, nil otherwise (and for a nil schema).
func categorical(s *Schema, name string) *SchemaColumn {
	if s == nil {
		return nil
	}
	if c, ok := s.Column(name); ok && len(c.Categories) > 0 {
		return &c
	}
	return nil
}

// parseCell parses one selected cell that is not missing. Its errors describe
// the cell without repeating its content.
func parseCell(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0) {
			// Underflow to zero or a subnormal: the nearest float is fine.
			return v, nil
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, errors.New("number too large for a 64-bit float")
		}
		return 0, errNotANumber
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("NaN or infinite value, want a finite number")
	}
	return v, nil
}

// readError converts an error from the CSV reader, keeping its position but
// not its content.
func readError(file string, err error) error {
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		if ce.StartLine != ce.Line {
			return &ParseError{File: file, Line: ce.Line, Err: fmt.Errorf("malformed CSV at byte %d of the line, in the record starting on line %d: %w", ce.Column, ce.StartLine, ce.Err)}
		}
		return &ParseError{File: file, Line: ce.Line, Err: fmt.Errorf("malformed CSV at byte %d of the line: %w", ce.Column, ce.Err)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the message
	}
	return &ParseError{File: file, Err: fmt.Errorf("read: %w", err)}
}
