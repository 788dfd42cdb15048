package kusner

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privbo/privbo/pkg/gpucb"
	"gonum.org/v1/gonum/mat"
)

// Reference values in this file were computed with Python's math module from
// the formulas of Kusner et al. (2015), Algorithms 1–3 (docs/MATHS.md §3),
// e.g. for the worked example |Λ| = 100, δ = 1e-3, k1 = 0.5, σ² = 0.01, T = 20, γ_T = 5, ε = 1:
//
//	c   = 2*sqrt(0.5*log(3*100/1e-3))              = 5.022258008831951
//	c₂  = 2*sqrt(0.5*log(2*100/1e-3))              = 4.940864832300146
//	q   = sqrt(0.01)*sqrt(8*log(3/1e-3))           = 0.8003183150547161
//	C1  = 8/log(1 + 1/0.01)                        = 1.7334325226842533
//	β₂₀ = 2*log(100*20**2*pi**2/(3*1e-3))          = 37.390474990217804
//	β₂₁ = 2*log(100*21**2*pi**2/(3*1e-3))          = 37.58563564689553
//	Δv  = sqrt(C1*β₂₀*5/20) + c + q                = 9.84792927073045
//	Δu  = 2*sqrt(β₂₁) + c                          = 17.28368299076542
//	Alg. 2 (A = 1, τ = 0.5, d = 1): A*exp(-τ*20/log(20)**0.25) = 0.0004999204507131172,
//	        Δf = that + c₂                         = 4.941364752750859
//	        (d = 2: 0.003096094810215978)
const (
	refC      = 5.022258008831951
	refC2     = 4.940864832300146
	refQ      = 0.8003183150547161
	refC1     = 1.7334325226842533
	refBeta20 = 37.390474990217804
	refBeta21 = 37.58563564689553
	refDv     = 9.84792927073045
	refDu     = 17.28368299076542
	refOmega1 = 0.0004999204507131172
	refDf     = 4.941364752750859
	refOmega2 = 0.003096094810215978
)

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300)
}

func TestHelpers(t *testing.T) {
	const tol = 1e-13
	tests := []struct {
		name      string
		got, want float64
	}{
		{"C(0.5, 100, 1e-3, NoisyGP)", C(0.5, 100, 1e-3, NoisyGP), refC},
		{"C(0.5, 100, 1e-3, NoiseFree)", C(0.5, 100, 1e-3, NoiseFree), refC2},
		// 2*sqrt(log(3/0.5)) = 2.677132398091701 (k1 = 0, |Λ| = 1, δ = 0.5).
		{"C(0, 1, 0.5, NoisyGP)", C(0, 1, 0.5, NoisyGP), 2.677132398091701},
		{"Q(0.01, 1e-3)", Q(0.01, 1e-3), refQ},
		// sqrt(2)*sqrt(8*log(30)) = 7.376934194270307.
		{"Q(2, 0.1)", Q(2, 0.1), 7.376934194270307},
		{"C1(0.01)", C1(0.01), refC1},
		// 8/log(2) = 11.541560327111707.
		{"C1(1)", C1(1), 11.541560327111707},
		{"BetaT(100, 20, 1e-3)", BetaT(100, 20, 1e-3), refBeta20},
		{"BetaT(100, 21, 1e-3)", BetaT(100, 21, 1e-3), refBeta21},
		// 2*log(pi**2/(3*0.5)) = 3.767989327181272 (|Λ| = 1, t = 1, δ = 0.5).
		{"BetaT(1, 1, 0.5)", BetaT(1, 1, 0.5), 3.767989327181272},
		// (1 - 0.1)*1/(1*0.1) + min(1/500, 1/(500*0.1)) = 9 + 0.002.
		{"LipschitzDelta(0.1, 1, 1, 1, 500)", LipschitzDelta(0.1, 1, 1, 1, 500), 9.002},
		// g*/m = 0.2 > L/(m λmin) = 0.02: the second branch of the min.
		{"LipschitzDelta(0.1, 1, 1, 100, 500)", LipschitzDelta(0.1, 1, 1, 100, 500), 9.02},
		// λmin = λmax: only min(1/10, 2/(10*0.5)) = 0.1 remains.
		{"LipschitzDelta(0.5, 0.5, 2, 1, 10)", LipschitzDelta(0.5, 0.5, 2, 1, 10), 0.1},
	}
	for _, tc := range tests {
		if !near(tc.got, tc.want, tol) {
			t.Errorf("%s = %.17g, want %.17g", tc.name, tc.got, tc.want)
		}
	}
}

func TestHelpersInvalid(t *testing.T) {
	tests := []struct {
		name string
		got  float64
	}{
		{"C k1 = 1", C(1, 10, 0.1, NoisyGP)},
		{"C k1 < 0", C(-0.1, 10, 0.1, NoisyGP)},
		{"C n = 0", C(0.5, 0, 0.1, NoisyGP)},
		{"C δ = 0", C(0.5, 10, 0, NoisyGP)},
		{"C δ = 1", C(0.5, 10, 1, NoisyGP)},
		{"C Lipschitz", C(0.5, 10, 0.1, Lipschitz)},
		{"Q σ² < 0", Q(-1, 0.1)},
		{"Q δ = 0", Q(1, 0)},
		{"C1 σ² = 0", C1(0)},
		{"C1 σ² = Inf", C1(math.Inf(1))},
		{"BetaT t = 0", BetaT(10, 0, 0.1)},
		{"BetaT n = 0", BetaT(0, 1, 0.1)},
		{"BetaT δ NaN", BetaT(10, 1, math.NaN())},
		{"LipschitzDelta λmin = 0", LipschitzDelta(0, 1, 1, 1, 10)},
		{"LipschitzDelta λmax < λmin", LipschitzDelta(1, 0.5, 1, 1, 10)},
		{"LipschitzDelta L = 0", LipschitzDelta(0.1, 1, 0, 1, 10)},
		{"LipschitzDelta g* = 0", LipschitzDelta(0.1, 1, 1, 0, 10)},
		{"LipschitzDelta m = 0", LipschitzDelta(0.1, 1, 1, 1, 0)},
	}
	for _, tc := range tests {
		if !math.IsNaN(tc.got) {
			t.Errorf("%s = %g, want NaN", tc.name, tc.got)
		}
	}
}

// BetaT(n, t, δ) is gpucb.Beta(n, t, δ/2): Run relies on it to drive gpucb's
// schedule with Kusner's β_t.
func TestBetaTIsGPUCBBeta(t *testing.T) {
	for _, n := range []int{1, 50, 320} {
		for _, tt := range []int{1, 2, 20, 51} {
			for _, d := range []float64{1e-6, 1e-3, 0.1, 0.9} {
				if got, want := BetaT(n, tt, d), gpucb.Beta(n, tt, d/2); got != want {
					t.Errorf("BetaT(%d, %d, %g) = %.17g, want gpucb.Beta(…, δ/2) = %.17g", n, tt, d, got, want)
				}
			}
		}
	}
}

func grid1(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i) / float64(n-1)
	}
	return x
}

func TestConstantsWorkedExample(t *testing.T) {
	const tol = 1e-12
	base := Config{
		Candidates: grid1(100), N: 100, Dim: 1,
		Iterations: 20, Epsilon: 1, Delta: 1e-3, K1: 0.5, Lengthscale: 0.1,
	}
	alg1 := base
	alg1.Algorithm, alg1.NoiseVariance, alg1.GammaT = NoisyGP, 0.01, 5
	alg2 := base
	alg2.Algorithm, alg2.A, alg2.Tau = NoiseFree, 1, 0.5
	alg2d2 := alg2
	alg2d2.Candidates, alg2d2.N, alg2d2.Dim = make([]float64, 200), 100, 2
	alg1half := alg1
	alg1half.Epsilon = 0.5
	alg3 := Config{
		Algorithm: Lipschitz, Candidates: grid1(100), N: 100, Dim: 1, Iterations: 20, Epsilon: 0.5,
		LambdaMin: 0.1, LambdaMax: 1, L: 1, GStar: 1, M: 500,
	}
	type want struct{ cSel, cVal, q, c1, bT, bT1, regret, du, dv, scale float64 }
	tests := []struct {
		name string
		cfg  Config
		want want
	}{
		{"alg1", alg1, want{refC, refC, refQ, refC1, refBeta20, refBeta21, refDv - refC - refQ, refDu, refDv, refDv}},
		{"alg1 ε=0.5", alg1half, want{refC, refC, refQ, refC1, refBeta20, refBeta21, refDv - refC - refQ, refDu, refDv, 2 * refDv}},
		{"alg2", alg2, want{refC, refC2, 0, 0, refBeta20, refBeta21, refOmega1, refDu, refDf, refDf}},
		{"alg2 d=2", alg2d2, want{refC, refC2, 0, 0, refBeta20, refBeta21, refOmega2, refDu, refOmega2 + refC2, refOmega2 + refC2}},
		// Δ = 9.002, scale = 9.002/0.5.
		{"alg3", alg3, want{0, 0, 0, 0, 0, 0, 0, 0, 9.002, 18.004}},
	}
	for _, tc := range tests {
		k, err := tc.cfg.Constants()
		if err != nil {
			t.Fatalf("%s: Constants: %v", tc.name, err)
		}
		got := want{k.CSelect, k.CValue, k.Q, k.C1, k.BetaT, k.BetaT1, k.Regret, k.ExpSensitivity, k.LaplaceSensitivity, k.LaplaceScale}
		names := []string{"CSelect", "CValue", "Q", "C1", "BetaT", "BetaT1", "Regret", "ExpSensitivity", "LaplaceSensitivity", "LaplaceScale"}
		g := []float64{got.cSel, got.cVal, got.q, got.c1, got.bT, got.bT1, got.regret, got.du, got.dv, got.scale}
		w := []float64{tc.want.cSel, tc.want.cVal, tc.want.q, tc.want.c1, tc.want.bT, tc.want.bT1, tc.want.regret, tc.want.du, tc.want.dv, tc.want.scale}
		for i := range g {
			if !near(g[i], w[i], tol) && !(g[i] == 0 && w[i] == 0) {
				t.Errorf("%s: Constants().%s = %.17g, want %.17g", tc.name, names[i], g[i], w[i])
			}
		}
	}
}

func TestConstantsDefaults(t *testing.T) {
	cfg := Config{
		Algorithm: NoisyGP, Candidates: grid1(30), N: 30, Dim: 1,
		Iterations: 5, Epsilon: 1, Delta: 1e-3, K1: 0.5, NoiseVariance: 0.01,
	}
	k, err := cfg.Constants()
	if err != nil {
		t.Fatal(err)
	}
	if want := gpucb.DefaultLengthscale(cfg.Candidates, 30, 1); k.Lengthscale != want {
		t.Errorf("default Lengthscale = %g, want gpucb.DefaultLengthscale = %g", k.Lengthscale, want)
	}
	g, err := GammaGreedy(cfg.Candidates, 30, 1, k.Lengthscale, 0.01, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !k.GammaGreedy || k.GammaT != g {
		t.Errorf("GammaT = %g (greedy %v), want GammaGreedy = %g", k.GammaT, k.GammaGreedy, g)
	}
	if want := math.Sqrt(k.C1*k.BetaT*g/5) + k.CValue + k.Q; !near(k.LaplaceSensitivity, want, 1e-14) {
		t.Errorf("LaplaceSensitivity = %.17g, want √(C1 β_T γ_T/T) + c + q = %.17g", k.LaplaceSensitivity, want)
	}
	m := k.Map(NoisyGP)
	if m["gamma_T"] != g || m["laplace_scale"] != k.LaplaceScale || len(m) != 13 {
		t.Errorf("Map(NoisyGP) = %v, want 13 entries with gamma_T = %g", m, g)
	}
	if m3 := k.Map(Lipschitz); len(m3) != 4 {
		t.Errorf("Map(Lipschitz) has %d entries, want 4", len(m3))
	}
}

// infoGain returns ½ log det(I + σ⁻² K_A) for the SE kernel (unit signal
// variance), computed densely with gonum (independent of gpucb).
func infoGain(t *testing.T, cands []float64, dim int, l, s2 float64, a []int) float64 {
	t.Helper()
	n := len(a)
	m := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			var d2 float64
			for k := range dim {
				d := cands[a[i]*dim+k] - cands[a[j]*dim+k]
				d2 += d * d
			}
			v := math.Exp(-d2/(2*l*l)) / s2
			if i == j {
				v++
			}
			m.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(m) {
		t.Fatalf("I + σ⁻²K_A not positive definite for A = %v", a)
	}
	return ch.LogDet() / 2
}

func TestGammaGreedyT1(t *testing.T) {
	// With T = 1 every single point has gain ½ log(1 + σ⁻²):
	// 0.5*log(1 + 1/0.01)/(1 - exp(-1)) = 3.6505065785188 (Python).
	got, err := GammaGreedy(grid1(7), 7, 1, 0.3, 0.01, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got, 3.6505065785188, 1e-12) {
		t.Errorf("GammaGreedy(T = 1, σ² = 0.01) = %.15g, want 3.6505065785188", got)
	}
}

// On a case small enough to enumerate every sequence of T points (with
// repeats), greedy·(1 − 1/e) ≤ γ_T ≤ GammaGreedy.
func TestGammaGreedyBruteForce(t *testing.T) {
	tests := []struct {
		n, T  int
		l, s2 float64
	}{
		{6, 3, 0.3, 0.01},
		{5, 4, 0.1, 0.5},
		{6, 3, 2, 1e-4}, // strongly correlated points
	}
	for _, tc := range tests {
		cands := grid1(tc.n)
		got, err := GammaGreedy(cands, tc.n, 1, tc.l, tc.s2, tc.T)
		if err != nil {
			t.Fatal(err)
		}
		opt := math.Inf(-1)
		a := make([]int, tc.T)
		var rec func(k int)
		rec = func(k int) {
			if k == tc.T {
				opt = math.Max(opt, infoGain(t, cands, 1, tc.l, tc.s2, a))
				return
			}
			for i := range tc.n {
				a[k] = i
				rec(k + 1)
			}
		}
		rec(0)
		if got < opt*(1-1e-12) {
			t.Errorf("GammaGreedy(n=%d, T=%d, l=%g, σ²=%g) = %g, want ≥ γ_T = %g", tc.n, tc.T, tc.l, tc.s2, got, opt)
		}
		if g := got * (1 - 1/math.E); g > opt*(1+1e-12) {
			t.Errorf("greedy value F(A_g) = %g exceeds γ_T = %g (n=%d, T=%d)", g, opt, tc.n, tc.T)
		}
	}
}

// GammaGreedy is at least the information gain of 200 random sets of size T
// (|Λ| = 30 in 2-D, T = 5).
func TestGammaGreedyRandomSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dim, T = 30, 2, 5
	cands := make([]float64, n*dim)
	for i := range cands {
		cands[i] = rng.Float64()
	}
	for _, s2 := range []float64{1e-3, 0.1, 1} {
		got, err := GammaGreedy(cands, n, dim, 0.25, s2, T)
		if err != nil {
			t.Fatal(err)
		}
		for r := range 200 {
			a := make([]int, T)
			for k := range a {
				a[k] = rng.IntN(n)
			}
			if g := infoGain(t, cands, dim, 0.25, s2, a); g > got {
				t.Errorf("σ² = %g: random set %d %v has information gain %g > GammaGreedy = %g", s2, r, a, g, got)
			}
		}
	}
}

func TestGammaGreedyErrors(t *testing.T) {
	c := grid1(5)
	if _, err := GammaGreedy(c, 5, 1, 0.3, 0, 3); err == nil {
		t.Error("GammaGreedy(σ² = 0) succeeded, want error")
	}
	if _, err := GammaGreedy(c, 5, 1, 0.3, 0.1, 0); err == nil {
		t.Error("GammaGreedy(T = 0) succeeded, want error")
	}
	if _, err := GammaGreedy(c, 5, 1, -1, 0.1, 3); err == nil {
		t.Error("GammaGreedy(lengthscale = -1) succeeded, want error")
	}
	defer func() {
		if recover() == nil {
			t.Error("GammaGreedy with 5 values for 4×1 candidates did not panic")
		}
	}()
	GammaGreedy(c, 4, 1, 0.3, 0.1, 3)
}
