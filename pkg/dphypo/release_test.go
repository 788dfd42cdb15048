package dphypo

import (
	"math"
	"sort"
	"testing"
)

// releasedMean is the expected actual accuracy of the run a search releases when every
// run draws its grid point from the fixed density p, reads m_i + N(0, sd²), and T ~
// Geometric(γ) on k ≥ 1 (NegBin(1, γ)): the semi-real protocol of Wang et al. 2023,
// §4.2.1, with a sampling rule that does not learn. The released point is the argmax of
// the T reads, so
//
//	P(release i) = Σ_k P(T=k) k p_i ∫ φ_i(x) F(x)^{k−1} dx = p_i ∫ φ_i(x) G′(F(x)) dx,
//
// with φ_i the density of a read at i, F(x) = Σ_j p_j Φ((x − m_j)/sd) the distribution
// function of one read, and G′(s) = γ/(1 − (1−γ)s)² the derivative of the geometric's
// generating function G(s) = γs/(1 − (1−γ)s). The integral is Simpson's rule on
// [min m − 9 sd, max m + 9 sd] with at least 1,000 intervals and 8 per sd.
func releasedMean(m, p []float64, sd, gamma float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	lo, hi = lo-9*sd, hi+9*sd
	n := 2 * max(500, int(math.Ceil((hi-lo)/(sd/4))))
	h := (hi - lo) / float64(n)
	var sum float64
	for k := 0; k <= n; k++ {
		x := lo + float64(k)*h
		f := 0.0
		for j := range m {
			f += p[j] * 0.5 * math.Erfc(-(x-m[j])/(sd*math.Sqrt2))
		}
		g := gamma / math.Pow(1-(1-gamma)*min(f, 1), 2)
		v := 0.0
		for i := range m {
			z := (x - m[i]) / sd
			v += m[i] * p[i] * math.Exp(-z*z/2) / (sd * math.Sqrt(2*math.Pi))
		}
		w := 2.0
		switch {
		case k == 0 || k == n:
			w = 1
		case k%2 == 1:
			w = 4
		}
		sum += w * g * v
	}
	return sum * h / 3
}

// TestReleasedMean checks releasedMean against cases solved by hand: equal means release
// that mean; with reads almost noiseless, two points release the better one exactly when
// it is drawn at least once, with probability 1 − G(1 − p) = 1 − γ(1−p)/(1 − (1−γ)(1−p)).
func TestReleasedMean(t *testing.T) {
	if got := releasedMean([]float64{0.7, 0.7, 0.7}, []float64{0.2, 0.3, 0.5}, 0.1, 0.05); math.Abs(got-0.7) > 1e-9 {
		t.Errorf("releasedMean(equal means 0.7) = %.12f, want 0.7", got)
	}
	for _, c := range []struct{ p, gamma float64 }{{0.5, 0.5}, {0.1, 0.2}, {0.02, 0.01}} {
		q := 1 - c.p
		hit := 1 - c.gamma*q/(1-(1-c.gamma)*q)
		want := 0.2 + 0.6*hit
		if got := releasedMean([]float64{0.2, 0.8}, []float64{q, c.p}, 1e-3, c.gamma); math.Abs(got-want) > 1e-6 {
			t.Errorf("releasedMean(0.2, 0.8; p=%g, γ=%g) = %.9f, want %.9f", c.p, c.gamma, got, want)
		}
	}
}

// oracleDensity is the most a density in S_{C,c} can favour the best grid points: the
// projection of their ranking (C/N on the best points in order until the mass runs
// out, c/N on the rest).
func oracleDensity(t *testing.T, m []float64, bigC, smallC float64) []float64 {
	n := len(m)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return m[order[x]] > m[order[y]] })
	pi := make([]float64, n) // consecutive ranks C/N apart: the projection fills by rank
	for r, i := range order {
		pi[i] = -float64(r) * bigC / float64(n)
	}
	p, err := ProjectDensity(pi, bigC, smallC)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// broadLandscape has n points whose means fall linearly from top: a fifth of them within
// 0.05 of the best, as on the digits (22% at noise multiplier 1.25).
func broadLandscape(n int, top float64) []float64 {
	m := make([]float64, n)
	for i := range m {
		m[i] = top - 0.25*float64(i)/float64(n-1)
	}
	return m
}

// narrowLandscape has one good point in n, the rest 0.3 below it.
func narrowLandscape(n int, top float64) []float64 {
	m := make([]float64, n)
	for i := range m {
		m[i] = top - 0.3
	}
	m[0] = top
	return m
}

func shift(m []float64, d float64) []float64 {
	out := make([]float64, len(m))
	for i, v := range m {
		out[i] = v + d
	}
	return out
}

// TestBoundsLeaveRoom: under the paper's reads (mean + N(0, 0.1²)), sampling the true
// ranking as far as C = 2, c = 0.75 allow (the best fifth at twice the uniform density)
// gains 0.009–0.023 on a landscape with a fifth of its points within 0.05 of the best,
// like the digits, and keeps a gain after a price of 0.005 — the GP search's noisier
// DP-SGD lowers the digits landscape by 0.005–0.007 at ε = 15. With one good point in a
// hundred it gains 0.02–0.055. So the bounds are not what stops the GP rule
// (TestGPRuleTiltsLittleUnderNoisyReads is).
func TestBoundsLeaveRoom(t *testing.T) {
	const price = 0.005
	for _, c := range []struct {
		name   string
		m      []float64
		lo, hi float64 // bounds on the oracle's gain over uniform search at equal noise
	}{
		{"broad (a fifth within 0.05 of the best)", broadLandscape(100, 0.9), 0.008, 0.025},
		{"narrow (one good point in a hundred)", narrowLandscape(100, 0.9), 0.02, 0.06},
	} {
		u := make([]float64, len(c.m))
		for i := range u {
			u[i] = 1 / float64(len(u))
		}
		o := oracleDensity(t, c.m, 2, 0.75)
		for _, runs := range []float64{10, 100.0 / 3, 100, 1000} {
			g := 1 / runs
			unif := releasedMean(c.m, u, 0.1, g)
			gain := releasedMean(c.m, o, 0.1, g) - unif
			if gain < c.lo || gain > c.hi {
				t.Errorf("%s, E[T]=%.4g: oracle − uniform = %.5f at equal noise, want in [%g, %g]", c.name, runs, gain, c.lo, c.hi)
			}
			if atEps := releasedMean(shift(c.m, -price), o, 0.1, g) - unif; atEps <= 0 {
				t.Errorf("%s, E[T]=%.4g: oracle − uniform = %+.5f after the price %g, want positive", c.name, runs, atEps, price)
			}
		}
	}
}
