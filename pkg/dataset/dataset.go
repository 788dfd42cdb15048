package dataset

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
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
	// means every column but the target, in file order.
	Features []string
	// Scaling says how features are scaled; the zero value standardises to
	// a maximal row norm of DefaultMaxNorm.
	Scaling Scaling
}

// Dataset is a loaded data set: features scaled to the protected unit and the
// target in raw units.
type Dataset struct {
	Name     string   // LoadCSV: file name without directory and extension; ParseCSV: the name given
	Features []string // feature column names, in the order of X's columns
	Target   string   // target column name
	N, D     int      // number of records and of features

	X []float64 // row-major N×D, scaled to the protected unit
	Y []float64 // target column in raw units, length N

	// Unit says in one or two plain sentences what one unit of change
	// protects under the scaling used, for the operator log or a README.
	Unit string

	// Scaling is the scaling applied, with defaults filled in.
	Scaling Scaling

	// Offset and Scale give the scaling per feature:
	// X[i,j] = (raw[i,j] − Offset[j]) / Scale[j]. Under standardise and
	// maxnorm they are statistics of the data (means, standard deviations,
	// the maximal row norm): for the curator's operator only, never to be
	// sent to a modeler.
	Offset, Scale []float64
}

// Row returns row i of X (a view, not a copy). It panics if i is out of range.
func (d *Dataset) Row(i int) []float64 {
	if i < 0 || i >= d.N {
		panic(fmt.Sprintf("dataset: row %d out of range [0, %d)", i, d.N))
	}
	return d.X[i*d.D : (i+1)*d.D : (i+1)*d.D]
}

// LoadCSV reads and scales the CSV file at path; see ParseCSV. Errors are
// *ParseError values naming path; a missing file satisfies
// errors.Is(err, fs.ErrNotExist).
func LoadCSV(path string, opt Options) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("cannot open: %w", pe.Err)
		}
		return nil, &ParseError{File: path, Err: err}
	}
	defer f.Close()
	ds, err := parse(f, path, opt)
	if err != nil {
		return nil, err
	}
	ds.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return ds, nil
}

// ParseCSV reads CSV data from r: a header row of column names, then one
// record per row. name identifies the input in errors and becomes
// Dataset.Name. The target and feature cells must be finite numbers; other
// columns are not parsed. At least two records are needed. Errors are
// *ParseError values.
func ParseCSV(r io.Reader, name string, opt Options) (*Dataset, error) {
	ds, err := parse(r, name, opt)
	if err != nil {
		return nil, err
	}
	ds.Name = name
	return ds, nil
}

// parse does the work of LoadCSV and ParseCSV; file names the input in errors.
func parse(r io.Reader, file string, opt Options) (*Dataset, error) {
	fail := func(line int, col string, err error) (*Dataset, error) {
		return nil, &ParseError{File: file, Line: line, Column: col, Err: err}
	}
	if err := opt.Scaling.check(); err != nil {
		return fail(0, "", err)
	}
	sc := opt.Scaling
	sc.Mode = sc.mode()
	sc.Scales, sc.Offsets = maps.Clone(sc.Scales), maps.Clone(sc.Offsets)
	if sc.Mode == ScaleStandardise || sc.Mode == ScaleMaxNorm {
		sc.MaxNorm = sc.maxNorm()
	}

	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true

	// Header.
	rec, err := cr.Read()
	if err == io.EOF {
		return fail(0, "", errors.New("empty file, want a header row of column names"))
	}
	if err != nil {
		return readError(file, err)
	}
	headerLine, _ := cr.FieldPos(0)
	header := make([]string, len(rec))
	index := make(map[string]int, len(rec))
	for k, h := range rec {
		h = strings.TrimSpace(h)
		if h == "" {
			return fail(headerLine, "", fmt.Errorf("header field %d is empty; every column needs a name", k+1))
		}
		if _, dup := index[h]; dup {
			return fail(headerLine, h, errors.New("column name appears twice in the header"))
		}
		header[k] = h
		index[h] = k
	}

	// Columns.
	target := strings.TrimSpace(opt.Target)
	if target == "" {
		target = header[len(header)-1]
	}
	ti, ok := index[target]
	if !ok {
		return fail(headerLine, target, fmt.Errorf("target column not in the header; columns are %s", nameList(header)))
	}
	var features []string
	if len(opt.Features) == 0 {
		for _, h := range header {
			if h != target {
				features = append(features, h)
			}
		}
	} else {
		seen := make(map[string]bool, len(opt.Features))
		for _, f := range opt.Features {
			f = strings.TrimSpace(f)
			switch {
			case f == "":
				return fail(headerLine, "", errors.New("empty feature column name in options"))
			case f == target:
				return fail(headerLine, f, errors.New("target column is also listed as a feature"))
			case seen[f]:
				return fail(headerLine, f, errors.New("feature column listed twice"))
			}
			if _, ok := index[f]; !ok {
				return fail(headerLine, f, fmt.Errorf("feature column not in the header; columns are %s", nameList(header)))
			}
			seen[f] = true
			features = append(features, f)
		}
	}
	d := len(features)
	if d == 0 {
		return fail(headerLine, "", fmt.Errorf("no feature columns: the header has only the target %s", quoteName(target)))
	}
	fi := make([]int, d)
	for j, f := range features {
		fi[j] = index[f]
	}

	// Fixed mode: every feature needs a public scale; nothing else may have one.
	var fixOff, fixScale []float64
	if sc.Mode == ScaleFixed {
		fixOff = make([]float64, d)
		fixScale = make([]float64, d)
		var missing []string
		for j, f := range features {
			s, ok := sc.Scales[f]
			if !ok {
				missing = append(missing, f)
			}
			fixScale[j], fixOff[j] = s, sc.Offsets[f]
		}
		if len(missing) > 0 {
			return fail(0, "", fmt.Errorf("fixed scaling has no scale for feature columns %s; give every feature a public scale", nameList(missing)))
		}
		for c := range sc.Scales {
			if !slices.Contains(features, c) {
				return fail(headerLine, c, errors.New("fixed scaling gives a scale for a column that is not a feature"))
			}
		}
	}

	// Records.
	var x, y []float64
	n := 0
	for {
		rec, err = cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return readError(file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return fail(line, "", fmt.Errorf("row has %d fields, the header has %d", len(rec), len(header)))
		}
		if len(x)+d > cap(x) {
			// Double, rather than append's 1.25×, to copy less on large files.
			x = slices.Grow(x, max(cap(x), 1024*d))
			y = slices.Grow(y, max(cap(y), 1024))
		}
		for j, k := range fi {
			v, err := parseCell(rec[k])
			if err == nil && fixScale != nil {
				v = (v - fixOff[j]) / fixScale[j]
				if math.IsInf(v, 0) {
					err = errors.New("value overflows after dividing by its fixed scale")
				}
			}
			if err != nil {
				l, _ := cr.FieldPos(k)
				return fail(l, header[k], err)
			}
			x = append(x, v)
		}
		v, err := parseCell(rec[ti])
		if err != nil {
			l, _ := cr.FieldPos(ti)
			return fail(l, target, err)
		}
		y = append(y, v)
		n++
	}
	switch n {
	case 0:
		return fail(0, "", errors.New("header only, no data rows"))
	case 1:
		return fail(0, "", errors.New("only 1 data row; need at least 2"))
	}

	ds := &Dataset{
		Features: features,
		Target:   target,
		N:        n,
		D:        d,
		X:        x[: n*d : n*d],
		Y:        y[:n:n],
		Scaling:  sc,
		Unit:     unitText(sc, features),
	}
	var serr error
	switch sc.Mode {
	case ScaleStandardise:
		ds.Offset, ds.Scale, serr = standardise(ds.X, n, d, sc.MaxNorm)
	case ScaleMaxNorm:
		ds.Offset, ds.Scale, serr = maxNormScale(ds.X, n, d, sc.MaxNorm)
	case ScaleFixed:
		ds.Offset, ds.Scale = fixOff, fixScale
	case ScaleNone:
		ds.Offset, ds.Scale = make([]float64, d), make([]float64, d)
		for j := range ds.Scale {
			ds.Scale[j] = 1
		}
	}
	if serr != nil {
		return fail(0, "", serr)
	}
	return ds, nil
}

// parseCell parses one selected cell. Its errors describe the cell without
// repeating its content.
func parseCell(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty cell, want a number")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0) {
			// Underflow to zero or a subnormal: the nearest float is fine.
			return v, nil
		}
		if errors.Is(err, strconv.ErrRange) {
			return 0, errors.New("number too large for a 64-bit float")
		}
		return 0, errors.New("not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("NaN or infinite value, want a finite number")
	}
	return v, nil
}

// readError converts an error from the CSV reader, keeping its position but
// not its content.
func readError(file string, err error) (*Dataset, error) {
	var ce *csv.ParseError
	if errors.As(err, &ce) {
		if ce.StartLine != ce.Line {
			return nil, &ParseError{File: file, Line: ce.Line, Err: fmt.Errorf("malformed CSV at byte %d of the line, in the record starting on line %d: %w", ce.Column, ce.StartLine, ce.Err)}
		}
		return nil, &ParseError{File: file, Line: ce.Line, Err: fmt.Errorf("malformed CSV at byte %d of the line: %w", ce.Column, ce.Err)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the message
	}
	return nil, &ParseError{File: file, Err: fmt.Errorf("read: %w", err)}
}
