package kusner

import (
	"cmp"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/gpucb"
)

// C returns the paper's c, the high-probability bound on |f_V(λ) − f_V'(λ)|
// over Λ for neighbouring validation sets:
//
//	Algorithm 1 (Theorem 1):  c = 2 √((1 − k1) log(3|Λ|/δ))
//	Algorithm 2 (Theorem 5):  c = 2 √((1 − k1) log(2|Λ|/δ))
//
// for n = |Λ| candidates. It returns NaN for Algorithm 3 (which has no c) or
// unless n ≥ 1, 0 ≤ k1 < 1 and 0 < δ < 1.
func C(k1 float64, n int, delta float64, alg Algorithm) float64 {
	if n < 1 || !(k1 >= 0 && k1 < 1) || !(delta > 0 && delta < 1) {
		return math.NaN()
	}
	var split float64
	switch alg {
	case NoisyGP:
		split = 3
	case NoiseFree:
		split = 2
	default:
		return math.NaN()
	}
	return 2 * math.Sqrt((1-k1)*math.Log(split*float64(n)/delta))
}

// Q returns q = σ √(8 log(3/δ)) (Algorithm 1, line 10), with σ = √sigma2 the
// observation noise's standard deviation: with probability ≥ 1 − δ/3 the
// noise of the two observations compared in Theorem 3 differs by at most q.
// It returns NaN unless sigma2 ≥ 0 is finite and 0 < δ < 1.
func Q(sigma2, delta float64) float64 {
	if !(sigma2 >= 0) || math.IsInf(sigma2, 0) || !(delta > 0 && delta < 1) {
		return math.NaN()
	}
	return math.Sqrt(sigma2) * math.Sqrt(8*math.Log(3/delta))
}

// C1 returns C1 = 8 / log(1 + σ⁻²) (Srinivas et al. 2010, Theorem 1;
// Algorithm 1, line 11). It returns NaN unless sigma2 > 0 is finite.
func C1(sigma2 float64) float64 {
	if !(sigma2 > 0) || math.IsInf(sigma2, 0) {
		return math.NaN()
	}
	return 8 / math.Log1p(1/sigma2)
}

// BetaT returns the paper's exploration weight β_t = 2 log(|Λ| t² π² / (3δ))
// for n = |Λ| candidates at the 1-based iteration t (Algorithm 1, line 4;
// note 3δ where Srinivas et al. and gpucb.Beta have 6δ': this is
// gpucb.Beta(n, t, δ/2)). It returns NaN unless n ≥ 1, t ≥ 1 and 0 < δ < 1.
func BetaT(n, t int, delta float64) float64 {
	if n < 1 || t < 1 || !(delta > 0 && delta < 1) {
		return math.NaN()
	}
	ft := float64(t)
	return 2 * math.Log(float64(n)*ft*ft*math.Pi*math.Pi/(3*delta))
}

// LipschitzDelta returns the global sensitivity of Algorithm 3's best
// validation score (Theorem 7 maximised over [λ_min, λ_max]):
//
//	Δ = (λ_max − λ_min) L / (λ_max λ_min) + min(g*/m, L/(m λ_min))
//
// It returns NaN unless 0 < λ_min ≤ λ_max, L > 0, g* > 0 (all finite) and
// m ≥ 1.
func LipschitzDelta(lambdaMin, lambdaMax, L, gStar float64, m int) float64 {
	c := Config{LambdaMin: lambdaMin, LambdaMax: lambdaMax, L: L, GStar: gStar, M: m}
	if c.validateLipschitz() != nil {
		return math.NaN()
	}
	fm := float64(m)
	return (lambdaMax-lambdaMin)*L/(lambdaMax*lambdaMin) + math.Min(gStar/fm, L/(fm*lambdaMin))
}

// GammaGreedy returns an upper bound on the maximum information gain
//
//	γ_T = max_{A ⊆ Λ, |A| = T} ½ log det(I + σ⁻² K_A)
//
// of the squared exponential GP (unit signal variance, the given
// lengthscale, noise variance sigma2) over the n candidates cands (row-major
// n×dim): the value F(A_g) of the greedy set, which adds one point at a time
// maximising the gain ½ log(1 + σ⁻² σ²_{A}(λ)) (the posterior variance under
// noise σ²; repeats allowed, ties to the lowest index), divided by 1 − 1/e.
// F is monotone submodular, so F(A_g) ≥ (1 − 1/e) γ_T (Nemhauser, Wolsey &
// Fisher 1978; Srinivas et al. 2010, §5) and the result is ≥ γ_T. Cost
// O(T·n·(dim + T)).
//
// It returns an error unless lengthscale > 0, sigma2 > 0 (finite), T ≥ 1 and
// the candidates are finite; it panics if len(cands) ≠ n·dim.
func GammaGreedy(cands []float64, n, dim int, lengthscale, sigma2 float64, T int) (float64, error) {
	if n < 0 || dim < 0 || n*dim != len(cands) {
		panic(fmt.Sprintf("kusner: GammaGreedy: %d values for %d×%d candidates", len(cands), n, dim))
	}
	if !(sigma2 > 0) || math.IsInf(sigma2, 0) {
		return 0, fmt.Errorf("kusner: information gain needs a positive finite noise variance, got %g", sigma2)
	}
	if T < 1 {
		return 0, fmt.Errorf("kusner: information gain needs T ≥ 1, got %d", T)
	}
	gp, err := gpucb.New(cands, n, dim, gpucb.Config{
		Kernel:         gpucb.SquaredExponential,
		Lengthscale:    lengthscale,
		SignalVariance: 1,
		NoiseVariance:  sigma2,
		ConstantBeta:   1, // unused: only the variances are read
		Workers:        1,
		Capacity:       T,
	})
	if err != nil {
		return 0, fmt.Errorf("kusner: information gain: %w", err)
	}
	var gain float64
	for t := range T {
		best, bestVar := 0, gp.Variance(0)
		for i := 1; i < n; i++ {
			if v := gp.Variance(i); v > bestVar {
				best, bestVar = i, v
			}
		}
		gain += 0.5 * math.Log1p(bestVar/sigma2)
		if t == T-1 {
			break
		}
		// The output does not affect the variances.
		if err := gp.Observe(best, 0); err != nil {
			return 0, fmt.Errorf("kusner: information gain: %w", err)
		}
	}
	return gain / (1 - 1/math.E), nil
}

// Constants are the public, data-independent quantities of a run: they
// depend on the Config only and may be shown to anyone.
type Constants struct {
	// Lengthscale is the kernel lengthscale used (after the default).
	Lengthscale float64
	// NoiseVariance is the GP's observation-noise variance used.
	NoiseVariance float64

	// CSelect is Theorem 1's c (log(3|Λ|/δ)), used in ExpSensitivity
	// (Algorithms 1 and 2). CValue is the c in LaplaceSensitivity:
	// the same for Algorithm 1, Theorem 5's c (log(2|Λ|/δ)) for Algorithm 2.
	CSelect, CValue float64
	// Q and C1 are Algorithm 1's q and C1.
	Q, C1 float64
	// BetaT and BetaT1 are β_T and β_{T+1} (Algorithms 1 and 2).
	BetaT, BetaT1 float64
	// GammaT is the γ_T used (Algorithm 1); GammaGreedy reports whether it
	// is the greedy upper bound rather than the caller's value.
	GammaT      float64
	GammaGreedy bool
	// Regret is the regret term of the value's sensitivity:
	// √(C1 β_T γ_T / T) (Algorithm 1) or A e^{−τT/(log T)^{d/4}}
	// (Algorithm 2).
	Regret float64

	// ExpSensitivity is Δu = 2 √β_{T+1} + c of the exponential mechanism
	// (Algorithms 1 and 2).
	ExpSensitivity float64
	// LaplaceSensitivity is the Δ of the released value: Regret + c + q
	// (Algorithm 1), Regret + c₂ (Algorithm 2), LipschitzDelta
	// (Algorithm 3). LaplaceScale is the nominal noise scale Δ/ε.
	LaplaceSensitivity, LaplaceScale float64
}

// Map returns the constants that apply to alg by name, for reports.
func (k Constants) Map(alg Algorithm) map[string]float64 {
	m := map[string]float64{
		"lengthscale":         k.Lengthscale,
		"noise_variance":      k.NoiseVariance,
		"laplace_sensitivity": k.LaplaceSensitivity,
		"laplace_scale":       k.LaplaceScale,
	}
	if alg == Lipschitz {
		return m
	}
	m["c_select"] = k.CSelect
	m["c_value"] = k.CValue
	m["beta_T"] = k.BetaT
	m["beta_T1"] = k.BetaT1
	m["regret"] = k.Regret
	m["exp_sensitivity"] = k.ExpSensitivity
	if alg == NoisyGP {
		m["q"] = k.Q
		m["C1"] = k.C1
		m["gamma_T"] = k.GammaT
	}
	return m
}

// Constants validates c and returns its public constants. It computes the
// greedy γ_T when needed (O(T·N·(Dim + T))). A Config for which Constants
// succeeds does not fail in Run for a reason of its parameters.
func (c Config) Constants() (Constants, error) {
	k, _, err := c.plan()
	return k, err
}

// plan validates c, computes its constants and builds the value's Laplace
// mechanism; no data is touched.
func (c Config) plan() (Constants, *dp.Laplace, error) {
	if err := c.Validate(); err != nil {
		return Constants{}, nil, err
	}
	k := Constants{Lengthscale: c.Lengthscale}
	if k.Lengthscale == 0 {
		k.Lengthscale = gpucb.DefaultLengthscale(c.Candidates, c.N, c.Dim)
	}
	T := c.Iterations
	switch c.Algorithm {
	case NoisyGP:
		k.NoiseVariance = c.NoiseVariance
		k.CSelect = C(c.K1, c.N, c.Delta, NoisyGP)
		k.CValue = k.CSelect
		k.Q = Q(c.NoiseVariance, c.Delta)
		k.C1 = C1(c.NoiseVariance)
		k.BetaT = BetaT(c.N, T, c.Delta)
		k.BetaT1 = BetaT(c.N, T+1, c.Delta)
		k.GammaT = c.GammaT
		if k.GammaT == 0 {
			g, err := GammaGreedy(c.Candidates, c.N, c.Dim, k.Lengthscale, c.NoiseVariance, T)
			if err != nil {
				return Constants{}, nil, err
			}
			k.GammaT, k.GammaGreedy = g, true
		}
		k.Regret = math.Sqrt(k.C1 * k.BetaT * k.GammaT / float64(T))
		k.LaplaceSensitivity = k.Regret + k.CValue + k.Q
	case NoiseFree:
		k.NoiseVariance = NoiseFreeJitter
		k.CSelect = C(c.K1, c.N, c.Delta, NoisyGP)
		k.CValue = C(c.K1, c.N, c.Delta, NoiseFree)
		k.BetaT = BetaT(c.N, T, c.Delta)
		k.BetaT1 = BetaT(c.N, T+1, c.Delta)
		fT := float64(T)
		k.Regret = c.A * math.Exp(-c.Tau*fT/math.Pow(math.Log(fT), float64(c.Dim)/4))
		k.LaplaceSensitivity = k.Regret + k.CValue
	case Lipschitz:
		k.NoiseVariance = c.NoiseVariance
		k.NoiseVariance = cmp.Or(k.NoiseVariance, NoiseFreeJitter)
		k.LaplaceSensitivity = LipschitzDelta(c.LambdaMin, c.LambdaMax, c.L, c.GStar, c.M)
	}
	if c.Algorithm != Lipschitz {
		k.ExpSensitivity = 2*math.Sqrt(k.BetaT1) + k.CSelect
		// Probe the exponential mechanism's parameters now: its score
		// range is only known after the search.
		if _, err := dp.NewExponential(c.Epsilon, k.ExpSensitivity, 0, 1); err != nil {
			return Constants{}, nil, fmt.Errorf("kusner: hyperparameter release: %w", err)
		}
	}
	k.LaplaceScale = k.LaplaceSensitivity / c.Epsilon
	lap, err := dp.NewLaplace(c.Epsilon, k.LaplaceSensitivity)
	if err != nil {
		return Constants{}, nil, fmt.Errorf("kusner: value release: %w", err)
	}
	return k, lap, nil
}
