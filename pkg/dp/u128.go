package dp

import (
	"math/big"
	"math/bits"
)

// u128 is an unsigned 128-bit integer hi·2⁶⁴ + lo: the machine-word
// arithmetic of the samplers' fast paths (math/bits 128-bit products and
// divisions). Every operation that could overflow reports it, and the caller
// then redoes that step with math/big, drawing the same random bits.
type u128 struct{ hi, lo uint64 }

func u64(x uint64) u128 { return u128{lo: x} }

func (a u128) isZero() bool { return a.hi|a.lo == 0 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) bitLen() int {
	if a.hi != 0 {
		return 64 + bits.Len64(a.hi)
	}
	return bits.Len64(a.lo)
}

// add returns a + b and whether it overflowed 128 bits.
func (a u128) add(b u128) (u128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}, c != 0
}

// sub returns a − b for a ≥ b.
func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return u128{hi, lo}
}

// absDiff returns |a − b|.
func (a u128) absDiff(b u128) u128 {
	if a.less(b) {
		return b.sub(a)
	}
	return a.sub(b)
}

// mul64 returns a·m and whether it overflowed 128 bits.
func (a u128) mul64(m uint64) (u128, bool) {
	h1, l1 := bits.Mul64(a.lo, m)
	h2, l2 := bits.Mul64(a.hi, m)
	hi, c := bits.Add64(l2, h1, 0)
	return u128{hi, l1}, h2 != 0 || c != 0
}

// div64 returns ⌊a/d⌋ for d ≥ 1.
func (a u128) div64(d uint64) u128 {
	qhi, r := a.hi/d, a.hi%d
	qlo, _ := bits.Div64(r, a.lo, d) // r < d: no overflow
	return u128{qhi, qlo}
}

// divMod returns ⌊a/b⌋ and a mod b for b ≥ 1 (Warren, Hacker's Delight,
// 2nd ed., 2012, §9-5, "udivti3": for b ≥ 2⁶⁴ one 128/64 division by b's
// normalised top word gives the quotient or one more, and one exact
// correction step fixes it).
func (a u128) divMod(b u128) (q, r u128) {
	if b.hi == 0 {
		qhi, rhi := a.hi/b.lo, a.hi%b.lo
		qlo, rem := bits.Div64(rhi, a.lo, b.lo) // rhi < b.lo: no overflow
		return u128{qhi, qlo}, u64(rem)
	}
	n := uint(bits.LeadingZeros64(b.hi))
	b1 := b.hi<<n | b.lo>>(64-n) // b's top 64 bits (a shift by 64 gives 0 in Go)
	// a >> 1 has a top word below 2⁶³ ≤ b1: no overflow.
	t, _ := bits.Div64(a.hi>>1, a.hi<<63|a.lo>>1, b1)
	t >>= 63 - n
	if t != 0 {
		t--
	}
	p, _ := b.mul64(t) // t·b ≤ a
	r = a.sub(p)
	if !r.less(b) {
		t++
		r = r.sub(b)
	}
	return u64(t), r
}

// shl returns a·2^k for 0 < k < 64, dropping bits beyond 2¹²⁸.
func (a u128) shl(k uint) u128 {
	return u128{a.hi<<k | a.lo>>(64-k), a.lo << k}
}

// sq64 returns x² as a u128 (never overflows).
func sq64(x uint64) u128 {
	hi, lo := bits.Mul64(x, x)
	return u128{hi, lo}
}

// toBig sets z to a and returns z.
func (a u128) toBig(z *big.Int) *big.Int {
	if a.hi == 0 {
		return z.SetUint64(a.lo)
	}
	z.SetUint64(a.hi)
	z.Lsh(z, 64)
	return z.Or(z, new(big.Int).SetUint64(a.lo))
}

// u128FromBig returns x as a u128 if 0 ≤ x < 2¹²⁸.
func u128FromBig(x *big.Int) (u128, bool) {
	if x.Sign() < 0 || x.BitLen() > 128 {
		return u128{}, false
	}
	if x.IsUint64() {
		return u64(x.Uint64()), true
	}
	var w [2]big.Word
	ws := x.Bits()
	if bits.UintSize == 64 {
		copy(w[:], ws)
		return u128{uint64(w[1]), uint64(w[0])}, true
	}
	lo := new(big.Int).And(x, maxU64Big).Uint64()
	hi := new(big.Int).Rsh(x, 64).Uint64()
	return u128{hi, lo}, true
}

var maxU64Big = new(big.Int).SetUint64(^uint64(0))

// cellVersus compares a uniform U ∈ [0, 1), of which the first 64 bits
// w are known (U ∈ [w/2⁶⁴, (w+1)/2⁶⁴)), with p = num/den, 0 < num < den.
// It returns −1 if U < p whatever the later bits, +1 if U ≥ p whatever they
// are, and 0 if the cell contains p (then later bits decide). It compares
// w·den with num·2⁶⁴ and (w+1)·den with num·2⁶⁴ exactly, in three words.
func cellVersus(w uint64, num, den u128) int {
	if den.hi == 0 {
		// num < den < 2⁶⁴: w·den = (h, l) against (num.lo, 0).
		h, l := bits.Mul64(w, den.lo)
		if h >= num.lo {
			return 1
		}
		l2, c := bits.Add64(l, den.lo, 0)
		h2 := h + c
		if h2 < num.lo || (h2 == num.lo && l2 == 0) {
			return -1
		}
		return 0
	}
	h1, p0 := bits.Mul64(w, den.lo)
	h2, l2 := bits.Mul64(w, den.hi)
	p1, c := bits.Add64(l2, h1, 0)
	p2 := h2 + c
	// (p2, p1, p0) = w·den against (num.hi, num.lo, 0).
	if p2 > num.hi || (p2 == num.hi && p1 >= num.lo) {
		return 1
	}
	q0, c := bits.Add64(p0, den.lo, 0)
	q1, c := bits.Add64(p1, den.hi, c)
	q2 := p2 + c
	if q2 < num.hi || (q2 == num.hi && (q1 < num.lo || (q1 == num.lo && q0 == 0))) {
		return -1
	}
	return 0
}
