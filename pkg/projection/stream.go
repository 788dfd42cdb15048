package projection

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/privbo/privbo/pkg/dp"
)

// WindowBytes bounds the bytes of a release's rows computed at once: a Stream holds two
// windows of Z (Project and ProjectGaussian compute through the same windows), never the
// whole of it.
const WindowBytes = 8 << 20

// windowBytes is WindowBytes, smaller only in the tests that cross windows.
var windowBytes = WindowBytes

// windowRows is the number of rows of an n×r release computed at once: a fixed
// function of n and r, never of the number of workers, so that a release drawn from
// seeded sources is the same however it is computed.
func windowRows(n, r int) int { return max(1, min(n, windowBytes/(8*r))) }

// product computes the rows of Z = s·(A − 1 meanᵀ)·B, plus the Gaussian noise of mech
// when it is set, for the row-major n×k matrix A and k×r matrix B, one window of rows
// at a time. Each window is split into row partitions (numParts) computed on up to
// GOMAXPROCS goroutines; partition p of every window draws its noise from the same
// source noise(p), in window order, so the result does not depend on scheduling.
type product struct {
	ctx   context.Context
	a     []float64
	mean  []float64 // nil: A is used as it is
	n, k  int
	b     []float64
	r     int
	scale float64 // applied after the product (1: none)
	mech  *dp.VectorGaussian
	noise func(part int) *dp.Source

	srcs [maxParts]*dp.Source // noise(p), drawn at first use
	bufs [maxParts][]float64  // a block of centred rows per partition
}

// fill sets dst, row-major (hi−lo)×r, to rows [lo, hi) of Z. Windows must be filled in
// order for the noise to be the documented function of its sources.
func (p *product) fill(dst []float64, lo, hi int) error {
	rows := hi - lo
	return forEachPart(rows, numParts(rows), func(part, plo, phi int) error {
		var buf []float64
		if p.mean != nil {
			if p.bufs[part] == nil {
				p.bufs[part] = make([]float64, blockRows*p.k)
			}
			buf = p.bufs[part]
		}
		for s := plo; s < phi; s += blockRows {
			if err := p.ctx.Err(); err != nil {
				return err
			}
			e := min(s+blockRows, phi)
			a := p.a[(lo+s)*p.k : (lo+e)*p.k]
			if p.mean != nil {
				centreRows(buf, p.a, p.mean, lo+s, lo+e, p.k)
				a = buf[:(e-s)*p.k]
			}
			gemmRows(dst[s*p.r:e*p.r], a, p.b, e-s, p.k, p.r)
		}
		z := dst[plo*p.r : phi*p.r]
		if p.scale != 1 {
			for i := range z {
				z[i] *= p.scale
			}
		}
		if err := checkFinite(z); err != nil {
			return err
		}
		if p.mech == nil {
			return nil
		}
		if p.srcs[part] == nil {
			p.srcs[part] = p.noise(part)
		}
		if err := p.mech.AddNoise(p.srcs[part], z); err != nil {
			return fmt.Errorf("projection: %w", err)
		}
		return nil
	})
}

// Stream is a release computed while it is read: Read returns the n×r matrix Z in
// package matrixio's format (row-major, little-endian IEEE-754 binary64), computing
// WindowBytes of it at a time, the next window while the last is read, so that storing
// or sending a release needs memory for two windows rather than for all of Z
// (MemoryNeed states how much). The bytes are those
// of the matching in-memory call (Project, ProjectGaussian) with the same sources.
//
// Read uses the context the Stream was made with and returns its error when it is
// cancelled. An error ends the stream; the bytes read before it are not a release and
// must be discarded. The projection matrix (and everything derived from it) is cleared
// when the stream ends (io.EOF, an error, or Close). A Stream is not safe for
// concurrent use.
type Stream struct {
	p       *product
	rep     Report
	win     []float64  // the window being read
	spare   []float64  // the window computed ahead
	ahead   chan error // the computation of spare's rows [next, aheadHi); nil if none
	aheadHi int
	vals    []float64 // values of the current window not yet read
	partial [8]byte   // a value read in part
	pending int       // its bytes not yet read (at the end of partial)
	next    int       // first row not yet read into win
	err     error     // sticky; io.EOF at the end
}

var errClosed = errors.New("projection: stream closed")

func newStream(p *product, rep Report) *Stream {
	return &Stream{p: p, rep: rep}
}

// Report describes the release for the curator's operator (see Report); it is known
// before the first Read.
func (s *Stream) Report() Report { return s.rep }

// Size is the number of bytes of the whole stream, 8·n·r.
func (s *Stream) Size() int64 { return 8 * int64(s.p.n) * int64(s.p.r) }

// Read reads the next bytes of Z.
func (s *Stream) Read(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if s.pending > 0 {
			c := copy(b, s.partial[8-s.pending:])
			s.pending -= c
			b, n = b[c:], n+c
			continue
		}
		if len(s.vals) == 0 {
			if s.err != nil {
				break
			}
			if err := s.compute(); err != nil {
				s.finish(err)
				break
			}
		}
		k := min(len(b)/8, len(s.vals))
		if k == 0 { // fewer than 8 bytes asked for
			binary.LittleEndian.PutUint64(s.partial[:], math.Float64bits(s.vals[0]))
			s.vals, s.pending = s.vals[1:], 8
			continue
		}
		for i, v := range s.vals[:k] {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		}
		s.vals = s.vals[k:]
		b, n = b[8*k:], n+8*k
	}
	if n == 0 && s.err != nil {
		return 0, s.err
	}
	return n, nil
}

// compute makes the next window current, or returns io.EOF after the last. The window
// after it is computed meanwhile, on its own goroutine, so that the rows are projected
// and noised while the reader hashes, stores or sends the previous ones; windows are
// still filled one at a time and in order.
func (s *Stream) compute() error {
	if s.ahead == nil {
		if s.next == s.p.n {
			return io.EOF
		}
		s.computeAhead()
	}
	err := <-s.ahead
	s.ahead = nil
	if err != nil {
		return err
	}
	s.win, s.spare = s.spare, s.win
	s.vals = s.win[:(s.aheadHi-s.next)*s.p.r]
	s.next = s.aheadHi
	if s.next < s.p.n {
		s.computeAhead()
	}
	return nil
}

// computeAhead starts filling spare with the window that follows the current one.
func (s *Stream) computeAhead() {
	p := s.p
	rows := windowRows(p.n, p.r)
	if s.spare == nil {
		s.spare = make([]float64, rows*p.r)
	}
	lo, hi := s.next, min(s.next+rows, p.n)
	w, done := s.spare[:(hi-lo)*p.r], make(chan error, 1)
	s.ahead, s.aheadHi = done, hi
	go func() { done <- p.fill(w, lo, hi) }()
}

// finish ends the stream with err, clearing the projection matrix and letting go of the
// window and of the rows it projected.
func (s *Stream) finish(err error) {
	if s.err != nil {
		return
	}
	s.err = err
	if s.ahead != nil { // one window at most; a cancelled context stops it sooner
		<-s.ahead
		s.ahead = nil
	}
	clear(s.p.b)
	clear(s.win)
	clear(s.spare)
	s.p.b, s.p.a, s.win, s.spare, s.vals = nil, nil, nil, nil, nil
}

// Close ends the stream; reading after Close returns an error. It never fails.
func (s *Stream) Close() error {
	s.finish(errClosed)
	return nil
}

// all computes the whole of Z into one slice, window by window (the in-memory calls).
func (s *Stream) all() ([]float64, error) {
	defer s.Close()
	p := s.p
	z := make([]float64, p.n*p.r)
	rows := windowRows(p.n, p.r)
	for lo := 0; lo < p.n; lo += rows {
		hi := min(lo+rows, p.n)
		if err := p.fill(z[lo*p.r:hi*p.r], lo, hi); err != nil {
			return nil, err
		}
	}
	return z, nil
}

// MemoryNeed returns an upper bound, in bytes, on the memory that ProjectStream
// (mechanism MechanismLifted) or ProjectGaussianStream (MechanismGaussian) allocate for
// an n×r release of d features, from the call to the end of the stream — besides x
// itself and whatever the reader of the stream keeps. It depends on public quantities
// only, so a curator can admit a release before touching the data:
//
//   - two windows of Z (WindowBytes each, or all of Z when smaller: the one being read
//     and the one computed meanwhile) and a block of centred rows per row partition;
//   - M and the matrices derived from it: d×r matrices, and q×q ones with q = max(d, r)
//     (the orthonormal factor of M's QR factorisation, the Gram matrix and its
//     eigenvectors);
//   - for the lifted mechanism, the SVD route's copies of the n×d data (the centred
//     copy, LAPACK's working copy, U and its copy; about 5·n·d values measured), which
//     the data decides whether it takes, so it is always counted;
//   - 1 MiB for the rest (column means, noise sources, goroutines).
//
// TestMemoryNeed checks the bound against the bytes actually allocated.
//
// It is Mechanism.MemoryNeed for the mechanism of that name; an unknown name is
// counted as the lifted mechanism, the larger bound.
func MemoryNeed(n, d, r int, mechanism string) int64 {
	if m, err := ParseMechanism(mechanism); err == nil {
		return m.MemoryNeed(n, d, r)
	}
	return memoryNeed(n, d, r, true)
}

// memoryNeed is MemoryNeed with or without the SVD route's copies of the data.
func memoryNeed(n, d, r int, svd bool) int64 {
	n64, d64, r64 := int64(n), int64(d), int64(r)
	q := max(d64, r64)
	floats := 2*int64(windowRows(n, r))*r64 + maxParts*blockRows*d64 + 8*d64*r64 + 4*q*q
	if svd {
		floats += 6 * n64 * min(n64, d64)
	}
	return 8*floats + 1<<20
}
