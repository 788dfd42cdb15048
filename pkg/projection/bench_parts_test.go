package projection

import (
	"context"
	"math/big"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/dp"
)

// BenchmarkReleaseParts times the curator's side of a fresh 10⁶ × 20 release from
// d = 10 features (ε = 2, δ = 1e-7, the loopback benchmark's) and its parts, for the
// target "a Gaussian release costs at most the lifted release plus its sampling plus
// 0.3 s" (issue 32): "lifted" and "gaussian" stream the release into a blob.Dir (the
// curator's store: SHA-256, write, fsync); "sampler" draws the release's own 2·10⁷
// noise values alone, on two goroutines: the mechanism the release calibrates (its σ²
// of about 2^68.3 lattice steps², its lattice) adding them to zeros; "sampler-2^68"
// draws as many at σ² = 2⁶⁸, the figure quoted in the issue, which is about a quarter
// cheaper (a power of two makes the sampler's Laplace scale an integer). Run them
// back to back and compare gaussian with lifted + sampler. cpu-s/op is the process's
// CPU time per release, steadier than wall time on a loaded machine.
func BenchmarkReleaseParts(b *testing.B) {
	const n, d, r = 1_000_000, 10, 20
	x := gaussianData(1, n, d, 1)
	p := Params{R: r, Epsilon: 2, Delta: 1e-7}
	store, err := blob.OpenDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	k := 0
	put := func(b *testing.B, s *Stream, err error) {
		if err != nil {
			b.Fatal(err)
		}
		k++
		name := "release-" + strconv.Itoa(k)
		if _, err := store.Put(context.Background(), name, s); err != nil {
			b.Fatal(err)
		}
		if err := store.Delete(context.Background(), name); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("lifted", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			s, err := ProjectStream(context.Background(), x, n, d, p, SecureSource())
			put(b, s, err)
		}
	})
	b.Run("gaussian", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			s, err := ProjectGaussianStream(context.Background(), x, n, d, p, SecureSource(), CryptoNoise)
			put(b, s, err)
		}
	})
	b.Run("sampler", func(b *testing.B) {
		s, err := ProjectGaussianStream(context.Background(), x, n, d, p, SecureSource(), CryptoNoise)
		if err != nil {
			b.Fatal(err)
		}
		mech := s.Report().Noise
		s.Close()
		defer reportCPU(b)()
		for b.Loop() {
			drawHalves(b, n*r, func() func(*dp.Source) error {
				buf := make([]float64, drawBatch)
				return func(src *dp.Source) error { clear(buf); return mech.AddNoise(src, buf) }
			})
		}
	})
	b.Run("sampler-2^68", func(b *testing.B) {
		g, err := dp.NewDiscreteGaussianSampler(new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 68)))
		if err != nil {
			b.Fatal(err)
		}
		defer reportCPU(b)()
		for b.Loop() {
			drawHalves(b, n*r, func() func(*dp.Source) error {
				buf := make([]int64, drawBatch)
				return func(src *dp.Source) error { return g.Int64s(src, buf) }
			})
		}
	})
}

const drawBatch = 250

// drawHalves draws count values drawBatch at a time on two goroutines, each with its
// own crypto source and its own draw function from newDraw.
func drawHalves(b *testing.B, count int, newDraw func() func(*dp.Source) error) {
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			src, draw := dp.CryptoSource(), newDraw()
			for i := 0; i < count/2; i += drawBatch {
				if err := draw(src); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// reportCPU starts counting the process's CPU time (user and system); the function it
// returns reports it per iteration as cpu-s/op.
func reportCPU(b *testing.B) func() {
	start := cpuSeconds(b)
	return func() { b.ReportMetric((cpuSeconds(b)-start)/float64(b.N), "cpu-s/op") }
}

func cpuSeconds(b *testing.B) float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}
