package dp

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// Exponential is the exponential mechanism over a finite set of candidates
// (McSherry & Talwar 2007). Given scores u_i(D) with
// max_i |u_i(D) − u_i(D')| ≤ Δ on neighbouring datasets, after clamping every
// score to the public range [lo, hi], Select returns index i with probability
//
//	Pr[i] = exp(ε u_i/(2Δ)) / Σ_j exp(ε u_j/(2Δ)),
//
// which is (ε, 0)-DP. Sampling is exact: draw i uniformly, accept it with
// probability exp(−ε (u_max − u_i)/(2Δ)) computed by BernoulliExp on the
// exact rational value of the float64 inputs, otherwise draw again (OpenDP's
// approach). The accepted index has exactly the distribution above; the
// number of rounds (at most the number of candidates on average) depends on
// the scores, so do not let a requester time Select.
type Exponential struct {
	epsilon, sensitivity float64
	lo, hi               float64
}

// NewExponential returns the exponential mechanism for ε > 0, score
// sensitivity Δ > 0 and a finite score range lo < hi.
func NewExponential(epsilon, sensitivity, lo, hi float64) (*Exponential, error) {
	if err := ValidateEpsilon(epsilon); err != nil {
		return nil, err
	}
	if err := ValidateSensitivity(sensitivity); err != nil {
		return nil, err
	}
	if err := validateFinite("score lower bound", lo); err != nil {
		return nil, err
	}
	if err := validateFinite("score upper bound", hi); err != nil {
		return nil, err
	}
	if !(lo < hi) {
		return nil, fmt.Errorf("dp: score range must have lo < hi, got [%g, %g]", lo, hi)
	}
	return &Exponential{epsilon: epsilon, sensitivity: sensitivity, lo: lo, hi: hi}, nil
}

// Select returns the index of the chosen candidate. scores must be non-empty
// and contain no NaN (±Inf are clamped like any other score).
func (e *Exponential) Select(src *Source, scores []float64) (int, error) {
	if err := src.check(); err != nil {
		return 0, err
	}
	u, err := e.clamp(scores)
	if err != nil {
		return 0, err
	}
	// γ_i = ε (u_max − u_i)/(2Δ) as an exact fraction num_i/den (not in lowest
	// terms: the Bernoulli samplers do not need it, and skipping the gcd
	// makes Select several times faster). Every float64 is M·2^E with an
	// integer M, so with E₀ the smallest exponent among the scores,
	// u_max − u_i = D_i·2^E₀ for an integer D_i.
	mants := make([]*big.Int, len(u))
	e0 := math.MaxInt
	exps := make([]int, len(u))
	for i, v := range u {
		m, e := floatParts(v)
		mants[i] = big.NewInt(m)
		exps[i] = e
		if m != 0 {
			e0 = min(e0, e)
		}
	}
	if e0 == math.MaxInt { // all scores are 0
		e0 = 0
	}
	imax := 0
	for i, v := range u {
		if v > u[imax] {
			imax = i
		}
	}
	for i := range mants {
		if mants[i].Sign() != 0 {
			mants[i].Lsh(mants[i], uint(exps[i]-e0))
		}
	}
	me, ee := floatParts(e.epsilon)
	md, ed := floatParts(e.sensitivity)
	p := ee + e0 - ed - 1 // γ_i = me·D_i·2^p / md
	den := big.NewInt(md)
	if p < 0 {
		den.Lsh(den, uint(-p))
	}
	gammas := make([]*big.Int, len(u)) // numerators; nil: γ = 0
	for i, v := range u {
		if v == u[imax] {
			continue // accepted with probability 1
		}
		g := new(big.Int).Sub(mants[imax], mants[i])
		g.Mul(g, big.NewInt(me))
		if p > 0 {
			g.Lsh(g, uint(p))
		}
		gammas[i] = g
	}
	m := uint64(len(u))
	src.mu.Lock()
	defer src.mu.Unlock()
	for {
		i, err := src.uint64nLocked(m)
		if err != nil {
			return 0, err
		}
		g := gammas[i]
		if g == nil {
			return int(i), nil
		}
		ok, err := src.bernoulliExpLocked(g, den)
		if err != nil {
			return 0, err
		}
		if ok {
			return int(i), nil
		}
	}
}

// Probabilities returns the selection probabilities of Select for these
// scores, computed in float64 (a softmax), for tests and reporting only.
func (e *Exponential) Probabilities(scores []float64) ([]float64, error) {
	u, err := e.clamp(scores)
	if err != nil {
		return nil, err
	}
	return ExponentialProbabilities(e.epsilon, e.sensitivity, u), nil
}

// ExponentialProbabilities returns the softmax Pr[i] ∝ exp(ε u_i/(2Δ)) of the
// given (already clamped) scores in float64, for tests and reporting only. It
// does not validate its arguments; NaN inputs give NaN outputs.
func ExponentialProbabilities(epsilon, sensitivity float64, scores []float64) []float64 {
	p := make([]float64, len(scores))
	if len(scores) == 0 {
		return p
	}
	umax := math.Inf(-1)
	for _, v := range scores {
		umax = math.Max(umax, v)
	}
	c := epsilon / (2 * sensitivity)
	var sum float64
	for i, v := range scores {
		p[i] = math.Exp(c * (v - umax))
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// Cost returns the mechanism's privacy guarantee (ε, 0).
func (e *Exponential) Cost() (epsilon, delta float64) { return e.epsilon, 0 }

func (e *Exponential) clamp(scores []float64) ([]float64, error) {
	if len(scores) == 0 {
		return nil, errors.New("dp: exponential mechanism needs at least one candidate")
	}
	u := make([]float64, len(scores))
	for i, v := range scores {
		if math.IsNaN(v) {
			return nil, fmt.Errorf("dp: score %d is NaN", i)
		}
		u[i] = Clamp(v, e.lo, e.hi)
	}
	return u, nil
}

// floatParts returns the integer m and exponent e with x = m·2^e exactly
// (|m| < 2⁵³), for finite x.
func floatParts(x float64) (m int64, e int) {
	if x == 0 {
		return 0, 0
	}
	frac, exp := math.Frexp(x) // x = frac·2^exp, |frac| ∈ [½, 1)
	return int64(math.Ldexp(frac, 53)), exp - 53
}
