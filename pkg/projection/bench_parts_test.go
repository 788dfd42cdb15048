package projection

import (
	"context"
	"math/big"
	"strconv"
	"sync"
	"testing"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/dp"
)

// BenchmarkReleaseParts times the curator's side of a fresh 10⁶ × 20 release from
// d = 10 features (ε = 2, δ = 1e-7, the loopback benchmark's) and its parts, for the
// target "a Gaussian release costs at most the lifted release plus its sampling plus
// 0.3 s" (issue 32): "lifted" and "gaussian" stream the release into a blob.Dir (the
// curator's store: SHA-256, write, fsync), "sampler" draws the 2·10⁷ discrete Gaussian
// values alone on two goroutines, at σ² = 2⁶⁸ lattice steps² (this release's is
// 2^68.3). Run the three back to back and compare gaussian with lifted + sampler.
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
		for b.Loop() {
			s, err := ProjectStream(context.Background(), x, n, d, p, SecureSource())
			put(b, s, err)
		}
	})
	b.Run("gaussian", func(b *testing.B) {
		for b.Loop() {
			s, err := ProjectGaussianStream(context.Background(), x, n, d, p, SecureSource(), CryptoNoise)
			put(b, s, err)
		}
	})
	b.Run("sampler", func(b *testing.B) {
		g, err := dp.NewDiscreteGaussianSampler(new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 68)))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					src, buf := dp.CryptoSource(), make([]int64, 250)
					for i := 0; i < n*r/2; i += len(buf) {
						if err := g.Int64s(src, buf); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
	})
}
