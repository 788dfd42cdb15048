package projection

import (
	"context"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/matrixio"
)

// oddReader reads from r a few bytes at a time (7, 13, 8, 1, 4096, …), so that values
// are split across reads.
type oddReader struct {
	r io.Reader
	k int
}

func (o *oddReader) Read(p []byte) (int, error) {
	sizes := []int{7, 13, 8, 1, 4096, 3}
	o.k++
	return o.r.Read(p[:min(len(p), sizes[o.k%len(sizes)])])
}

// TestStreamBytes checks that a Stream's bytes, read whole or a few bytes at a time,
// are the in-memory release of the same sources in matrixio's format, over releases of
// several windows (windows of 16 KiB and r = 8: 256 rows per window; n = 513 makes two
// whole windows and a last one of one row) and of one, for both mechanisms and both of
// the lifted mechanism's routes. The windows are small so that crossing them costs
// little under the race detector; their size enters only windowRows.
func TestStreamBytes(t *testing.T) {
	setWindowBytes(t, 16<<10)
	const d = 5
	tests := []struct {
		name    string
		n, r    int
		lifted  bool
		rankDef bool // a repeated column: the lifted mechanism takes the SVD route
		route   string
	}{
		{"gaussian, 3 windows", 513, 8, false, false, "product"},
		{"gaussian, 1 window", 300, 3, false, false, "product"},
		{"lifted gram, 3 windows", 513, 8, true, false, RouteGram},
		{"lifted svd, 3 windows", 513, 8, true, true, RouteSVD},
		{"lifted gram, 1 window", 300, 4, true, false, RouteGram},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := windowRows(tt.n, tt.r); strings.HasSuffix(tt.name, "3 windows") != ((tt.n+w-1)/w == 3) {
				t.Fatalf("n=%d r=%d stream %d windows of %d rows; the case's name says otherwise", tt.n, tt.r, (tt.n+w-1)/w, w)
			}
			x := gaussianData(7, tt.n, d, 1)
			if tt.rankDef {
				for i := range tt.n {
					x[i*d+1] = x[i*d]
				}
			}
			p := Params{R: tt.r, Epsilon: 1, Delta: 1e-6}
			open := func() *Stream {
				var s *Stream
				var err error
				if tt.lifted {
					s, err = ProjectStream(context.Background(), x, tt.n, d, p, SeededSource(3))
				} else {
					s, err = ProjectGaussianStream(context.Background(), x, tt.n, d, p, SeededSource(3), seededNoise(5))
				}
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			var want []float64
			var err error
			if tt.lifted {
				want, _, err = Project(context.Background(), x, tt.n, d, p, SeededSource(3))
			} else {
				want, _, err = ProjectGaussian(context.Background(), x, tt.n, d, p, SeededSource(3), seededNoise(5))
			}
			if err != nil {
				t.Fatal(err)
			}
			wantBytes := matrixio.AppendFloat64s(nil, want)
			for _, odd := range []bool{false, true} {
				s := open()
				if got := s.Report().Route; got != tt.route {
					t.Errorf("Report().Route = %q, want %q", got, tt.route)
				}
				if s.Size() != int64(len(wantBytes)) {
					t.Errorf("Size() = %d, want %d", s.Size(), len(wantBytes))
				}
				var r io.Reader = s
				if odd {
					r = &oddReader{r: s}
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("reading the stream (odd reads %v): %v", odd, err)
				}
				if string(got) != string(wantBytes) {
					t.Errorf("stream (odd reads %v): %d bytes differing from the in-memory release's %d", odd, len(got), len(wantBytes))
				}
				if n, err := s.Read(make([]byte, 8)); n != 0 || err != io.EOF {
					t.Errorf("Read after the end = %d, %v; want 0, EOF", n, err)
				}
			}
		})
	}
}

// TestStreamNoiseDiffersAcrossWindows checks that every window draws fresh noise: the
// sources of a window's partitions continue where the previous window left them (were
// they drawn again, seeded sources would repeat the same noise in every window).
func TestStreamNoiseDiffersAcrossWindows(t *testing.T) {
	setWindowBytes(t, 16<<10)
	const n, d, r = 600, 4, 8 // windows of 256 rows
	x := make([]float64, n*d) // all zero: Z is the noise alone
	z, _, err := ProjectGaussian(context.Background(), x, n, d, Params{R: r, Epsilon: 1, Delta: 1e-6}, SeededSource(1), seededNoise(2))
	if err != nil {
		t.Fatal(err)
	}
	rows := windowRows(n, r)
	same := 0
	for i := range rows * r {
		if z[i] == z[rows*r+i] {
			same++
		}
	}
	// The noise is on a lattice of step ≈ 2⁻²⁰σ: two independent draws are equal with
	// probability below 1e-5 each; allowing 1% keeps false failures out of reach.
	if same > rows*r/100 {
		t.Errorf("%d of %d entries of the second window equal the first's: the noise repeats", same, rows*r)
	}
	if windowRows(n, r) >= n {
		t.Fatalf("windowRows(%d, %d) = %d: the test needs several windows", n, r, windowRows(n, r))
	}
}

// TestMemoryNeed checks MemoryNeed against the bytes a streamed release actually
// allocates (runtime.MemStats.TotalAlloc, which counts every allocation and is never
// below the peak of live memory), over both mechanisms, both routes, r below and above
// d and n below d. The allocations are deterministic but for the noise sampler's rare
// big-integer draws, far below the 1 MiB of slack MemoryNeed adds.
//
// The releases of r = 1024 stream 20 windows, so that memory allocated anew for each
// window adds up past the bound: allocation is flat in the number of windows (25.9 MiB
// for 20 Gaussian windows, 25.3 MiB for 6; the lifted mechanism's 8.7 MiB for either),
// and the slack to MemoryNeed is 16 MiB (Gaussian) and 42 MiB (lifted), so a leak of
// 0.8 MiB (2.1 MiB) per window fails the test. It runs without the race detector, which
// made it take 41 s of CPU (internal/testrace).
func TestMemoryNeed(t *testing.T) {
	testrace.Statistical(t)
	const bigN = 20000
	tests := []struct {
		n, d, r int
		lifted  bool
		rankDef bool
	}{
		{20000, 10, 10, false, false},
		{bigN, 10, 1024, false, false},
		{20000, 100, 50, false, false},
		{20000, 10, 10, true, false},
		{bigN, 10, 1024, true, false},
		{20000, 10, 10, true, true},
		{20000, 40, 80, true, true},
		{50, 300, 80, true, false},
		{2, 1, 1, false, false},
	}
	for _, tt := range tests {
		x := gaussianData(1, tt.n, tt.d, 1)
		if tt.rankDef {
			for i := range tt.n {
				x[i*tt.d+1] = x[i*tt.d]
			}
		}
		p := Params{R: tt.r, Epsilon: 1, Delta: 1e-6}
		mech := MechanismGaussian
		if tt.lifted {
			mech = MechanismLifted
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var s *Stream
		var err error
		if tt.lifted {
			s, err = ProjectStream(context.Background(), x, tt.n, tt.d, p, SeededSource(1))
		} else {
			s, err = ProjectGaussianStream(context.Background(), x, tt.n, tt.d, p, SeededSource(1), CryptoNoise)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, s); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		need := MemoryNeed(tt.n, tt.d, tt.r, mech)
		if alloc > need {
			t.Errorf("n=%d d=%d r=%d %s (%s): allocated %d bytes, MemoryNeed = %d", tt.n, tt.d, tt.r, mech, s.Report().Route, alloc, need)
		}
		// The bound is not far off where it counts, for the Gaussian mechanism's large
		// releases: they allocate at least a third of it.
		if !tt.lifted && tt.n*tt.r >= 1<<20 && need > 3*alloc+1<<20 {
			t.Errorf("n=%d d=%d r=%d %s: allocated %d bytes, MemoryNeed = %d is more than 3 times as much", tt.n, tt.d, tt.r, mech, alloc, need)
		}
	}
}

// TestStreamErrors: a cancelled context stops the stream with its error, a product that
// overflows is refused by Read without naming a value, and Close ends the stream.
func TestStreamErrors(t *testing.T) {
	const n, d, r = 3000, 3, 1024
	x := gaussianData(2, n, d, 1)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := ProjectGaussianStream(ctx, x, n, d, Params{R: r, Epsilon: 1, Delta: 1e-6}, SeededSource(1), seededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, s); !errors.Is(err, context.Canceled) {
		t.Errorf("reading after cancel: %v, want context.Canceled", err)
	}

	// Rows of the third window alternate between ±MaxFloat64/2 in every column: their
	// sums cancel (the column means are finite), their products with M overflow.
	big := gaussianData(2, n, d, 1)
	for i := 2048; i < n; i++ {
		for j := range d {
			big[i*d+j] = math.MaxFloat64 / 2 * float64(1-2*(i%2))
		}
	}
	s, err = ProjectGaussianStream(context.Background(), big, n, d, Params{R: r, Epsilon: 1, Delta: 1e-6}, SeededSource(1), seededNoise(1))
	if err != nil {
		t.Fatalf("ProjectGaussianStream refused data whose column means are finite: %v", err)
	}
	read, err := io.Copy(io.Discard, s)
	if err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("a product overflowing float64 was streamed: %d bytes, %v", read, err)
	}
	if read > 2048*r*8 {
		t.Errorf("%d bytes streamed, beyond the two windows before the overflow", read)
	}

	s, err = ProjectGaussianStream(context.Background(), x, n, d, Params{R: r, Epsilon: 1, Delta: 1e-6}, SeededSource(1), seededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n, err := s.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Errorf("Read after Close = %d, %v; want an error", n, err)
	}
}

// setWindowBytes makes the streams of t compute windows of b bytes; the package's
// tests do not run in parallel, so the change is seen by t alone.
func setWindowBytes(t *testing.T, b int) {
	old := windowBytes
	windowBytes = b
	t.Cleanup(func() { windowBytes = old })
}
