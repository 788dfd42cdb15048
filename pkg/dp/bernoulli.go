package dp

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
)

// Bernoulli returns true with probability p, for a rational p ∈ [0, 1]
// given exactly as a big.Rat: with p = a/b in lowest terms it draws U uniform
// on {0, …, b−1} and returns U < a.
func Bernoulli(src *Source, p *big.Rat) (bool, error) {
	if err := src.check(); err != nil {
		return false, err
	}
	if p == nil || p.Sign() < 0 || p.Cmp(ratOne) > 0 {
		return false, fmt.Errorf("dp: Bernoulli probability must be in [0, 1], got %v", ratString(p))
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.bernoulliLocked(p.Num(), p.Denom())
}

// BernoulliExp returns true with probability exp(−γ), exactly, for a rational
// γ ≥ 0. It writes γ = J/32 + ρ with J = ⌊32γ⌋ and ρ ∈ [0, 1/32) and returns
// the conjunction of two independent trials: a uniform U ∈ [0, 1) compared
// with the irrational exp(−J/32), whose binary expansion is known exactly
// (a table of its first 64 bits, more computed in integer arithmetic in the
// rare case they do not decide; exptable.go), and Bernoulli(exp(−ρ)) by
// Canonne, Kamath & Steinke 2020, Algorithm 1 (K ← 1; repeat
// { A ~ Bernoulli(ρ/K); if A = 0 stop; K ← K+1 }; return K odd), whose
// first trial almost always ends it. Each Bernoulli(q) with rational q
// compares a uniform U ∈ [0, 1), read 64 bits at a time, with q: see
// bernLazy128.
//
// Its running time depends on γ; see the package documentation on timing.
func BernoulliExp(src *Source, gamma *big.Rat) (bool, error) {
	if err := src.check(); err != nil {
		return false, err
	}
	if gamma == nil || gamma.Sign() < 0 {
		return false, fmt.Errorf("dp: BernoulliExp needs gamma ≥ 0, got %v", ratString(gamma))
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.bernoulliExpLocked(gamma.Num(), gamma.Denom())
}

// Geometric returns X ∈ {0, 1, 2, …} with P[X = x] = (1 − e^{−1/t}) e^{−x/t}
// for a rational scale t > 0, exactly (Canonne, Kamath & Steinke 2020,
// Algorithm 2 with t = A/B: the geometric variable with success probability
// 1 − e^{−B/A}): repeat { U uniform on {0, …, A−1}; D ~ Bernoulli(exp(−U/A)) }
// until D = 1; V = the number of successes of Bernoulli(e^{−1}) before the
// first failure; return ⌊(V·A + U)/B⌋. It uses A = 32a, B = 32b for t = a/b
// in lowest terms, which makes exp(−U/A) cheap (see geometric128), and
// draws V from one uniform (geometricCountLocked).
func Geometric(src *Source, scale *big.Rat) (*big.Int, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	if scale == nil || scale.Sign() <= 0 {
		return nil, fmt.Errorf("dp: Geometric needs scale > 0, got %v", ratString(scale))
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.geometricLocked(scale.Num(), scale.Denom())
}

var ratOne = big.NewRat(1, 1)

func ratString(r *big.Rat) string {
	if r == nil {
		return "<nil>"
	}
	return r.RatString()
}

// bernoulliLocked returns U < num for U uniform on [0, den), den ≥ 1.
func (s *Source) bernoulliLocked(num, den *big.Int) (bool, error) {
	if num.Sign() <= 0 {
		return false, nil
	}
	if num.Cmp(den) >= 0 {
		return true, nil
	}
	if den.IsUint64() {
		u, err := s.uint64nLocked(den.Uint64())
		return u < num.Uint64(), err
	}
	u, err := s.bigIntnLocked(new(big.Int), den)
	if err != nil {
		return false, err
	}
	return u.Cmp(num) < 0, nil
}

// Exact Bernoulli trials on machine words.
//
// Every trial Bernoulli(q), q = num/den rational, is decided by a uniform
// U ∈ [0, 1) whose binary expansion is read from the Source 64 bits at a
// time: the trial succeeds iff U < q. The first word w places U in the cell
// [w/2⁶⁴, (w+1)/2⁶⁴), which decides U < q unless q lies inside it (one cell in
// 2⁶⁴); only then is the next word read (decideBig). The outcome and the bits
// read depend on the value q alone, so the word-size code (…128, on u128
// numbers) and the math/big code (…Big) draw identical samples from identical
// streams; the word-size code hands a step to math/big before drawing for it
// whenever one of its numbers would not fit in 128 bits.

// bernLazy128 returns U < num/den for den ≥ 1: false without drawing if
// num = 0, true without drawing if num ≥ den.
func (s *Source) bernLazy128(num, den u128) (bool, error) {
	if num.isZero() {
		return false, nil
	}
	if !num.less(den) {
		return true, nil
	}
	w, err := s.nextWord()
	if err != nil {
		return false, err
	}
	switch cellVersus(w, num, den) {
	case -1:
		return true, nil
	case 1:
		return false, nil
	}
	return s.decideBig(w, num.toBig(new(big.Int)), den.toBig(new(big.Int)))
}

// bernLazyBig is bernLazy128 on big integers.
func (s *Source) bernLazyBig(num, den *big.Int) (bool, error) {
	if num.Sign() <= 0 {
		return false, nil
	}
	if num.Cmp(den) >= 0 {
		return true, nil
	}
	w, err := s.nextWord()
	if err != nil {
		return false, err
	}
	return s.decideBig(w, num, den)
}

// decideBig returns U < num/den (0 < num < den) for U whose first 64 bits
// are w, reading further words while U's known prefix leaves it undecided.
func (s *Source) decideBig(w uint64, num, den *big.Int) (bool, error) {
	acc := new(big.Int).SetUint64(w) // U's first `shift` bits, as an integer
	shift := uint(64)
	lhs, rhs, word := new(big.Int), new(big.Int), new(big.Int)
	for {
		// U ∈ [acc/2^shift, (acc+1)/2^shift).
		lhs.Mul(acc, den)
		rhs.Lsh(num, shift)
		if lhs.Cmp(rhs) >= 0 {
			return false, nil
		}
		if lhs.Add(lhs, den).Cmp(rhs) <= 0 {
			return true, nil
		}
		w, err := s.nextWord()
		if err != nil {
			return false, err
		}
		acc.Lsh(acc, 64).Or(acc, word.SetUint64(w))
		shift += 64
	}
}

// bexpUnit128 returns true with probability exp(−num/den), 0 ≤ num ≤ den
// (CKS20 Algorithm 1, γ ∈ [0, 1]).
func (s *Source) bexpUnit128(num, den u128) (bool, error) {
	if num.isZero() {
		return true, nil
	}
	if den.hi == 0 && bits.Len64(den.lo) <= 56 {
		// den·K < 2⁶⁴ for every K < 2⁸ (and K ≥ 2⁸ has probability
		// below 1/255!): cellVersus's one-word case, inlined.
		for k := uint64(1); k < 1<<8; k++ {
			dk := den.lo * k
			if num.lo >= dk {
				continue // Bernoulli(1)
			}
			var w uint64
			if p := s.pos; p <= len(s.buf)-8 { // nextWord, inlined
				w, s.pos = binary.LittleEndian.Uint64(s.buf[p:p+8]), p+8
			} else {
				var err error
				if w, err = s.nextWordSlow(); err != nil {
					return false, err
				}
			}
			h, l := bits.Mul64(w, dk)
			if h >= num.lo {
				return k%2 == 1, nil
			}
			l2, c := bits.Add64(l, dk, 0)
			if h2 := h + c; h2 < num.lo || (h2 == num.lo && l2 == 0) {
				continue
			}
			ok, err := s.decideBig(w, new(big.Int).SetUint64(num.lo), new(big.Int).SetUint64(dk))
			if err != nil {
				return false, err
			}
			if !ok {
				return k%2 == 1, nil
			}
		}
		return s.bexpUnitBig(num.toBig(new(big.Int)), den.toBig(new(big.Int)), 1<<8)
	}
	for k := uint64(1); ; k++ {
		dk, overflow := den.mul64(k)
		if overflow {
			return s.bexpUnitBig(num.toBig(new(big.Int)), den.toBig(new(big.Int)), k)
		}
		// A ~ Bernoulli(γ/K) = Bernoulli(num/(den·K)).
		a, err := s.bernLazy128(num, dk)
		if err != nil {
			return false, err
		}
		if !a {
			return k%2 == 1, nil
		}
	}
}

// bexpUnitBig continues CKS20 Algorithm 1 (γ = num/den ∈ [0, 1]) from K = k0.
func (s *Source) bexpUnitBig(num, den *big.Int, k0 uint64) (bool, error) {
	k := new(big.Int).SetUint64(k0)
	dk := new(big.Int)
	for {
		a, err := s.bernLazyBig(num, dk.Mul(den, k))
		if err != nil {
			return false, err
		}
		if !a {
			return k.Bit(0) == 1, nil
		}
		k.Add(k, bigOne)
	}
}

// bernoulliExpLocked returns true with probability exp(−num/den), num ≥ 0,
// den ≥ 1, on machine words when both fit in 128 bits.
func (s *Source) bernoulliExpLocked(num, den *big.Int) (bool, error) {
	n, ok1 := u128FromBig(num)
	d, ok2 := u128FromBig(den)
	if ok1 && ok2 {
		return s.bexp128(n, d)
	}
	return s.bexpBig(num, den)
}

// The geometric sampler (CKS20 Algorithm 2) draws U uniform on [0, A) and
// accepts it with probability exp(−U/A), for any representation t = A/B of
// the scale. Here A = 32a and B = 32b for t = a/b: U = j·a + U′ with j
// uniform on [0, 32) (5 bits) and U′ uniform on [0, a), so that
// exp(−U/A) = exp(−j/32)·exp(−U′/(32a)) is one table trial and one
// Algorithm 1 run on an exponent below 1/32 (see exptable.go), with no
// division; the result is ⌊(V·A + U)/B⌋ = ⌊((32V + j)·a + U′)/(32b)⌋.

// geometric128 is CKS20 Algorithm 2 for the scale a/b with 1 ≤ a < 2¹²⁸ and
// 1 ≤ b < 2⁶⁴. It returns the sample as a u128, or as a big integer (mbig ≠
// nil) in the astronomically unlikely case (32V + j)·a + U′ ≥ 2¹²⁸.
func (s *Source) geometric128(a u128, b uint64) (m u128, mbig *big.Int, err error) {
	if a.hi>>(64-expTabShift) != 0 {
		// 32a does not fit in 128 bits.
		x, err := s.geometricBigLocked(a.toBig(new(big.Int)), new(big.Int).SetUint64(b))
		if err != nil {
			return u128{}, nil, err
		}
		if m, ok := u128FromBig(x); ok {
			return m, nil, nil
		}
		return u128{}, x, nil
	}
	a32 := a.shl(expTabShift)
	var j uint64
	var u u128
	for {
		if j, err = s.bitsLocked(expTabShift); err != nil {
			return u128{}, nil, err
		}
		if u, err = s.uniform128Locked(a); err != nil {
			return u128{}, nil, err
		}
		ok, err := s.bexpParts128(u64(j), u, a32)
		if err != nil {
			return u128{}, nil, err
		}
		if ok {
			break
		}
	}
	v, err := s.geometricCountLocked()
	if err != nil {
		return u128{}, nil, err
	}
	// ⌊((32V + j)·a + U′)/32/b⌋.
	x, o1 := a.mul64(v<<expTabShift | j)
	x, o2 := x.add(u)
	if o1 || o2 || v>>(64-expTabShift) != 0 {
		return u128{}, geometricResult(v, j, a.toBig(new(big.Int)), u.toBig(new(big.Int)), new(big.Int).SetUint64(b)), nil
	}
	x = u128{x.hi >> expTabShift, x.lo>>expTabShift | x.hi<<(64-expTabShift)}
	if b != 1 {
		x = x.div64(b)
	}
	return x, nil, nil
}

// geometricBigLocked is CKS20 Algorithm 2 for the scale a/b, a, b ≥ 1, on
// big integers (the same draws as geometric128).
func (s *Source) geometricBigLocked(a, b *big.Int) (*big.Int, error) {
	u := new(big.Int)
	a32 := new(big.Int).Lsh(a, expTabShift)
	var j uint64
	for {
		var err error
		if j, err = s.bitsLocked(expTabShift); err != nil {
			return nil, err
		}
		if _, err := s.uniformBigLocked(u, a); err != nil {
			return nil, err
		}
		ok, err := s.bexpPartsBig(new(big.Int).SetUint64(j), u, a32)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
	}
	v, err := s.geometricCountLocked()
	if err != nil {
		return nil, err
	}
	return geometricResult(v, j, a, u, b), nil
}

// geometricResult returns ⌊((32v + j)·a + u)/(32b)⌋.
func geometricResult(v, j uint64, a, u, b *big.Int) *big.Int {
	x := new(big.Int).SetUint64(v)
	x.Lsh(x, expTabShift).Or(x, new(big.Int).SetUint64(j))
	x.Mul(x, a).Add(x, u)
	x.Rsh(x, expTabShift)
	if b.Cmp(bigOne) != 0 {
		x.Quo(x, b)
	}
	return x
}

// geometricLocked samples the geometric variable of scale a/b, a, b ≥ 1.
func (s *Source) geometricLocked(a, b *big.Int) (*big.Int, error) {
	af, ok1 := u128FromBig(a)
	if ok1 && b.IsUint64() {
		m, mb, err := s.geometric128(af, b.Uint64())
		if err != nil || mb != nil {
			return mb, err
		}
		return m.toBig(new(big.Int)), nil
	}
	return s.geometricBigLocked(a, b)
}
