package dp

import (
	"encoding/binary"
	"errors"
	"math/big"
	"math/bits"
)

// Bernoulli(exp(−γ)) trials by comparison with exp(−j/32).
//
// CKS20 Algorithm 1 decides a trial Bernoulli(exp(−γ)) with a run of
// Bernoulli(γ/K) trials, about e^γ of them for γ ≤ 1 plus 1.7 for every
// unit of ⌊γ⌋: each one a 64-bit word and an unpredictable branch, which were
// most of the discrete Gaussian sampler's time. Here γ = num/den is split as
//
//	γ = J/32 + ρ,   J = ⌊32γ⌋,   ρ = (32·num − J·den)/(32·den) ∈ [0, 1/32),
//
// and exp(−γ) = exp(−J/32)·exp(−ρ) is decided by two independent trials:
//
//   - Bernoulli(exp(−j/32)): a uniform U ∈ [0, 1) against the irrational
//     number p = exp(−j/32), comparing U's first 64 bits w with
//     P₆₄ = ⌊2⁶⁴·p⌋ from a table (expTab). w < P₆₄ means U < p and w > P₆₄
//     means U > p, whatever U's later bits; only w = P₆₄ (probability 2⁻⁶⁴)
//     needs more: U's next words against the next bits of p, ⌊2^B·p⌋ for
//     B = 128, 192, … (expNegFloor), until they differ, which they do with
//     probability 1 because p is irrational (Lindemann 1882). So the
//     trial is exactly U < p. For J > 32·44 the trial is split into
//     Bernoulli(e⁻⁴⁴) trials and one from the table.
//   - Bernoulli(exp(−ρ)): CKS20 Algorithm 1 (bexpUnit128); with ρ < 1/32
//     its first trial, Bernoulli(ρ), ends it with probability above 31/32.
//
// ⌊2^B·exp(−j/32)⌋ is computed in integer arithmetic only: exp(−1/32) is
// enclosed by partial sums of its alternating Taylor series at precision
// 2^−(B+64), raised to the power j by squaring with outward rounding, and
// the enclosure is widened in precision until both ends have the same
// first B bits. No floating point takes part. The table is computed at
// package initialisation (1.5–2 ms; see buildExpTable) and checked against an
// independent big.Rat evaluation by TestExpTable.
//
// The word-size (bexp128) and math/big (bexpBig) versions split γ the same
// way and read the same words, so they stay interchangeable.

const (
	expTabShift = 5                            // table step 2⁻⁵
	expTabUnits = 44                           // the table covers exponents [0, 44]; e⁻⁴⁴ ≈ 2⁻⁶³·⁵
	expTabLen   = expTabUnits<<expTabShift + 1 // entries j = 0, …, 32·44
)

// expTab[j] = ⌊2⁶⁴·exp(−j/32)⌋ for 1 ≤ j < expTabLen (expTab[0] is unused:
// exp(0) = 1 needs no trial).
var expTab = buildExpTable()

// buildExpTable encloses 2^p·exp(−j/32) for j = 1, 2, … by multiplying the
// enclosure of exp(−1/32) into that of exp(−(j−1)/32) with outward rounding,
// rather than computing each entry afresh (expNegFloor), which took 8–10
// times as long at package initialisation. Each step widens the enclosure by
// under three units of 2^−p plus j times the base's width, far below 2^(p−64)
// at p = 192, so both ends share their first 64 bits except near a cell
// boundary; there expNegFloor decides.
func buildExpTable() *[expTabLen]uint64 {
	const p = 192
	var t [expTabLen]uint64
	bl, bh := expNegBounds(1, p)
	lo, hi := new(big.Int).Set(bl), new(big.Int).Set(bh)
	fl, fh := new(big.Int), new(big.Int)
	for j := 1; j < expTabLen; j++ {
		if j > 1 {
			mulFloor(lo, bl, p)
			mulCeil(hi, bh, p)
		}
		if fl.Rsh(lo, p-64).Cmp(fh.Rsh(hi, p-64)) == 0 {
			t[j] = fl.Uint64()
		} else {
			t[j] = expNegFloor(uint64(j), 64).Uint64()
		}
	}
	return &t
}

// expNegFloor returns ⌊2^b·exp(−j/32)⌋, j ≥ 1, exactly.
func expNegFloor(j uint64, b uint) *big.Int {
	for p := b + 64; ; p += 64 {
		lo, hi := expNegBounds(j, p)
		lo.Rsh(lo, p-b)
		hi.Rsh(hi, p-b)
		if lo.Cmp(hi) == 0 {
			return lo
		}
	}
}

// expNegBounds returns integers lo ≤ 2^p·exp(−j/32) ≤ hi.
func expNegBounds(j uint64, p uint) (lo, hi *big.Int) {
	// exp(−1/32) = Σ (−1)^k t_k, t_k = 1/(32^k·k!): the terms decrease, so
	// the partial sum S_N is within t_{N+1} of the value. Each term is
	// rounded outwards at 2^−p.
	one := new(big.Int).Lsh(bigOne, p)
	bl, bh := new(big.Int), new(big.Int)
	den := big.NewInt(1)
	fl, rem := new(big.Int), new(big.Int)
	for k := int64(0); ; k++ {
		if k > 0 {
			den.Mul(den, big.NewInt(32*k))
		}
		fl.QuoRem(one, den, rem)
		cl := new(big.Int).Set(fl)
		if rem.Sign() != 0 {
			cl.Add(cl, bigOne)
		}
		if fl.Sign() == 0 {
			// t_k < 2^−p: S_{k−1} ± t_k, with t_k ≤ cl·2^−p.
			bl.Sub(bl, cl)
			bh.Add(bh, cl)
			break
		}
		if k%2 == 0 {
			bl.Add(bl, fl)
			bh.Add(bh, cl)
		} else {
			bl.Sub(bl, cl)
			bh.Sub(bh, fl)
		}
	}
	lo, hi = new(big.Int).Set(one), new(big.Int).Set(one)
	for e := j; e > 0; e >>= 1 {
		if e&1 == 1 {
			mulFloor(lo, bl, p)
			mulCeil(hi, bh, p)
		}
		if e > 1 {
			mulFloor(bl, bl, p)
			mulCeil(bh, bh, p)
		}
	}
	return lo, hi
}

// mulFloor sets x to ⌊x·y/2^p⌋ (x, y ≥ 0).
func mulFloor(x, y *big.Int, p uint) {
	x.Mul(x, y)
	x.Rsh(x, p)
}

// mulCeil sets x to ⌈x·y/2^p⌉ (x, y ≥ 0).
func mulCeil(x, y *big.Int, p uint) {
	x.Mul(x, y)
	x.Add(x, new(big.Int).Sub(new(big.Int).Lsh(bigOne, p), bigOne))
	x.Rsh(x, p)
}

// bexpTab returns true with probability exp(−j/32), 1 ≤ j < expTabLen: U < p
// for the uniform U read from the stream (see the comment above).
func (s *Source) bexpTab(j uint64) (bool, error) {
	var w uint64
	if p := s.pos; p <= len(s.buf)-8 { // nextWord, inlined
		w, s.pos = binary.LittleEndian.Uint64(s.buf[p:p+8]), p+8
	} else {
		var err error
		if w, err = s.nextWordSlow(); err != nil {
			return false, err
		}
	}
	if e := expTab[j]; w != e {
		return w < e, nil
	}
	return s.bexpTabSlow(j, w)
}

// bexpTabSlow continues bexpTab when U's first word w is ⌊2⁶⁴·exp(−j/32)⌋.
func (s *Source) bexpTabSlow(j uint64, w uint64) (bool, error) {
	acc := new(big.Int).SetUint64(w)
	word := new(big.Int)
	for b := uint(128); ; b += 64 {
		x, err := s.nextWord()
		if err != nil {
			return false, err
		}
		acc.Lsh(acc, 64).Or(acc, word.SetUint64(x))
		if c := acc.Cmp(expNegFloor(j, b)); c != 0 {
			return c < 0, nil
		}
	}
}

// bexp128 returns true with probability exp(−num/den), num ≥ 0, den ≥ 1,
// on machine words: the split γ = J/32 + ρ described above, J = ⌊32γ⌋, with
// one division. It hands the whole trial to bexpBig, before drawing, when
// 32·num or 32·den does not fit in 128 bits.
func (s *Source) bexp128(num, den u128) (bool, error) {
	if num.isZero() {
		return true, nil
	}
	if (num.hi|den.hi)>>(64-expTabShift) != 0 {
		return s.bexpBig(num.toBig(new(big.Int)), den.toBig(new(big.Int)))
	}
	n32, den32 := num.shl(expTabShift), den.shl(expTabShift)
	var jj, r u128
	if den.hi == 0 && n32.hi < den.lo {
		q, rem := bits.Div64(n32.hi, n32.lo, den.lo) // quotient below 2⁶⁴
		jj, r = u64(q), u64(rem)
	} else {
		jj, r = n32.divMod(den)
	}
	return s.bexpParts128(jj, r, den32)
}

// bexpParts128 returns true with probability exp(−jj/32)·exp(−r/den32),
// r ≤ den32: table trials for exp(−jj/32), e⁻⁴⁴ at a time while jj > 32·44,
// then CKS20 Algorithm 1 for exp(−r/den32).
func (s *Source) bexpParts128(jj, r, den32 u128) (bool, error) {
	for jj.hi != 0 || jj.lo > expTabLen-1 {
		ok, err := s.bexpTab(expTabLen - 1)
		if err != nil || !ok {
			return false, err
		}
		jj = jj.sub(u64(expTabLen - 1))
	}
	if jj.lo != 0 {
		ok, err := s.bexpTab(jj.lo)
		if err != nil || !ok {
			return false, err
		}
	}
	return s.bexpUnit128(r, den32)
}

// bexpBig is bexp128 on big integers (the same split and the same draws).
func (s *Source) bexpBig(num, den *big.Int) (bool, error) {
	if num.Sign() == 0 {
		return true, nil
	}
	jj, r := new(big.Int).QuoRem(new(big.Int).Lsh(num, expTabShift), den, new(big.Int))
	return s.bexpPartsBig(jj, r, new(big.Int).Lsh(den, expTabShift))
}

// bexpPartsBig is bexpParts128 on big integers.
func (s *Source) bexpPartsBig(jj, r, den32 *big.Int) (bool, error) {
	last := big.NewInt(expTabLen - 1)
	if jj.Cmp(last) > 0 {
		jj = new(big.Int).Set(jj)
		for jj.Cmp(last) > 0 {
			ok, err := s.bexpTab(expTabLen - 1)
			if err != nil || !ok {
				return false, err
			}
			jj.Sub(jj, last)
		}
	}
	if jj.Sign() != 0 {
		ok, err := s.bexpTab(jj.Uint64())
		if err != nil || !ok {
			return false, err
		}
	}
	return s.bexpUnitBig(r, den32, 1)
}

// geometricCountLocked returns V ≥ 0 with P[V ≥ v] = e^{−v}, the number of
// successes of Bernoulli(e^{−1}) before the first failure (CKS20
// Algorithm 2), as V = #{v ≥ 1 : U < e^{−v}} for one uniform U ∈ [0, 1):
// U's first word against ⌊2⁶⁴e^{−v}⌋ = expTab[32v] for v = 1, 2, … decides
// all of them but the one whose cell holds e^{−v} (then bexpTabSlow reads
// on). If U < e^{−44}, V − 44 is again such a variable (memorylessness), drawn
// from a fresh U.
func (s *Source) geometricCountLocked() (uint64, error) {
	var base uint64
	for {
		var w uint64
		if p := s.pos; p <= len(s.buf)-8 { // nextWord, inlined
			w, s.pos = binary.LittleEndian.Uint64(s.buf[p:p+8]), p+8
		} else {
			var err error
			if w, err = s.nextWordSlow(); err != nil {
				return 0, err
			}
		}
		v := uint64(1)
		for ; v <= expTabUnits; v++ {
			e := expTab[v<<expTabShift]
			if w > e {
				return base + v - 1, nil
			}
			if w == e {
				ok, err := s.bexpTabSlow(v<<expTabShift, w)
				if err != nil {
					return 0, err
				}
				if !ok {
					return base + v - 1, nil
				}
				// e^{−v} > U ≥ e/2⁶⁴ ≥ (expTab[32(v+1)] + 1)/2⁶⁴ >
				// e^{−(v+1)} (TestExpTable), so V = v unless v = 44.
				if v < expTabUnits {
					return base + v, nil
				}
			}
		}
		base += expTabUnits
		if base > 1<<62 {
			return 0, errors.New("dp: geometric counter overflow") // unreachable in practice (probability e^{−2⁶²})
		}
	}
}

// fineTabMax is the largest k for which fineCountLocked reads e^{−k/32} from
// the table: the entries expTab[1..fineTabMax] decrease strictly
// (TestExpTable), so a word equals at most one of them.
const fineTabMax = 40 << expTabShift

// fineTab is expTab[0..fineTabMax] followed by zeros, a power-of-two length
// for the branch-free search of fineCountLocked.
var fineTab = func() *[2048]uint64 {
	var t [2048]uint64
	copy(t[1:fineTabMax+1], expTab[1:fineTabMax+1])
	t[0] = ^uint64(0)
	return &t
}()

// fineGuide[i] = #{k ≤ fineTabMax : expTab[k] ≥ (i+1)·2⁵⁴}, a lower bound
// of K₀ for every word w with w>>54 = i (Devroye 1986, §III.2.4, guide
// tables). Buckets below fineGuideMin (U < 1/64) use the binary search.
var fineGuide = func() *[1024]uint16 {
	var g [1024]uint16
	k := uint16(0)
	for i := 1022; i >= 0; i-- { // g[1023] = 0: no entry reaches 2⁶⁴
		for int(k) < fineTabMax && fineTab[k+1] >= uint64(i+1)<<54 {
			k++
		}
		g[i] = k
	}
	return &g
}()

const fineGuideMin = 16

// fineCountLocked returns K ≥ 0 with P[K ≥ k] = e^{−k/32} (a geometric
// variable with ratio e^{−1/32}, the pair 32V + j of the folded sampler), as
// K = #{k ≥ 1 : U < e^{−k/32}} for one uniform U ∈ [0, 1): U's first word w
// against ⌊2⁶⁴e^{−k/32}⌋ = expTab[k] decides every k but one whose entry
// equals w; a guide table indexed by w's top bits (or, for U < 1/64, a
// binary search) finds K₀ = #{k ≤ 40·32 : expTab[k] > w}, and only w = expTab[K₀+1] (probability
// 2⁻⁶⁴) needs U's further words (bexpTabSlow). If U < e^{−40}, K − 40·32 is
// again such a variable (memorylessness), drawn from a fresh U.
func (s *Source) fineCountLocked() (uint64, error) {
	var base uint64
	for {
		var w uint64
		if p := s.pos; p <= len(s.buf)-8 { // nextWord, inlined
			w, s.pos = binary.LittleEndian.Uint64(s.buf[p:p+8]), p+8
		} else {
			var err error
			if w, err = s.nextWordSlow(); err != nil {
				return 0, err
			}
		}
		var k uint64
		if i := w >> 54; i >= fineGuideMin {
			// Start from the guide's lower bound and step to K₀; in these
			// buckets K₀ varies by at most a few across a bucket.
			k = uint64(fineGuide[i])
			for k < fineTabMax && fineTab[k+1] > w {
				k++
			}
		} else {
			for step := uint64(1024); step > 0; step >>= 1 {
				_, lt := bits.Sub64(w, fineTab[(k+step)&2047], 0) // lt = 1 iff w < fineTab[k+step]
				k += step & -lt
			}
		}
		if k < fineTabMax && w == fineTab[k+1] {
			ok, err := s.bexpTabSlow(k+1, w)
			if err != nil {
				return 0, err
			}
			if ok {
				// e^{−(k+1)/32} > U ≥ w/2⁶⁴ ≥ (expTab[k+2] + 1)/2⁶⁴ >
				// e^{−(k+2)/32}: K = k + 1.
				k++
			}
		}
		if k < fineTabMax {
			return base + k, nil
		}
		base += fineTabMax
		if base > 1<<62 {
			return 0, errors.New("dp: geometric counter overflow") // unreachable in practice (probability e^{−2⁵⁷})
		}
	}
}
