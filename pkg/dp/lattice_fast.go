package dp

import (
	"math"
	"math/big"
)

// Word-size versions of latticeIndex and latticeValue for the common case,
// exact and equal to the math/big versions wherever they answer (checked by
// TestFastLatticeMatchesBig).

// latticeIndexFast returns latticeIndex(x, k) as an int64 and true when
// x/2^k is computed exactly in float64 and |x/2^k| < 2⁵²; otherwise false.
func latticeIndexFast(x float64, k int) (int64, bool) {
	if x == 0 {
		return 0, true
	}
	// |x| = f·2^e, f ∈ [½, 1), 53-bit significand: e from the exponent bits
	// (math.Frexp's e for normal x), math.Frexp for subnormals.
	e := int(math.Float64bits(x)>>52&0x7ff) - 1022
	if e == -1022 {
		_, e = math.Frexp(x)
	}
	// x/2^k = f·2^(e−k): below 2⁵² if e − k ≤ 52; exact (no subnormal
	// rounding) if its lowest significand bit, of weight 2^(e−k−53), is at
	// least 2^−1074.
	if e-k > 52 || e-k-53 < -1074 {
		return 0, false
	}
	// math.Round rounds half away from zero, latticeIndex's rule. x·2^−k is a
	// float64, so the product is exact and equals math.Ldexp(x, −k).
	if s, ok := pow2(-k); ok {
		return int64(math.Round(x * s)), true
	}
	return int64(math.Round(math.Ldexp(x, -k))), true
}

// latticeValueFast returns latticeValue(n, k) for |n| ≤ 2⁵³ and
// −1074 ≤ k ≤ 970, where n·2^k is a float64 exactly; otherwise false.
func latticeValueFast(n int64, k int) (float64, bool) {
	if n < -1<<53 || n > 1<<53 || k < -1074 || k > 970 {
		return 0, false
	}
	if s, ok := pow2(k); ok {
		return float64(n) * s, true // n·2^k is a float64: the product is exact
	}
	return math.Ldexp(float64(n), k), true
}

// pow2 returns 2^e, a normal float64, for −1022 ≤ e ≤ 1023; otherwise false.
// Multiplying by it is math.Ldexp without its branches wherever the exact
// result is a float64.
func pow2(e int) (float64, bool) {
	if e < -1022 || e > 1023 {
		return 0, false
	}
	return math.Float64frombits(uint64(e+1023) << 52), true
}

// addLatticeGaussianLocked replaces every x[j] by the float64 nearest to
// 2^k·(round(x[j]/2^k) + Y_j), Y_j i.i.d. discrete Gaussian with parameters p:
// the loop of VectorGaussian.AddNoise. Entries must be finite.
func (s *Source) addLatticeGaussianLocked(p *dgParams, x []float64, k int) error {
	for j, v := range x {
		z, zb, err := s.dgInt64Locked(p)
		if err != nil {
			return err
		}
		if zb == nil {
			if n, ok := latticeIndexFast(v, k); ok {
				if r, ok := latticeValueFast(n+z, k); ok { // n+z may wrap when |z| nears 2⁶³, but a wrapped value lies outside ±2⁵³ and is refused
					x[j] = r
					continue
				}
			}
			zb = big.NewInt(z)
		}
		n := latticeIndex(v, k)
		x[j] = latticeValue(n.Add(n, zb), k)
	}
	return nil
}
