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
// failure, then Bernoulli(exp(−(γ − ⌊γ⌋))).
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
// 1 − e^{−b/a}).
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

// bernoulliExpLocked returns true with probability exp(−num/den), num ≥ 0, den ≥ 1.
func (s *Source) bernoulliExpLocked(num, den *big.Int) (bool, error) {
	if num.Cmp(den) <= 0 {
		return s.bernoulliExpUnitLocked(num, den)
	}
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if q.IsUint64() {
		for i, n := uint64(0), q.Uint64(); i < n; i++ {
			if ok, err := s.bernoulliExpUnit64Locked(1, 1); !ok || err != nil {
				return false, err
			}
		}
	} else {
		// ⌊γ⌋ ≥ 2⁶⁴: each round fails with probability 1 − e^{−1}, so this loop
		// ends after a handful of rounds; counting exactly keeps it correct.
		for i := new(big.Int); i.Cmp(q) < 0; i.Add(i, bigOne) {
			if ok, err := s.bernoulliExpUnit64Locked(1, 1); !ok || err != nil {
				return false, err
			}
		}
	}
	return s.bernoulliExpUnitLocked(r, den)
}

// bernoulliExpUnitLocked returns true with probability exp(−num/den) for
// 0 ≤ num ≤ den.
func (s *Source) bernoulliExpUnitLocked(num, den *big.Int) (bool, error) {
	if num.Sign() == 0 {
		return true, nil
	}
	if num.IsUint64() && den.IsUint64() {
		return s.bernoulliExpUnit64Locked(num.Uint64(), den.Uint64())
	}
	return s.bernoulliExpUnitBigLocked(num, den, 1)
}

// bernoulliExpUnit64Locked is bernoulliExpUnitLocked on machine words; it
// switches to big integers if den·K would overflow.
func (s *Source) bernoulliExpUnit64Locked(num, den uint64) (bool, error) {
	if num == 0 {
		return true, nil
	}
	for k := uint64(1); ; k++ {
		hi, dk := bits.Mul64(den, k)
		if hi != 0 {
			return s.bernoulliExpUnitBigLocked(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den), k)
		}
		// A ~ Bernoulli(γ/K) = Bernoulli(num/(den·K)).
		u, err := s.uint64nLocked(dk)
		if err != nil {
			return false, err
		}
		if u >= num { // A = 0: stop with this K.
			return k%2 == 1, nil
		}
	}
}

// bernoulliExpUnitBigLocked continues Algorithm 1 from K = k0.
func (s *Source) bernoulliExpUnitBigLocked(num, den *big.Int, k0 uint64) (bool, error) {
	k := new(big.Int).SetUint64(k0)
	dk := new(big.Int)
	u := new(big.Int)
	for {
		dk.Mul(den, k)
		if _, err := s.bigIntnLocked(u, dk); err != nil {
			return false, err
		}
		if u.Cmp(num) >= 0 {
			return k.Bit(0) == 1, nil
		}
		k.Add(k, bigOne)
	}
}

// geometricLocked samples the geometric variable with success probability
// 1 − e^{−b/a} (scale a/b), a, b ≥ 1.
func (s *Source) geometricLocked(a, b *big.Int) (*big.Int, error) {
	// U uniform on [0, a) accepted with probability exp(−U/a): U is then the
	// fractional part (in units of 1/a) of a geometric variable of scale a.
	var u *big.Int
	if a.IsUint64() {
		av := a.Uint64()
		var uv uint64
		for {
			var err error
			if uv, err = s.uint64nLocked(av); err != nil {
				return nil, err
			}
			ok, err := s.bernoulliExpUnit64Locked(uv, av)
			if err != nil {
				return nil, err
			}
			if ok {
				break
			}
		}
		u = new(big.Int).SetUint64(uv)
	} else {
		u = new(big.Int)
		for {
			if _, err := s.bigIntnLocked(u, a); err != nil {
				return nil, err
			}
			ok, err := s.bernoulliExpUnitLocked(u, a)
			if err != nil {
				return nil, err
			}
			if ok {
				break
			}
		}
	}
	// V: number of successes of Bernoulli(e^{−1}) before the first failure.
	var v uint64
	for {
		ok, err := s.bernoulliExpUnit64Locked(1, 1)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		v++
		if v == 0 {
			return nil, errors.New("dp: geometric counter overflow") // unreachable in practice (probability e^{−2⁶⁴})
		}
	}
	// ⌊(V·a + U)/b⌋.
	x := new(big.Int).SetUint64(v)
	x.Mul(x, a).Add(x, u)
	if b.Cmp(bigOne) != 0 {
		x.Quo(x, b)
	}
	return x, nil
}
