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
	_, e := math.Frexp(x) // |x| = f·2^e, f ∈ [½, 1), 53-bit significand
	// x/2^k = f·2^(e−k): below 2⁵² if e − k ≤ 52; exact (no subnormal
	// rounding) if its lowest significand bit, of weight 2^(e−k−53), is at
	// least 2^−1074.
	if e-k > 52 || e-k-53 < -1074 {
		return 0, false
	}
	// math.Round rounds half away from zero, latticeIndex's rule.
	return int64(math.Round(math.Ldexp(x, -k))), true
}

// latticeValueFast returns latticeValue(n, k) for |n| ≤ 2⁵³ and
// −1074 ≤ k ≤ 970, where n·2^k is a float64 exactly; otherwise false.
func latticeValueFast(n int64, k int) (float64, bool) {
	if n < -1<<53 || n > 1<<53 || k < -1074 || k > 970 {
		return 0, false
	}
	return math.Ldexp(float64(n), k), true
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
