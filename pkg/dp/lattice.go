package dp

import (
	"math"
	"math/big"
)

// RoundToLattice returns the point of the lattice 2^k·ℤ nearest to x, ties
// rounded away from zero (the rule of math.Round applied to x/2^k). The
// computation is exact (math/big), so the only rounding is the one asked for,
// and |RoundToLattice(x, k) − x| ≤ 2^(k−1). NaN and ±Inf are returned
// unchanged; a result beyond the float64 range is ±Inf.
//
// Examples (OpenDP's test vectors): −3 on 2²ℤ → −4, −1 → 0 (−0.25 → 0),
// 2 → 4 (a tie, 0.5 → 1), 0.125 on 2⁻²ℤ → 0.25 (a tie), −100.23 → −100.25.
// Ties away from zero and ties towards +∞ both give these five values;
// ties to even does not (2 → 0). The two rules differ only on negative ties
// (−2 on 2²ℤ: −4 here, 0 with ties towards +∞). Either way the rounding
// error is at most half a lattice step, and the mechanisms account for a
// full step 2^k in their sensitivity.
func RoundToLattice(x float64, k int) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return x
	case k > 1025: // |x| < 2^1024 < 2^(k−1): nearest lattice point is 0.
		return 0
	case k < -1074: // every float64 is a multiple of 2^−1074.
		return x
	}
	return latticeValue(latticeIndex(x, k), k)
}

// latticeIndex returns the integer n with n·2^k = RoundToLattice(x, k), x finite.
func latticeIndex(x float64, k int) *big.Int {
	f := new(big.Float).SetFloat64(x) // exact: big.Float takes the 53-bit mantissa
	f.SetMantExp(f, -k)               // x/2^k, exact (big.Float exponents are 32-bit)
	n, _ := f.Int(nil)                // truncated towards zero
	frac := new(big.Float).Sub(f, new(big.Float).SetInt(n))
	frac.Abs(frac)
	if frac.Cmp(big.NewFloat(0.5)) >= 0 {
		if x < 0 {
			n.Sub(n, bigOne)
		} else {
			n.Add(n, bigOne)
		}
	}
	return n
}

// latticeValue returns n·2^k rounded to the nearest float64 (±Inf beyond range).
func latticeValue(n *big.Int, k int) float64 {
	f := new(big.Float).SetInt(n)
	f.SetMantExp(f, k)
	v, _ := f.Float64()
	return v
}

// Clamp returns x limited to [lo, hi]: lo if x < lo, hi if x > hi, x otherwise
// (NaN stays NaN, so that a mechanism rejects it instead of releasing a bound).
// It panics if lo > hi or either bound is NaN, which can only be a
// programming error.
func Clamp(x, lo, hi float64) float64 {
	if !(lo <= hi) {
		panic("dp: Clamp with lo > hi or a NaN bound")
	}
	switch {
	case x < lo:
		return lo
	case x > hi:
		return hi
	}
	return x
}
