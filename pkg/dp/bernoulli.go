package dp

import (
	"errors"
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
// γ ≥ 0 (Canonne, Kamath & Steinke 2020, Algorithm 1). For γ ∈ [0, 1]:
// K ← 1; repeat { A ~ Bernoulli(γ/K); if A = 0 stop; K ← K+1 }; return K odd.
// For γ > 1: ⌊γ⌋ draws of Bernoulli(e^{−1}), returning false at the first
// failure, then Bernoulli(exp(−(γ − ⌊γ⌋))). Each Bernoulli(q) with rational
// q compares a uniform U ∈ [0, 1), read 64 bits at a time, with q: see
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
// Algorithm 2 with t = a/b: the geometric variable with success probability
// 1 − e^{−b/a}): repeat { U uniform on {0, …, a−1}; D ~ Bernoulli(exp(−U/a)) }
// until D = 1; V = the number of successes of Bernoulli(e^{−1}) before the
// first failure; return ⌊(V·a + U)/b⌋.
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

// bexp1Locked returns true with probability e^{−1}: Algorithm 1 of CKS20
// with γ = 1, whose trials are Bernoulli(1/K).
func (s *Source) bexp1Locked() (bool, error) {
	// K = 1: Bernoulli(1) always succeeds.
	for k := uint64(2); ; k++ {
		w, err := s.nextWord()
		if err != nil {
			return false, err
		}
		// cellVersus(w, 1, k), inlined: w·k ≥ 2⁶⁴ → U ≥ 1/k;
		// (w+1)·k ≤ 2⁶⁴ → U < 1/k.
		hi, lo := bits.Mul64(w, k)
		if hi != 0 {
			return k%2 == 1, nil
		}
		if lo <= -k {
			continue
		}
		ok, err := s.decideBig(w, bigOne, new(big.Int).SetUint64(k))
		if err != nil {
			return false, err
		}
		if !ok {
			return k%2 == 1, nil
		}
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
			w, err := s.nextWord()
			if err != nil {
				return false, err
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

// bexp128 returns true with probability exp(−num/den), num ≥ 0, den ≥ 1
// (CKS20 Algorithm 1): while γ > 1, one Bernoulli(e^{−1}) and γ ← γ − 1, so
// ⌊γ⌋ of them (or ⌊γ⌋ − 1 and then γ = 1 exactly) before the unit case.
func (s *Source) bexp128(num, den u128) (bool, error) {
	for den.less(num) {
		ok, err := s.bexp1Locked()
		if err != nil || !ok {
			return false, err
		}
		num = num.sub(den)
	}
	return s.bexpUnit128(num, den)
}

// bexpBig is bexp128 on big integers.
func (s *Source) bexpBig(num, den *big.Int) (bool, error) {
	if num.Cmp(den) > 0 {
		num = new(big.Int).Set(num)
		for num.Cmp(den) > 0 {
			// Each round fails with probability 1 − e^{−1}, so even a γ
			// beyond 2⁶⁴ ends after a handful of rounds.
			ok, err := s.bexp1Locked()
			if err != nil || !ok {
				return false, err
			}
			num.Sub(num, den)
		}
	}
	return s.bexpUnitBig(num, den, 1)
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

// geometric128 is CKS20 Algorithm 2 for the scale a/b with 1 ≤ a < 2¹²⁸ and
// 1 ≤ b < 2⁶⁴. It returns the sample as a u128, or as a big integer (mbig ≠
// nil) in the astronomically unlikely case V·a + U ≥ 2¹²⁸.
func (s *Source) geometric128(a u128, b uint64) (m u128, mbig *big.Int, err error) {
	// U uniform on [0, a) accepted with probability exp(−U/a): U is then the
	// fractional part (in units of 1/a) of an exponential variable of scale a.
	var u u128
	for {
		if u, err = s.uniform128Locked(a); err != nil {
			return u128{}, nil, err
		}
		ok, err := s.bexpUnit128(u, a)
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
	// ⌊(V·a + U)/b⌋.
	x, o1 := a.mul64(v)
	x, o2 := x.add(u)
	if o1 || o2 {
		return u128{}, geometricResult(v, a.toBig(new(big.Int)), u.toBig(new(big.Int)), new(big.Int).SetUint64(b)), nil
	}
	if b != 1 {
		x = x.div64(b)
	}
	return x, nil, nil
}

// geometricBigLocked is CKS20 Algorithm 2 for the scale a/b, a, b ≥ 1, on
// big integers (the same draws as geometric128).
func (s *Source) geometricBigLocked(a, b *big.Int) (*big.Int, error) {
	u := new(big.Int)
	for {
		if _, err := s.uniformBigLocked(u, a); err != nil {
			return nil, err
		}
		ok, err := s.bexpUnitBig(u, a, 1)
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
	return geometricResult(v, a, u, b), nil
}

// geometricCountLocked returns V, the number of successes of
// Bernoulli(e^{−1}) before the first failure.
func (s *Source) geometricCountLocked() (uint64, error) {
	var v uint64
	for {
		ok, err := s.bexp1Locked()
		if err != nil {
			return 0, err
		}
		if !ok {
			return v, nil
		}
		v++
		if v == 0 {
			return 0, errors.New("dp: geometric counter overflow") // unreachable in practice (probability e^{−2⁶⁴})
		}
	}
}

// geometricResult returns ⌊(v·a + u)/b⌋.
func geometricResult(v uint64, a, u, b *big.Int) *big.Int {
	x := new(big.Int).SetUint64(v)
	x.Mul(x, a).Add(x, u)
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
