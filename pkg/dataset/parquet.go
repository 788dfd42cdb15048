package dataset

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// parquetBatch is how many rows a parquetTable holds as cells at a time, per column
// in use.
const parquetBatch = 4096

// parquetTable is a Parquet file's table: its top-level columns in schema order, read
// column chunk by column chunk (row group by row group, page by page) for the columns
// in use, each value turned into the text a CSV cell would hold (cellText), so the
// cells go through the same path as CSV's.
type parquetTable struct {
	f     *parquet.File
	size  int64 // the file's bytes: a bound on the rows its footer may claim
	file  string
	names []string
	cols  []*parquet.Column // top-level, header order

	used    []int                                // header indices in use
	text    []func([]byte, parquet.Value) []byte // per column in use
	readers []parquet.ColumnChunkValueReader     // per column in use, of row group group-1
	cells   [][]string                           // per column in use, the batch's cells
	scratch []parquet.Value                      // values of one ReadValues call
	buf     []byte                               // one column's batch of cells, end to end
	ends    []int                                // where each cell ends in buf
	rec     []string                             // the record read returns
	group   int                                  // next row group
	left    int64                                // rows of the current row group not yet in a batch
	i, n    int                                  // next row in the batch, rows in the batch
	row     int                                  // rows read so far
}

// openParquet opens the Parquet file at path; the caller closes f.
func openParquet(f *os.File, path string) (_ *parquetTable, err error) {
	defer recoverCorrupt(&err, path, "its footer")
	st, err := f.Stat()
	if err != nil {
		return nil, readError(path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, corruptParquet(path, "its footer")
	}
	t := &parquetTable{f: pf, file: path, cols: pf.Root().Columns(), size: st.Size()}
	for _, c := range t.cols {
		t.names = append(t.names, c.Name())
	}
	if len(t.names) == 0 {
		return nil, &ParseError{File: path, Err: errors.New("the Parquet schema has no columns")}
	}
	return t, checkHeader(t.names, 0, path)
}

// corruptParquet is the error of a file whose part what does not decode. It leaves
// out the reader's message, which may quote the file's bytes.
func corruptParquet(path, what string) error {
	return &ParseError{File: path, Err: fmt.Errorf("not a readable Parquet file: %s does not decode; check that the copy is complete, or write it again", what)}
}

// recoverCorrupt, deferred, turns a panic of the Parquet reader, which panics on some
// corrupt files, into the error *err of a file whose part what does not decode.
func recoverCorrupt(err *error, path, what string) {
	if recover() != nil {
		*err = corruptParquet(path, what)
	}
}

func (t *parquetTable) header() ([]string, int) { return t.names, 0 }
func (t *parquetTable) pos(int) int             { return t.row }
func (t *parquetTable) rows() int               { return int(max(min(t.f.NumRows(), t.size), 0)) }

func (t *parquetTable) use(cols []int) error {
	t.used, t.text, t.cells = cols, make([]func([]byte, parquet.Value) []byte, len(cols)), make([][]string, len(cols))
	for j, k := range cols {
		fn, err := cellText(t.cols[k])
		if err != nil {
			return &ParseError{File: t.file, Column: t.names[k], Err: err}
		}
		t.text[j], t.cells[j] = fn, make([]string, parquetBatch)
	}
	t.rec, t.scratch, t.ends = make([]string, len(t.names)), make([]parquet.Value, 256), make([]int, parquetBatch)
	return nil
}

func (t *parquetTable) read() ([]string, error) {
	for t.i == t.n {
		if err := t.fill(); err != nil {
			return nil, err
		}
	}
	for j, k := range t.used {
		t.rec[k] = t.cells[j][t.i]
	}
	t.i++
	t.row++
	return t.rec, nil
}

// fill reads the next batch of rows of the columns in use, opening the next row group
// when the current one is done; io.EOF after the last.
func (t *parquetTable) fill() (err error) {
	defer recoverCorrupt(&err, t.file, "a page")
	for t.left == 0 {
		t.close()
		groups := t.f.RowGroups()
		if t.group == len(groups) {
			return io.EOF
		}
		g := groups[t.group]
		t.group++
		if t.left = g.NumRows(); t.left < 0 {
			return corruptParquet(t.file, fmt.Sprintf("row group %d's footer", t.group))
		}
		chunks := g.ColumnChunks()
		for _, k := range t.used {
			t.readers = append(t.readers, parquet.NewColumnChunkValueReader(chunks[t.cols[k].Index()]))
		}
	}
	t.i, t.n = 0, int(min(t.left, parquetBatch))
	for j, r := range t.readers {
		t.buf = t.buf[:0]
		for got := 0; got < t.n; {
			// No value: the chunk ends before the row group's rows, or a page does not decode.
			m, _ := r.ReadValues(t.scratch[:min(len(t.scratch), t.n-got)])
			for _, v := range t.scratch[:m] { // converted before the next read releases the page
				t.buf = t.text[j](t.buf, v)
				t.ends[got] = len(t.buf)
				got++
			}
			if m == 0 {
				return corruptParquet(t.file, fmt.Sprintf("row group %d of column %s", t.group, quoteName(t.names[t.used[j]])))
			}
		}
		text, start := string(t.buf), 0 // one string per column and batch, not one per cell
		for i, end := range t.ends[:t.n] {
			t.cells[j][i], start = text[start:end], end
		}
	}
	t.left -= int64(t.n)
	return nil
}

// close closes the readers of the current row group.
func (t *parquetTable) close() {
	for _, r := range t.readers {
		r.Close()
	}
	t.readers = t.readers[:0]
}

// cellText returns how a value of column c reads as a cell: a null as an empty cell
// (missing), a bool as 1 or 0, an integer or a decimal as its number, a float by the
// shortest text that gives it back (the text a CSV export shows), text as itself. A
// nested, repeated or other column (a date, a time) is refused.
func cellText(c *parquet.Column) (func([]byte, parquet.Value) []byte, error) {
	typ := c.Type()
	if !c.Leaf() || c.Repeated() {
		return nil, errors.New("a nested or repeated Parquet column cannot be read as one value per row; exclude it")
	}
	var fn func([]byte, parquet.Value) []byte
	lt := typ.LogicalType()
	if lt == nil {
		lt = &format.LogicalType{}
	}
	switch l := lt.Value.(type) {
	case nil, *format.StringType, *format.EnumType:
		fn = plainText(typ.Kind())
	case *format.IntType:
		fn = plainText(typ.Kind())
		if !l.IsSigned {
			fn = func(b []byte, v parquet.Value) []byte { return strconv.AppendUint(b, v.Uint64()&(1<<l.BitWidth-1), 10) }
		}
	case *format.DecimalType:
		fn = func(b []byte, v parquet.Value) []byte {
			return strconv.AppendInt(append(appendDecimal(b, v), "e-"...), int64(l.Scale), 10)
		}
	}
	if fn == nil {
		return nil, fmt.Errorf("a column of Parquet type %s is not read (numbers, booleans and text are); cast it to a number or text, or exclude it", typ)
	}
	return func(b []byte, v parquet.Value) []byte {
		if v.IsNull() {
			return b
		}
		return fn(b, v)
	}, nil
}

// plainText is cellText for a value of physical type k without a logical type that
// changes its meaning; nil for INT96.
func plainText(k parquet.Kind) func([]byte, parquet.Value) []byte {
	switch k {
	case parquet.Boolean:
		return func(b []byte, v parquet.Value) []byte { return append(b, '0'+byte(b2i(v.Boolean()))) }
	case parquet.Int32:
		return func(b []byte, v parquet.Value) []byte { return strconv.AppendInt(b, int64(v.Int32()), 10) }
	case parquet.Int64:
		return func(b []byte, v parquet.Value) []byte { return strconv.AppendInt(b, v.Int64(), 10) }
	case parquet.Float:
		return func(b []byte, v parquet.Value) []byte { return strconv.AppendFloat(b, float64(v.Float()), 'g', -1, 32) }
	case parquet.Double:
		return func(b []byte, v parquet.Value) []byte { return strconv.AppendFloat(b, v.Double(), 'g', -1, 64) }
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return func(b []byte, v parquet.Value) []byte { return append(b, v.ByteArray()...) }
	}
	return nil
}

// appendDecimal appends the unscaled integer of a DECIMAL value: an INT32, an INT64,
// or a big-endian two's complement byte array.
func appendDecimal(dst []byte, v parquet.Value) []byte {
	switch v.Kind() {
	case parquet.Int32:
		return strconv.AppendInt(dst, int64(v.Int32()), 10)
	case parquet.Int64:
		return strconv.AppendInt(dst, v.Int64(), 10)
	}
	b := v.ByteArray()
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x.Append(dst, 10)
}
