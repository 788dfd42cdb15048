package dphypo

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/privbo/privbo/pkg/dp"
)

// ProjectDensity returns the Euclidean projection of pi (N values) onto
// S_{C,c} = {f : c/N ≤ f_i ≤ C/N, Σ f_i = 1}, which needs 0 ≤ c ≤ 1 ≤ C.
// By the KKT conditions the solution is f_i = clip(π_i − ν, c/N, C/N) for
// the scalar ν with Σ f_i = 1; Σ clip(π_i − ν) is continuous and
// non-increasing in ν, so ν is found by bisection to adjacent floats, then
// refined by solving the linear equation on the coordinates strictly
// between the bounds. pi need not sum to 1. The result sums to 1 up to
// rounding (a few ulps times N).
func ProjectDensity(pi []float64, bigC, smallC float64) ([]float64, error) {
	n := len(pi)
	if n == 0 {
		return nil, errors.New("dphypo: cannot project an empty density")
	}
	if !(smallC >= 0 && smallC <= 1) {
		return nil, fmt.Errorf("dphypo: lower density bound c must be in [0, 1], got %g", smallC)
	}
	if !(bigC >= 1) || math.IsInf(bigC, 0) {
		return nil, fmt.Errorf("dphypo: upper density bound C must be finite and ≥ 1, got %g", bigC)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, p := range pi {
		if math.IsNaN(p) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("dphypo: density value %d is not finite (%g)", i, p)
		}
		lo, hi = math.Min(lo, p), math.Max(hi, p)
	}
	fn := float64(n)
	l, u := smallC/fn, bigC/fn
	f := make([]float64, n)
	sum := func(nu float64) float64 {
		var s float64
		for _, p := range pi {
			s += min(max(p-nu, l), u)
		}
		return s
	}
	// At ν = min π − C/N every f_i = C/N (sum C ≥ 1); at ν = max π − c/N
	// every f_i = c/N (sum c ≤ 1).
	a, b := lo-u, hi-l
	for range 2100 {
		mid := a + (b-a)/2
		if mid <= a || mid >= b {
			break
		}
		if sum(mid) >= 1 {
			a = mid
		} else {
			b = mid
		}
	}
	nu := a
	// Refine: on the interior set I, Σ_I (π_i − ν) = 1 − Σ_{bounds}.
	var rest, inner float64
	k := 0
	for _, p := range pi {
		switch v := p - nu; {
		case v <= l:
			rest += l
		case v >= u:
			rest += u
		default:
			inner += p
			k++
		}
	}
	if k > 0 {
		// Keep the refined ν only if it does at least as well (it can fail
		// to when the interior set is not the one of the exact ν).
		if nu2 := (inner - (1 - rest)) / float64(k); math.Abs(sum(nu2)-1) <= math.Abs(sum(nu)-1) {
			nu = nu2
		}
	}
	for i, p := range pi {
		f[i] = min(max(p-nu, l), u)
	}
	return f, nil
}

// sampleIndex draws i with probability f_i/Σf, exactly: each float64 f_i
// is an integer multiple of 2^e for a common e, so the weights become
// big integers w_i, and i is found from U uniform on [0, Σw) (src.BigIntn)
// by a cumulative scan. Before sampling it checks, in exact rational
// arithmetic, that every normalised weight lies in [c/N, C/N] (the
// hypothesis of DP-HyPO's theorems); when rounding in the projection leaves
// a weight a few ulps outside, it mixes f with the uniform density (which
// satisfies the bounds since c ≤ 1 ≤ C) with weight t = 2^{−40}, 2^{−39}, …
// until the exact check passes (t = 1 is uniform). So the distribution
// actually sampled satisfies the density bounds exactly.
func sampleIndex(src *dp.Source, f []float64, bigC, smallC float64) (int, error) {
	n := len(f)
	w, total := exactWeights(f)
	for t := math.Ldexp(1, -40); !withinBounds(w, total, n, bigC, smallC); t *= 2 {
		if t >= 1 {
			w, total = exactWeights(uniform(n))
			break
		}
		mix := make([]float64, n)
		for i, v := range f {
			mix[i] = (1-t)*v + t/float64(n)
		}
		w, total = exactWeights(mix)
	}
	u, err := src.BigIntn(total)
	if err != nil {
		return 0, err
	}
	acc := new(big.Int)
	for i, wi := range w {
		acc.Add(acc, wi)
		if u.Cmp(acc) < 0 {
			return i, nil
		}
	}
	return 0, errors.New("dphypo: internal error: sampling scan ran past the total weight")
}

// exactWeights returns integers w_i with w_i/Σw = f_i/Σf exactly, for
// finite f_i ≥ 0 (negative values count as 0), and their sum.
func exactWeights(f []float64) ([]*big.Int, *big.Int) {
	emin := math.MaxInt
	mant := make([]int64, len(f))
	exp := make([]int, len(f))
	for i, v := range f {
		if !(v > 0) {
			continue
		}
		fr, e := math.Frexp(v)
		mant[i] = int64(math.Ldexp(fr, 53)) // exact: fr has 53 significant bits
		exp[i] = e - 53
		emin = min(emin, exp[i])
	}
	w := make([]*big.Int, len(f))
	total := new(big.Int)
	for i := range f {
		w[i] = new(big.Int)
		if mant[i] != 0 {
			w[i].SetInt64(mant[i])
			w[i].Lsh(w[i], uint(exp[i]-emin))
		}
		total.Add(total, w[i])
	}
	return w, total
}

// withinBounds reports whether c ≤ N·w_i/W ≤ C for every i, exactly.
func withinBounds(w []*big.Int, total *big.Int, n int, bigC, smallC float64) bool {
	if total.Sign() <= 0 {
		return false
	}
	cr := new(big.Rat).SetFloat64(smallC)
	Cr := new(big.Rat).SetFloat64(bigC)
	r := new(big.Rat)
	nb := big.NewInt(int64(n))
	x := new(big.Int)
	for _, wi := range w {
		r.SetFrac(x.Mul(wi, nb), total)
		if r.Cmp(cr) < 0 || r.Cmp(Cr) > 0 {
			return false
		}
	}
	return true
}

func uniform(n int) []float64 {
	u := make([]float64, n)
	for i := range u {
		u[i] = 1 / float64(n)
	}
	return u
}
