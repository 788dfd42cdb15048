package simulate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/dataset"
)

// Problem is one objective over a fixed candidate set: the scaled inputs the curator
// holds, the noise-free objective used for regret and the answers the curator records.
type Problem struct {
	Name string
	// X is the row-major N×D matrix of scaled inputs (the curator's dataset).
	X    []float64
	N, D int
	// F is the noise-free objective per row (after any log transform and sign change);
	// regret is measured on F.
	F []float64
	// Y is what the curator answers for each row: F plus recorded observation noise.
	Y []float64
	// Unit describes the protected unit of X (from package dataset for files).
	Unit string
}

// DataConfig selects a CSV data set as the objective.
type DataConfig struct {
	Path    string
	Options dataset.Options
	// Minimize turns the target into −target so that maximising finds the smallest
	// value; LogOutputs takes the natural log of the target first (it must be > 0).
	Minimize, LogOutputs bool
}

// LoadProblem reads and scales a CSV file (package dataset) and transforms its target.
// The answers equal the objective: the recorded column is the measurement.
func LoadProblem(dc DataConfig) (*Problem, error) {
	ds, err := dataset.LoadCSV(dc.Path, dc.Options)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	f := make([]float64, ds.N)
	for i, y := range ds.Y {
		if dc.LogOutputs {
			if !(y > 0) {
				return nil, fmt.Errorf("simulate: %s needs a positive target, but row %d of %q is not", setting.New(dc.bind()...).Flag(&dc.LogOutputs), i, ds.Target)
			}
			y = math.Log(y)
		}
		if dc.Minimize {
			y = -y
		}
		f[i] = y
	}
	return &Problem{Name: ds.Name, X: ds.X, N: ds.N, D: ds.D, F: f, Y: f, Unit: ds.Unit}, nil
}

// Samplers of SyntheticConfig.Sampler.
const (
	SamplerKronecker = "kronecker" // exact: K = σ_y² K₁ ⊗ K₁ on the product grid
	SamplerCholesky  = "cholesky"  // n×n Cholesky of K + jitter·I
)

// SyntheticConfig is the synthetic GP objective of Kharkovskii et al. (2020), §4
// (docs/MATHS.md §2.5).
type SyntheticConfig struct {
	// Grid g: g×g points on [−1, 1]²; default 100 (n = 10,000).
	Grid int
	// MaxNorm of the scaled inputs; default 25.
	MaxNorm float64
	// Lengthscale of the SE kernel in scaled units; default 0.25 × MaxNorm.
	Lengthscale float64
	// SignalVariance σ_y², default 1; NoiseVariance σ_n² of the recorded answers,
	// default 1e-5 (set NoNoise for exact answers).
	SignalVariance, NoiseVariance float64
	NoNoise                       bool
	// Sampler: SamplerKronecker (default) or SamplerCholesky.
	Sampler string
}

func (c *SyntheticConfig) defaults() error {
	def := NewSyntheticConfig()
	c.Grid, c.MaxNorm, c.SignalVariance = cmp.Or(c.Grid, def.Grid), cmp.Or(c.MaxNorm, def.MaxNorm), cmp.Or(c.SignalVariance, def.SignalVariance)
	c.Lengthscale, c.Sampler = cmp.Or(c.Lengthscale, 0.25*c.MaxNorm), cmp.Or(c.Sampler, def.Sampler)
	if c.NoiseVariance == 0 && !c.NoNoise {
		c.NoiseVariance = def.NoiseVariance
	}
	switch {
	case c.Grid > 1000:
		return fmt.Errorf("simulate: synthetic grid must be in [2, 1000], got %d", c.Grid)
	case !finitePos(c.MaxNorm):
		return fmt.Errorf("simulate: synthetic max norm must be positive and finite, got %g", c.MaxNorm)
	case !finitePos(c.Lengthscale):
		return fmt.Errorf("simulate: synthetic lengthscale must be positive and finite, got %g", c.Lengthscale)
	case !finitePos(c.SignalVariance):
		return fmt.Errorf("simulate: synthetic signal variance must be positive and finite, got %g", c.SignalVariance)
	case !(c.NoiseVariance >= 0) || math.IsInf(c.NoiseVariance, 0):
		return fmt.Errorf("simulate: synthetic noise variance must be ≥ 0 and finite, got %g", c.NoiseVariance)
	case c.Sampler != SamplerKronecker && c.Sampler != SamplerCholesky:
		return fmt.Errorf("simulate: unknown sampler %q (want %q or %q)", c.Sampler, SamplerKronecker, SamplerCholesky)
	case c.Sampler == SamplerCholesky && c.Grid > 110:
		return fmt.Errorf("simulate: the Cholesky sampler is limited to a 110×110 grid (n×n matrix), got %d", c.Grid)
	}
	return nil
}

func finitePos(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// SyntheticInfo describes how a synthetic draw was made.
type SyntheticInfo struct {
	Sampler  string
	Jitter   float64 // jitter added to the diagonal (Cholesky route only)
	Duration time.Duration
}

// gridCoords returns the g coordinates of the scaled grid along one axis.
func gridCoords(c SyntheticConfig) []float64 {
	g := c.Grid
	s := c.MaxNorm / math.Sqrt2
	x := make([]float64, g)
	for a := range x {
		x[a] = (-1 + 2*float64(a)/float64(g-1)) * s
	}
	return x
}

// SyntheticProblem draws one function of the synthetic GP experiment from the seed.
func SyntheticProblem(cfg SyntheticConfig, seed uint64) (*Problem, SyntheticInfo, error) {
	if err := cfg.defaults(); err != nil {
		return nil, SyntheticInfo{}, err
	}
	g := cfg.Grid
	n := g * g
	c := gridCoords(cfg)
	x := make([]float64, 2*n)
	for a := range g {
		for b := range g {
			i := a*g + b
			x[2*i], x[2*i+1] = c[a], c[b]
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed5a3))
	start := time.Now()
	var (
		f    []float64
		info = SyntheticInfo{Sampler: cfg.Sampler}
		err  error
	)
	switch cfg.Sampler {
	case SamplerKronecker:
		f, err = sampleKronecker(cfg, c, rng)
	case SamplerCholesky:
		f, info.Jitter, err = sampleCholesky(cfg, x, n, rng)
	}
	if err != nil {
		return nil, info, err
	}
	info.Duration = time.Since(start)
	y := make([]float64, n)
	sd := math.Sqrt(cfg.NoiseVariance)
	for i := range y {
		y[i] = f[i]
		if sd > 0 {
			y[i] += sd * rng.NormFloat64()
		}
	}
	return &Problem{
		Name: fmt.Sprintf("synthetic-gp-%dx%d", g, g), X: x, N: n, D: 2, F: f, Y: y,
		Unit: fmt.Sprintf("a %d×%d grid on [−1, 1]² scaled to a maximal norm of %g", g, g, cfg.MaxNorm),
	}, info, nil
}

// axisFactor returns S (g×g, row-major) with S Sᵀ = K₁, from the eigendecomposition of
// the one-dimensional kernel matrix (negative rounding eigenvalues clipped to 0).
func axisFactor(cfg SyntheticConfig, c []float64) ([]float64, error) {
	g := len(c)
	k1 := mat.NewSymDense(g, nil)
	for a := range g {
		for b := a; b < g; b++ {
			d := c[a] - c[b]
			k1.SetSym(a, b, math.Exp(-d*d/(2*cfg.Lengthscale*cfg.Lengthscale)))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(k1, true) {
		return nil, errors.New("simulate: eigendecomposition of the grid kernel did not converge")
	}
	vals := es.Values(nil)
	var q mat.Dense
	es.VectorsTo(&q)
	s := make([]float64, g*g)
	for a := range g {
		for k := range g {
			s[a*g+k] = q.At(a, k) * math.Sqrt(max(vals[k], 0))
		}
	}
	return s, nil
}

// sampleKronecker returns F = σ_y S W Sᵀ flattened row-major (row a·g + b).
func sampleKronecker(cfg SyntheticConfig, c []float64, rng *rand.Rand) ([]float64, error) {
	g := len(c)
	s, err := axisFactor(cfg, c)
	if err != nil {
		return nil, err
	}
	w := make([]float64, g*g)
	for k := range w {
		w[k] = rng.NormFloat64()
	}
	S := mat.NewDense(g, g, s)
	W := mat.NewDense(g, g, w)
	var sw, f mat.Dense
	sw.Mul(S, W)
	f.Mul(&sw, S.T())
	out := make([]float64, g*g)
	sy := math.Sqrt(cfg.SignalVariance)
	for a := range g {
		for b := range g {
			out[a*g+b] = sy * f.At(a, b)
		}
	}
	return out, nil
}

// sampleCholesky returns L w with L Lᵀ = K + jitter·I, the smallest jitter 1e-8·10^k
// (k = 0, 1, …, 6) for which the Cholesky factorisation succeeds.
func sampleCholesky(cfg SyntheticConfig, x []float64, n int, rng *rand.Rand) ([]float64, float64, error) {
	k := mat.NewSymDense(n, nil)
	inv := 1 / (2 * cfg.Lengthscale * cfg.Lengthscale)
	for i := range n {
		for j := i; j < n; j++ {
			d0, d1 := x[2*i]-x[2*j], x[2*i+1]-x[2*j+1]
			k.SetSym(i, j, cfg.SignalVariance*math.Exp(-(d0*d0+d1*d1)*inv))
		}
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	added := 0.0
	for jitter := 1e-8; jitter <= 1e-2; jitter *= 10 {
		for i := range n {
			k.SetSym(i, i, k.At(i, i)+jitter-added)
		}
		added = jitter
		var ch mat.Cholesky
		if ch.Factorize(k) {
			var l mat.TriDense
			ch.LTo(&l)
			var f mat.VecDense
			f.MulVec(&l, mat.NewVecDense(n, w))
			return f.RawVector().Data, jitter, nil
		}
	}
	return nil, 0, errors.New("simulate: the synthetic covariance is not positive definite even with jitter 1e-2")
}
