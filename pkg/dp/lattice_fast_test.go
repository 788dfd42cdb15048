package dp

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestFastLatticeMatchesBig checks latticeIndexFast and latticeValueFast
// against the exact math/big latticeIndex and latticeValue wherever the fast
// ones answer, on values across the float64 range (subnormals, ties, huge
// exponents), and that they answer in the common case.
func TestFastLatticeMatchesBig(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{'l', 'a', 't'}))
	answered := 0
	check := func(x float64, k int) {
		want := latticeIndex(x, k)
		if n, ok := latticeIndexFast(x, k); ok {
			answered++
			if !want.IsInt64() || want.Int64() != n {
				t.Fatalf("latticeIndexFast(%g, %d) = %d, latticeIndex = %v", x, k, n, want)
			}
		}
		for _, n := range []int64{want.Int64(), 1<<53 - 1, -1 << 53, 1<<53 + 1, 3} {
			if v, ok := latticeValueFast(n, k); ok {
				if w := latticeValue(big.NewInt(n), k); v != w || math.Signbit(v) != math.Signbit(w) {
					t.Fatalf("latticeValueFast(%d, %d) = %g, latticeValue = %g", n, k, v, w)
				}
			}
		}
	}
	for range 20000 {
		k := rng.IntN(2200) - 1100
		var x float64
		switch rng.IntN(4) {
		case 0: // near the lattice scale, including exact ties
			x = math.Ldexp(float64(rng.Int64N(1<<20))+0.5*float64(rng.IntN(2)), k)
		case 1: // a float of any exponent
			x = math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(2047))<<52)
		case 2: // subnormal
			x = math.Float64frombits(rng.Uint64() & (1<<52 - 1))
		default: // the release case: x/2^k about 2^30
			x = math.Ldexp(rng.NormFloat64(), k+30)
		}
		if math.IsInf(x, 0) {
			continue
		}
		if rng.IntN(2) == 0 {
			x = -x
		}
		check(x, k)
	}
	if answered < 5000 {
		t.Errorf("latticeIndexFast answered only %d of 20000 cases", answered)
	}
	// The common case must take the fast path.
	if _, ok := latticeIndexFast(3.25, -40); !ok {
		t.Error("latticeIndexFast(3.25, -40) fell back to math/big")
	}
}

// TestAddNoiseMatchesReference checks VectorGaussian.AddNoise against the
// plain reference — latticeIndex, the math/big discrete Gaussian,
// latticeValue — on identical streams.
func TestAddNoiseMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		eps, delta, sens float64
		m                int
	}{
		{1, 1e-5, 2.2, 2_000_000},
		{0.5, 1e-6, 1e-3, 10},
		{3, 1e-5, 1e6, 1000},
		{1, 1e-5, 1e12, 10}, // a lattice step above 1
	} {
		g, err := NewVectorGaussian(tc.eps, tc.delta, tc.sens, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, 300)
		rng := rand.New(rand.NewChaCha8([32]byte{'x'}))
		for i := range x {
			x[i] = 5 * rng.NormFloat64() * tc.sens
		}
		x[0], x[1], x[2] = 0, math.Ldexp(1, g.k-1), -math.Ldexp(3, g.k-1) // zero and ties
		x[3], x[4] = 5e-324, -math.Copysign(0, 1)                         // subnormal, −0
		limit := math.Ldexp(1, 52+g.k)                                    // the word path's bound
		x[5], x[6], x[7] = math.Nextafter(limit, 0), limit, -1e300
		got := append([]float64(nil), x...)
		if err := g.AddNoise(newSource(rand.NewChaCha8([32]byte{1})), got); err != nil {
			t.Fatal(err)
		}
		ref := newSource(rand.NewChaCha8([32]byte{1}))
		p := newDGParams(g.sigma2.Num(), g.sigma2.Denom())
		for i, v := range x {
			z, err := ref.dgBigLocked(p)
			if err != nil {
				t.Fatal(err)
			}
			n := latticeIndex(v, g.k)
			if want := latticeValue(n.Add(n, z), g.k); got[i] != want {
				t.Fatalf("AddNoise(ε=%g, Δ=%g)[%d] = %g, reference %g", tc.eps, tc.sens, i, got[i], want)
			}
		}
	}
}
