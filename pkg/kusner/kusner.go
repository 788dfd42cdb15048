package kusner

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
)

// Relation is the neighbour relation of every guarantee this package gives
// (Kusner et al. 2015, §2): two validation sets V, V' of the same public size
// m are neighbours when one record of V is replaced by any other record.
// Nothing here protects the training records: the learner is trained on them
// as they are (the paper's setting, in which the training set is not
// sensitive). It is privacy.RelationValidationRecord.
const Relation = privacy.RelationValidationRecord

// relationWords states Relation, and what it leaves unprotected, in every
// Guarantee text.
const relationWords = " Neighbour relation " + string(Relation) + ": one record of the validation set is replaced by any " +
	"other record (the validation size is public). The training records are NOT protected: the learner is trained on " +
	"them without any privacy mechanism (Kusner et al.'s setting, in which the training set is not sensitive), so a " +
	"change of one training record is not covered by this guarantee."

// Algorithm selects one of the paper's three algorithms. The zero value is
// invalid, so a forgotten field is an error rather than Algorithm 1.
type Algorithm int

const (
	// NoisyGP is Algorithm 1: GP assumption, noisy observations; releases
	// λ̃ and ṽ, (2ε, 2δ)-DP.
	NoisyGP Algorithm = iota + 1
	// NoiseFree is Algorithm 2: GP assumption, exact observations; releases
	// λ̃ and f̃, (2ε, 2δ)-DP.
	NoiseFree
	// Lipschitz is Algorithm 3: Lipschitz and convex learner, no GP
	// assumption; releases f̃_L only, (ε, 0)-DP.
	Lipschitz
)

// String returns the algorithm's name: "noisy-gp", "noise-free" or
// "lipschitz".
func (a Algorithm) String() string {
	switch a {
	case NoisyGP:
		return "noisy-gp"
	case NoiseFree:
		return "noise-free"
	case Lipschitz:
		return "lipschitz"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

func (a Algorithm) valid() bool { return a >= NoisyGP && a <= Lipschitz }

const (
	// NoiseFreeJitter is the observation-noise variance of the GP in
	// Algorithm 2 (and Algorithm 3 when Config.NoiseVariance is 0): exact
	// observations, with a variance small beside the prior's 1 that keeps
	// the Cholesky factor well conditioned when a candidate is observed
	// again or two candidates nearly coincide.
	NoiseFreeJitter = 1e-6
	// MinNoiseVariance is the smallest σ² accepted for Algorithm 1 (and a
	// non-zero σ² for Algorithm 3): below it a repeated query makes the GP
	// numerically singular. Use Algorithm 2 for exact observations.
	MinNoiseVariance = 1e-8
	// SearchDelta is the δ' of the GP-UCB schedule β_t = 2 log(|Λ| t² π²/(6δ'))
	// that drives Algorithm 3's search. It has no role in privacy.
	SearchDelta = 0.05
)

// Objective returns the validation gain f_V(λ_i) of candidate i (Algorithm 1:
// a noisy observation of it). Its values depend on the sensitive validation
// set and never leave Run. An error aborts Run.
type Objective func(ctx context.Context, i int) (float64, error)

// Config describes one private optimisation. Fields an algorithm does not
// use are ignored.
type Config struct {
	Algorithm Algorithm

	// Candidates is Λ as GP input coordinates, row-major N×Dim (for example
	// grid coordinates normalised to [0, 1] per axis). Not modified; Run
	// and Constants read it only while they run.
	Candidates []float64
	N, Dim     int

	// Iterations is T ≥ 1 (T ≥ 2 for Algorithm 2).
	Iterations int
	// Epsilon > 0 is the ε of each release; Delta ∈ (0, 1) the δ of each
	// release of Algorithms 1 and 2 (unused by Algorithm 3). See Cost.
	Epsilon, Delta float64
	// K1 ∈ [0, 1) is k1(V, V'), the dataset kernel's value for neighbouring
	// validation sets (Algorithms 1 and 2).
	K1 float64
	// NoiseVariance is σ²: Algorithm 1's observation-noise variance
	// (≥ MinNoiseVariance); Algorithm 3's GP noise (0 means
	// NoiseFreeJitter). Algorithm 2 always uses NoiseFreeJitter.
	NoiseVariance float64
	// GammaT > 0 is a known bound on the maximum information gain γ_T
	// (Algorithm 1); 0 means the greedy upper bound GammaGreedy.
	GammaT float64
	// A, Tau > 0 are Algorithm 2's constants of de Freitas et al. (2012).
	A, Tau float64
	// Lengthscale > 0 of the squared exponential kernel k2 over Candidates;
	// 0 means gpucb.DefaultLengthscale(Candidates, N, Dim).
	Lengthscale float64

	// Algorithm 3: every regularisation strength of the grid lies in
	// [LambdaMin, LambdaMax] (0 < LambdaMin ≤ LambdaMax); L > 0 is the
	// Lipschitz constant of the validation loss g in w, GStar > 0 bounds g,
	// M ≥ 1 is the validation set size.
	LambdaMin, LambdaMax, L, GStar float64
	M                              int
}

// Validate checks every parameter the algorithm uses and returns an error
// naming the first bad one.
func (c Config) Validate() error {
	if !c.Algorithm.valid() {
		if c.Algorithm == 0 {
			return errors.New("kusner: algorithm not set (want noisy-gp, noise-free or lipschitz)")
		}
		return fmt.Errorf("kusner: unknown algorithm %d (want 1, 2 or 3)", int(c.Algorithm))
	}
	if c.N < 1 {
		return fmt.Errorf("kusner: the grid is empty (N = %d candidates)", c.N)
	}
	if c.Dim < 1 {
		return fmt.Errorf("kusner: candidate dimension must be at least 1, got %d", c.Dim)
	}
	if c.N > math.MaxInt/c.Dim || len(c.Candidates) != c.N*c.Dim {
		return fmt.Errorf("kusner: candidates have %d coordinates, want N×Dim = %d×%d", len(c.Candidates), c.N, c.Dim)
	}
	for k, x := range c.Candidates {
		if !finite(x) {
			return fmt.Errorf("kusner: candidate %d, coordinate %d is not finite (%g)", k/c.Dim, k%c.Dim, x)
		}
	}
	minT := 1
	if c.Algorithm == NoiseFree {
		minT = 2 // (log T)^{d/4} = 0 at T = 1
	}
	if c.Iterations < minT {
		return fmt.Errorf("kusner: %v needs at least %d iterations, got %d", c.Algorithm, minT, c.Iterations)
	}
	if err := dp.ValidateEpsilon(c.Epsilon); err != nil {
		return fmt.Errorf("kusner: %w", err)
	}
	if !(c.Lengthscale >= 0) || math.IsInf(c.Lengthscale, 0) {
		return fmt.Errorf("kusner: lengthscale must be positive and finite (0 = default), got %g", c.Lengthscale)
	}
	if c.Algorithm == Lipschitz {
		return c.validateLipschitz()
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("kusner: %v needs delta in (0, 1), got %g", c.Algorithm, c.Delta)
	}
	if !(c.K1 >= 0 && c.K1 < 1) {
		return fmt.Errorf("kusner: k1(V, V') must be in [0, 1), got %g", c.K1)
	}
	if c.Algorithm == NoisyGP {
		if !(c.NoiseVariance >= MinNoiseVariance) || math.IsInf(c.NoiseVariance, 0) {
			return fmt.Errorf("kusner: noisy-gp needs a finite noise variance σ² ≥ %g, got %g (use noise-free for exact observations)",
				MinNoiseVariance, c.NoiseVariance)
		}
		if !(c.GammaT >= 0) || math.IsInf(c.GammaT, 0) {
			return fmt.Errorf("kusner: gamma_T must be positive and finite (0 = greedy bound), got %g", c.GammaT)
		}
		return nil
	}
	if !(c.A > 0) || math.IsInf(c.A, 0) {
		return fmt.Errorf("kusner: noise-free needs a positive finite constant A, got %g", c.A)
	}
	if !(c.Tau > 0) || math.IsInf(c.Tau, 0) {
		return fmt.Errorf("kusner: noise-free needs a positive finite constant tau, got %g", c.Tau)
	}
	return nil
}

func (c Config) validateLipschitz() error {
	if !(c.NoiseVariance == 0 || c.NoiseVariance >= MinNoiseVariance) || math.IsInf(c.NoiseVariance, 0) {
		return fmt.Errorf("kusner: lipschitz noise variance must be 0 (exact) or finite and ≥ %g, got %g",
			MinNoiseVariance, c.NoiseVariance)
	}
	if !(c.LambdaMin > 0) || math.IsInf(c.LambdaMin, 0) {
		return fmt.Errorf("kusner: lambda_min must be positive and finite, got %g", c.LambdaMin)
	}
	if !(c.LambdaMax >= c.LambdaMin) || math.IsInf(c.LambdaMax, 0) {
		return fmt.Errorf("kusner: lambda_max must be finite and ≥ lambda_min = %g, got %g", c.LambdaMin, c.LambdaMax)
	}
	if !(c.L > 0) || math.IsInf(c.L, 0) {
		return fmt.Errorf("kusner: Lipschitz constant L must be positive and finite, got %g", c.L)
	}
	if !(c.GStar > 0) || math.IsInf(c.GStar, 0) {
		return fmt.Errorf("kusner: loss bound g* must be positive and finite, got %g", c.GStar)
	}
	if c.M < 1 {
		return fmt.Errorf("kusner: validation set size m must be at least 1, got %d", c.M)
	}
	return nil
}

// Cost returns the privacy cost of everything Run releases, by basic
// composition: (2ε, 2δ) for Algorithms 1 and 2 (λ̃ and the value, each
// (ε, δ)), (ε, 0) for Algorithm 3. It does not validate c.
func (c Config) Cost() (epsilon, delta float64) {
	if c.Algorithm == Lipschitz {
		return c.Epsilon, 0
	}
	return 2 * c.Epsilon, 2 * c.Delta
}

// Steps returns the number of progress events Run reports: one per
// iteration and one for the release.
func (c Config) Steps() int { return c.Iterations + 1 }

// Guarantee states in words what Run's result guarantees and the assumptions
// it rests on. It depends on c only (no data) and does not validate c.
func (c Config) Guarantee() string {
	eps, delta := c.Cost()
	switch c.Algorithm {
	case NoisyGP:
		return fmt.Sprintf("(%g, %g)-differentially private for the validation set (neighbours: one validation record replaced): "+
			"the hyperparameter by the exponential mechanism and the validation gain by the Laplace mechanism, each (%g, %g)-DP "+
			"(Kusner et al. 2015, Algorithm 1, Corollaries 1 and 2). Rests on Assumption 1: the validation gains of all "+
			"validation sets are jointly a Gaussian process with kernel k1 ⊗ k2, k1(V, V') = %g for neighbours, k2 squared "+
			"exponential over the grid, observation noise variance %g; on %s; and holds with probability 1 − δ over that prior."+relationWords,
			eps, delta, c.Epsilon, c.Delta, c.K1, c.NoiseVariance, gammaWords(c.GammaT))
	case NoiseFree:
		return fmt.Sprintf("(%g, %g)-differentially private for the validation set (neighbours: one validation record replaced): "+
			"the hyperparameter by the exponential mechanism and the last validation gain by the Laplace mechanism, each (%g, %g)-DP "+
			"(Kusner et al. 2015, Algorithm 2, Corollaries 1 and 3). Rests on Assumption 1 (validation gains jointly a Gaussian "+
			"process with kernel k1 ⊗ k2, k1(V, V') = %g for neighbours, exact observations) and, for the gain, on the regret "+
			"bound A·exp(−τT/(log T)^{d/4}) of de Freitas et al. (2012) with A = %g, τ = %g holding for this GP-UCB search; "+
			"holds with probability 1 − δ over that prior."+relationWords,
			eps, delta, c.Epsilon, c.Delta, c.K1, c.A, c.Tau)
	case Lipschitz:
		return fmt.Sprintf("(%g, 0)-differentially private for the validation set (neighbours: one validation record replaced): "+
			"the best validation score by the Laplace mechanism (Kusner et al. 2015, Algorithm 3, Corollary 4), with no "+
			"Gaussian process assumption. Rests on Assumption 2: the model minimises λ/2‖w‖² + (1/n)Σℓ with ℓ convex and "+
			"1-Lipschitz in w on the non-sensitive training set, every λ of the grid in [%g, %g], the validation score is "+
			"−(1/m)Σg with g %g-Lipschitz in w and 0 ≤ g ≤ %g, m = %d."+relationWords,
			eps, c.LambdaMin, c.LambdaMax, c.L, c.GStar, c.M)
	}
	return fmt.Sprintf("invalid algorithm %v: no guarantee", c.Algorithm)
}

func gammaWords(g float64) string {
	if g > 0 {
		return fmt.Sprintf("the given γ_T = %g bounding the maximum information gain", g)
	}
	return "the greedy upper bound on the maximum information gain γ_T (Srinivas et al. 2010)"
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
