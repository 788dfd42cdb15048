package dp

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
)

// The discrete Gaussian sampler.
//
// CKS20 Algorithm 3 (Canonne, Kamath & Steinke 2020) draws Y from the discrete
// Laplace of scale t and accepts it with probability
//
//	exp(−(|Y| − σ²/t)²/(2σ²)).
//
// Any t > 0 gives exactly the discrete Gaussian: P[Y = y]·P[accept | y] ∝
// exp(−|y|/t − (y² − 2|y|σ²/t + σ⁴/t²)/(2σ²)) = exp(−y²/(2σ²))·exp(−σ²/(2t²)),
// and the second factor does not depend on y. The choice of t only sets the
// speed. CKS20 take t = ⌊σ⌋ + 1; with σ² = n/d the exponent is then
// (|Y|·d·t − n)²/(2·n·d·t²), whose numerator grows like σ⁴·d² and leaves
// machine words at σ² ≈ 2⁶³. Here, for σ ≥ 1,
//
//	s ≈ ⌊σ⌋ = ⌊√⌊n/d⌋⌋ (s ≤ σ),   t = σ²/s = n/(d·s) ≥ σ,   σ²/t = s,
//
// so the exponent is γ(Y) = (|Y| − s)²·d/(2n): numerator and denominator grow
// like σ²·d, and σ² up to about 2¹²⁰ runs on 128-bit words. The Laplace scale
// t = n/(d·s) is the rational a/b of CKS20 Algorithm 2 (n/(d·s) in lowest
// terms; s is ⌊σ⌋ with its bits below 2^(bitlen − 21) cleared, see
// newDGParams).
// The Laplace envelope is as tight as CKS20's (t within a factor 1 + 1/s of
// their choice); the folding below sets the number of rounds. For σ < 1, t = 1 and γ(Y) = (|Y|·d − n)²/(2nd),
// CKS20's own form.
//
// Folding. CKS20's Laplace step draws its geometric part with Algorithm 2:
// U uniform on [0, A) accepted with probability exp(−U/A), then V with
// P[V ≥ v] = e^{−v}, and |Y| = ⌊(V·A + U)/B⌋ for any t = A/B. With A = 32a,
// B = 32b (t = a/b) and U = j·a + U′ (j < 32, U′ < a), the accepted pair
// has P[V, j] ∝ e^{−(32V + j)/32}: K = 32V + j is geometric with ratio
// e^{−1/32}, and U′ is then accepted with probability exp(−U′/(32a)) alone.
// The sampler draws K directly (fineCountLocked: one uniform against the
// table of e^{−k/32}) and folds U′'s acceptance into the Gaussian one: each
// round draws the sign, U′ and K, sets |Y| = ⌊(K·a + U′)/(32b)⌋, and accepts
// with
//
//	exp(−U′/(32a))·exp(−γ(|Y|)) = exp(−(U′·gden/a + 32·γnum)/(32·gden)),
//
// one trial (bexp128; gden is γ's denominator, a multiple of a). Then
// P[K·a + U′ = x, accepted] ∝ exp(−x/(32a))·exp(−γ(⌊x/(32b)⌋)); summing over
// the 32b values of x with ⌊x/(32b)⌋ = y gives exp(−y·b/a)·exp(−γ(y)) times
// a constant: CKS20's Laplace weight times its acceptance, as in
// Algorithm 3. Rejecting (negative, 0) keeps the Laplace's weight at 0. A
// round accepts with probability about 0.98·0.76 ≈ 0.75 (CKS20's
// Algorithm 3 acceptance, about 0.76 for t ≈ σ, times E[exp(−U′/(32a))]),
// and costs a word for the sign and U′, a word for K, and one exp trial.

// Every step runs on u128 words when its numbers fit and on math/big
// otherwise, with identical draws (see bernLazy128), so the output is the
// same function of the random stream either way; TestFastPathMatchesBig
// checks this near every overflow boundary.

// dgParams are the derived constants of one σ² = n/d.
type dgParams struct {
	n, d *big.Int // σ² = n/d in lowest terms (private copies)
	ge1  bool     // σ ≥ 1
	s    *big.Int // ⌊σ⌋ rounded down to 21 significant bits (σ ≥ 1)
	a, b *big.Int // the Laplace scale t = a/b
	gden *big.Int // denominator of γ: 2n (σ ≥ 1) or 2nd (σ < 1)
	ga   *big.Int // gden/a (an integer: a divides n)
	den2 *big.Int // 32·gden, the denominator of the folded exponent

	// Word-size copies; fast reports whether all of them fit.
	fast       bool
	fn, fa     u128
	fga, fden2 u128
	fold128    bool // fden2 < 2¹²³: the folded exponent's trial runs on words
	fs, fd, fb uint64

	// The draws of a round's sign and U′: one word when 1 + ubits ≤ 64
	// (joint), else separate draws (see headJointLocked); K = 32V + j is a
	// word of its own (fineCountLocked).
	ubits uint // bit length of a − 1
	joint bool
	fa64  uint64 // a, when joint
}

func newDGParams(n, d *big.Int) *dgParams {
	p := &dgParams{n: new(big.Int).Set(n), d: new(big.Int).Set(d)}
	p.ge1 = n.Cmp(d) >= 0
	if p.ge1 {
		p.s = new(big.Int).Quo(n, d)
		p.s.Sqrt(p.s)
		// Any integer s ≥ 1 gives the exact distribution. Clearing the bits
		// of ⌊σ⌋ below 2^(bitlen − 21) changes t by a relative 2⁻²⁰ at most
		// (no measurable cost in rounds) and lets a/b = n/(d·s) cancel the
		// power of two of n: a float64 variance n = m·2^e (53-bit m) then has
		// a Laplace numerator a of about 53 bits, where the word-size trials
		// are cheapest.
		if j := p.s.BitLen() - 21; j > 0 {
			p.s.Rsh(p.s, uint(j)).Lsh(p.s, uint(j))
		}
		p.b = new(big.Int).Mul(p.d, p.s)
		g := new(big.Int).GCD(nil, nil, p.n, p.b)
		p.a = new(big.Int).Quo(p.n, g)
		p.b.Quo(p.b, g)
		p.gden = new(big.Int).Lsh(p.n, 1)
	} else {
		p.s = new(big.Int)
		p.a, p.b = bigOne, bigOne
		p.gden = new(big.Int).Mul(p.n, p.d)
		p.gden.Lsh(p.gden, 1)
	}
	p.ga = new(big.Int).Quo(p.gden, p.a)
	p.den2 = new(big.Int).Lsh(p.gden, expTabShift)
	var ok [6]bool
	p.fn, ok[0] = u128FromBig(p.n)
	p.fa, ok[1] = u128FromBig(p.a)
	_, ok[2] = u128FromBig(p.gden) // fast keeps its condition on gden; since the fold only ga and den2 are read as words
	ok[3] = p.d.IsUint64() && p.s.IsUint64() && p.b.IsUint64()
	p.fga, ok[4] = u128FromBig(p.ga)
	p.fden2, ok[5] = u128FromBig(p.den2)
	p.fold128 = ok[5] && p.fden2.hi>>(64-expTabShift) == 0
	p.fast = ok[0] && ok[1] && ok[2] && ok[3] && ok[4]
	p.ubits = uint(new(big.Int).Sub(p.a, bigOne).BitLen())
	p.joint = 1+p.ubits <= 64
	if p.joint {
		p.fa64 = p.a.Uint64()
	}
	if p.fast {
		p.fs, p.fd, p.fb = p.s.Uint64(), p.d.Uint64(), p.b.Uint64()
	}
	return p
}

// dgSampleLocked draws one sample as a big integer.
func (s *Source) dgSampleLocked(p *dgParams) (*big.Int, error) {
	if !p.fast {
		return s.dgBigLocked(p)
	}
	neg, m, mb, err := s.dg128Locked(p)
	if err != nil {
		return nil, err
	}
	return signedBig(neg, m, mb), nil
}

// signedBig returns ±|X| as a big integer, from the magnitude a word sampler
// returns: m, or mb when it did not fit in 128 bits.
func signedBig(neg bool, m u128, mb *big.Int) *big.Int {
	if mb == nil {
		mb = m.toBig(new(big.Int))
	}
	if neg {
		mb.Neg(mb)
	}
	return mb
}

// dg128Locked is the folded CKS20 Algorithm 3 (see "Folding" above) on words
// (p.fast). It returns the sign and |X|, as a u128 or, if |X| ≥ 2¹²⁸ (never
// in practice), as mb ≠ nil.
func (s *Source) dg128Locked(p *dgParams) (neg bool, m u128, mb *big.Int, err error) {
	for {
		var sign uint64
		var u u128
		if p.joint {
			if sign, u.lo, err = s.headJointLocked(p); err != nil {
				return false, u128{}, nil, err
			}
		} else {
			if sign, err = s.bitsLocked(1); err != nil {
				return false, u128{}, nil, err
			}
			if u, err = s.uniform128Locked(p.fa); err != nil {
				return false, u128{}, nil, err
			}
		}
		neg = sign == 1
		k, err := s.fineCountLocked()
		if err != nil {
			return false, u128{}, nil, err
		}
		// |Y| = ⌊(K·a + U′)/32/b⌋.
		x, o1 := p.fa.mul64(k)
		x, o2 := x.add(u)
		if o1 || o2 {
			mb = fineResult(k, p.a, u.toBig(new(big.Int)), p.b)
			if neg && mb.Sign() == 0 {
				continue
			}
			ok, err := s.bexpBig(p.foldedNumBig(u.toBig(new(big.Int)), mb), p.den2)
			if err != nil {
				return false, u128{}, nil, err
			}
			if !ok {
				continue
			}
			if m, fits := u128FromBig(mb); fits {
				return neg, m, nil, nil
			}
			return neg, u128{}, mb, nil
		}
		m = u128{x.hi >> expTabShift, x.lo>>expTabShift | x.hi<<(64-expTabShift)}
		if p.fb != 1 {
			m = m.div64(p.fb)
		}
		if neg && m.isZero() {
			continue
		}
		var ok bool
		if p.ge1 && p.fold128 && m.hi == 0 && u.hi == 0 {
			// foldedNum128, inlined for the common case.
			diff := m.lo - p.fs
			if m.lo < p.fs {
				diff = p.fs - m.lo
			}
			h, l := bits.Mul64(diff, diff)
			h1, l1 := bits.Mul64(l, p.fd)
			h2, l2 := bits.Mul64(h, p.fd)
			gh, c := bits.Add64(l2, h1, 0)
			if h2 == 0 && c == 0 && gh>>(64-expTabShift) == 0 {
				// g = (gh, l1) = (m − s)²·d; num = 32g + U′·(gden/a).
				g := u128{gh, l1}.shl(expTabShift)
				t, o1 := p.fga.mul64(u.lo)
				num, o2 := t.add(g)
				if !o1 && !o2 {
					ok, err = s.bexp128(num, p.fden2)
					if err != nil {
						return false, u128{}, nil, err
					}
					if ok {
						return neg, m, nil, nil
					}
					continue
				}
			}
		}
		if num, overflow := p.foldedNum128(u, m); overflow || !p.fold128 {
			ok, err = s.bexpBig(p.foldedNumBig(u.toBig(new(big.Int)), m.toBig(new(big.Int))), p.den2)
		} else {
			ok, err = s.bexp128(num, p.fden2)
		}
		if err != nil {
			return false, u128{}, nil, err
		}
		if ok {
			return neg, m, nil, nil
		}
	}
}

// headJointLocked draws a round's sign (bit 0) and U′ (the next ubits bits)
// from one word, drawing again while U′ ≥ a (probability below ½): for
// p.joint, on both paths.
func (s *Source) headJointLocked(p *dgParams) (sign, u uint64, err error) {
	mask := uint64(1)<<p.ubits - 1
	for {
		var w uint64
		if i := s.pos; i <= len(s.buf)-8 { // nextWord, inlined
			w, s.pos = binary.LittleEndian.Uint64(s.buf[i:i+8]), i+8
		} else if w, err = s.nextWordSlow(); err != nil {
			return 0, 0, err
		}
		if u = w >> 1 & mask; u < p.fa64 {
			return w & 1, u, nil
		}
	}
}

// fineResult returns ⌊(k·a + u)/32/b⌋.
func fineResult(k uint64, a, u, b *big.Int) *big.Int {
	x := new(big.Int).SetUint64(k)
	x.Mul(x, a).Add(x, u)
	x.Rsh(x, expTabShift)
	if b.Cmp(bigOne) != 0 {
		x.Quo(x, b)
	}
	return x
}

// foldedNum128 returns U′·(gden/a) + 32·γnum(m), the numerator of the
// folded exponent U′/(32a) + γ(m) over 32·gden, or overflow.
func (p *dgParams) foldedNum128(u, m u128) (u128, bool) {
	g, overflow := p.gammaNum128(m)
	if overflow || g.hi>>(64-expTabShift) != 0 || u.hi != 0 {
		return u128{}, true
	}
	t, overflow := p.fga.mul64(u.lo)
	if overflow {
		return u128{}, true
	}
	return t.add(g.shl(expTabShift))
}

// foldedNumBig is foldedNum128 on big integers.
func (p *dgParams) foldedNumBig(u, m *big.Int) *big.Int {
	g := p.gammaNumBig(m)
	g.Lsh(g, expTabShift)
	return g.Add(g, new(big.Int).Mul(u, p.ga))
}

// gammaNum128 returns the numerator of γ(m) over p.gden, or overflow.
func (p *dgParams) gammaNum128(m u128) (u128, bool) {
	if p.ge1 {
		// (m − s)²·d
		diff := m.absDiff(u64(p.fs))
		if diff.hi != 0 {
			return u128{}, true
		}
		return sq64(diff.lo).mul64(p.fd)
	}
	// (m·d − n)²
	md, overflow := m.mul64(p.fd)
	if overflow {
		return u128{}, true
	}
	diff := md.absDiff(p.fn)
	if diff.hi != 0 {
		return u128{}, true
	}
	return sq64(diff.lo), false
}

// gammaNumBig returns the numerator of γ(m) over p.gden.
func (p *dgParams) gammaNumBig(m *big.Int) *big.Int {
	x := new(big.Int)
	if p.ge1 {
		x.Sub(m, p.s)
		x.Mul(x, x)
		return x.Mul(x, p.d)
	}
	x.Mul(m, p.d).Sub(x, p.n)
	return x.Mul(x, x)
}

// dgBigLocked is dg128Locked on big integers, with the same draws.
func (s *Source) dgBigLocked(p *dgParams) (*big.Int, error) {
	u := new(big.Int)
	for {
		var sign uint64
		if p.joint {
			var ul uint64
			var err error
			if sign, ul, err = s.headJointLocked(p); err != nil {
				return nil, err
			}
			u.SetUint64(ul)
		} else {
			var err error
			if sign, err = s.bitsLocked(1); err != nil {
				return nil, err
			}
			if _, err := s.uniformBigLocked(u, p.a); err != nil {
				return nil, err
			}
		}
		neg := sign == 1
		k, err := s.fineCountLocked()
		if err != nil {
			return nil, err
		}
		m := fineResult(k, p.a, u, p.b)
		if neg && m.Sign() == 0 {
			continue
		}
		ok, err := s.bexpBig(p.foldedNumBig(u, m), p.den2)
		if err != nil {
			return nil, err
		}
		if ok {
			if neg {
				m.Neg(m)
			}
			return m, nil
		}
	}
}

// DiscreteGaussianSampler draws from the discrete Gaussian with a fixed
// rational variance parameter σ² (P[X = x] ∝ exp(−x²/(2σ²)), x ∈ ℤ), exactly,
// as DiscreteGaussian does, with its constants derived once. It is immutable
// and safe for concurrent use.
type DiscreteGaussianSampler struct {
	p *dgParams
}

// NewDiscreteGaussianSampler returns the sampler for σ² > 0.
func NewDiscreteGaussianSampler(sigma2 *big.Rat) (*DiscreteGaussianSampler, error) {
	if sigma2 == nil || sigma2.Sign() <= 0 {
		return nil, fmt.Errorf("dp: discrete Gaussian needs sigma2 > 0, got %v", ratString(sigma2))
	}
	return &DiscreteGaussianSampler{p: newDGParams(sigma2.Num(), sigma2.Denom())}, nil
}

// Sample returns one draw.
func (g *DiscreteGaussianSampler) Sample(src *Source) (*big.Int, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.dgSampleLocked(g.p)
}

// Int64s fills dst with independent draws. It returns an error if a draw
// does not fit in an int64, which has probability below 2·exp(−2⁶⁰) for
// σ² ≤ 2⁶⁵ (and below 10⁻¹⁰⁰ up to σ² ≈ 2¹¹⁷); the draws written so far
// are then valid but dst must not be used as a full sample.
func (g *DiscreteGaussianSampler) Int64s(src *Source, dst []int64) error {
	if err := src.check(); err != nil {
		return err
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for i := range dst {
		v, vb, err := src.dgInt64Locked(g.p)
		if err != nil {
			return err
		}
		if vb != nil {
			return fmt.Errorf("dp: a discrete Gaussian draw does not fit in 64 bits (sigma2 = %s/%s)", g.p.n, g.p.d)
		}
		dst[i] = v
	}
	return nil
}

// dgInt64Locked draws one sample: as v if it fits in an int64, else as
// vb ≠ nil.
func (s *Source) dgInt64Locked(p *dgParams) (v int64, vb *big.Int, err error) {
	if !p.fast {
		x, err := s.dgBigLocked(p)
		if err != nil {
			return 0, nil, err
		}
		if x.IsInt64() {
			return x.Int64(), nil, nil
		}
		return 0, x, nil
	}
	neg, m, mb, err := s.dg128Locked(p)
	if err != nil {
		return 0, nil, err
	}
	if mb == nil && m.hi == 0 && m.lo <= 1<<63-1 {
		if neg {
			return -int64(m.lo), nil, nil
		}
		return int64(m.lo), nil, nil
	}
	return 0, signedBig(neg, m, mb), nil
}

// dgParamsLocked returns the parameters for σ² = n/d, reusing the ones the
// Source used last.
func (s *Source) dgParamsLocked(n, d *big.Int) *dgParams {
	p := s.dg
	if p == nil || p.n.Cmp(n) != 0 || p.d.Cmp(d) != 0 {
		p = newDGParams(n, d)
		s.dg = p
	}
	return p
}
