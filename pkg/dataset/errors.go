package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ParseError reports bad input: a file that cannot be read, malformed CSV, a
// bad cell, or a header or options that do not fit together. Its message
// names the file, line and column where they apply and never contains a
// cell's content (header names are quoted).
type ParseError struct {
	File   string // file path or the name given to ParseCSV; may be empty
	Line   int    // 1-based line in the file (a Parquet file: row); 0 if none applies
	Column string // header name of the column; empty if none applies
	Err    error  // what is wrong
}

// Error returns `dataset: FILE:LINE: column "c": what is wrong`, leaving out
// the parts that do not apply.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("dataset: ")
	switch {
	case isParquet(e.File) && e.Line > 0:
		b.WriteString(e.File)
		b.WriteString(": row ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	case e.File != "":
		b.WriteString(e.File)
		b.WriteString(": ")
	case e.Line > 0:
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	writeColumnAndCause(&b, e.Column, e.Err, "invalid input")
	return b.String()
}

// writeColumnAndCause ends an error message with `column "c": cause` (the column
// left out when empty, fallback when err is nil).
func writeColumnAndCause(b *strings.Builder, column string, err error, fallback string) {
	if column != "" {
		b.WriteString("column ")
		b.WriteString(quoteName(column))
		b.WriteString(": ")
	}
	if err != nil {
		b.WriteString(err.Error())
	} else {
		b.WriteString(fallback)
	}
}

// openFile opens path for reading, with an error that says "cannot open" and the
// reason (it still satisfies errors.Is(err, fs.ErrNotExist) for a missing file).
func openFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("cannot open: %w", pe.Err)
		}
		return nil, err
	}
	return f, nil
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// maxNameLen bounds how much of a header name an error message repeats.
const maxNameLen = 64

// quoteName quotes a header name for an error message, truncating very long
// names.
func quoteName(s string) string {
	if r := []rune(s); len(r) > maxNameLen {
		return strconv.Quote(string(r[:maxNameLen])) + "…"
	}
	return strconv.Quote(s)
}

// nameList lists header names for an error message, at most 20 of them.
func nameList(names []string) string {
	const max = 20
	var b strings.Builder
	for i, n := range names {
		if i == max {
			b.WriteString(", … (")
			b.WriteString(strconv.Itoa(len(names) - max))
			b.WriteString(" more)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteName(n))
	}
	return b.String()
}

// isParquet reports whether the data file path is read as Parquet: its name ends
// in .parquet, in any case.
func isParquet(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".parquet")
}
