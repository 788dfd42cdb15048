package learner

import (
	"context"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
)

// DPSGDConfig holds DP-SGD's settings for logistic regression; see the
// package documentation for the algorithm and its guarantee.
type DPSGDConfig struct {
	LearningRate      float64 // η > 0
	ClipNorm          float64 // R > 0: per-example gradient L2 bound over (w, b)
	NoiseMultiplier   float64 // σ/R ≥ 0; 0 adds no noise (non-private baseline)
	Epochs            int     // ≥ 1
	ExpectedBatchSize int     // B ≥ 1; sampling rate q = B/n
	Lambda            float64 // L2 penalty λ/2 ‖w‖² ≥ 0 (not noised: data-independent)
}

// Limits on DPSGDConfig, against runaway jobs and overflow.
const (
	MaxNoiseMultiplier = 1e6
	MaxEpochs          = 1_000_000
)

// Validate checks every field: finite, in range.
func (c DPSGDConfig) Validate() error {
	switch {
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0):
		return fmt.Errorf("learner: DP-SGD learning rate must be positive and finite, got %g", c.LearningRate)
	case !(c.ClipNorm > 0) || math.IsInf(c.ClipNorm, 0):
		return fmt.Errorf("learner: DP-SGD clipping norm must be positive and finite, got %g", c.ClipNorm)
	case !(c.NoiseMultiplier >= 0 && c.NoiseMultiplier <= MaxNoiseMultiplier):
		return fmt.Errorf("learner: DP-SGD noise multiplier must be in [0, %g], got %g", float64(MaxNoiseMultiplier), c.NoiseMultiplier)
	case c.Epochs < 1 || c.Epochs > MaxEpochs:
		return fmt.Errorf("learner: DP-SGD epochs must be in [1, %d], got %d", MaxEpochs, c.Epochs)
	case c.ExpectedBatchSize < 1:
		return fmt.Errorf("learner: DP-SGD expected batch size must be at least 1, got %d", c.ExpectedBatchSize)
	case !(c.Lambda >= 0) || math.IsInf(c.Lambda, 0):
		return fmt.Errorf("learner: DP-SGD lambda must be non-negative and finite, got %g", c.Lambda)
	}
	return nil
}

// SamplingRate returns q = ExpectedBatchSize/n, the Poisson sampling
// probability of each row (above 1 if the batch exceeds n, which TrainDPSGD
// refuses).
func (c DPSGDConfig) SamplingRate(n int) float64 {
	return float64(c.ExpectedBatchSize) / float64(n)
}

// Steps returns Epochs·⌈n/ExpectedBatchSize⌉, the number of noisy gradient
// steps (compositions for the accountant). It returns 0 for an invalid
// batch size or n.
func (c DPSGDConfig) Steps(n int) int {
	if c.ExpectedBatchSize < 1 || n < 1 || c.Epochs < 1 {
		return 0
	}
	return c.Epochs * ((n + c.ExpectedBatchSize - 1) / c.ExpectedBatchSize)
}

// TrainDPSGD trains logistic regression with DP-SGD on train, drawing the
// Poisson batches and the Gaussian noise from src (dp.CryptoSource() outside
// tests). Its guarantee is exactly that of the Poisson-subsampled Gaussian
// mechanism with sampling rate SamplingRate(n), noise multiplier
// NoiseMultiplier and Steps(n) steps, for neighbouring training sets that
// differ by adding or removing one row (n treated as public); see the package
// documentation for the floating-point-safe noise that makes this exact. With
// NoiseMultiplier = 0 nothing is private. It needs ExpectedBatchSize ≤ n and
// stops with ctx's error when ctx is done.
func TrainDPSGD(ctx context.Context, src *dp.Source, train Data, cfg DPSGDConfig) (Model, error) {
	if err := cfg.Validate(); err != nil {
		return Model{}, err
	}
	if err := train.check(); err != nil {
		return Model{}, err
	}
	n, d := train.N, train.D
	if cfg.ExpectedBatchSize > n {
		return Model{}, fmt.Errorf("learner: DP-SGD expected batch size %d exceeds the %d training rows", cfg.ExpectedBatchSize, n)
	}
	if src == nil {
		return Model{}, fmt.Errorf("learner: DP-SGD needs a randomness source (dp.CryptoSource)")
	}
	t := &dpsgdTrainer{cfg: cfg, x: train.X, y: train.Y, n: n, d: d, p: d + 1}
	if err := t.init(); err != nil {
		return Model{}, err
	}
	w := make([]float64, t.p) // (w, b)
	sum := make([]float64, t.p)
	batch := make([]int, 0, 2*cfg.ExpectedBatchSize+16)
	steps := cfg.Steps(n)
	invB := 1 / float64(cfg.ExpectedBatchSize)
	for range steps {
		if err := ctx.Err(); err != nil {
			return Model{}, err
		}
		var err error
		if batch, err = poissonSample(src, n, cfg.ExpectedBatchSize, batch[:0]); err != nil {
			return Model{}, err
		}
		if err := t.noisySum(src, w, batch, sum); err != nil {
			return Model{}, err
		}
		for j := range d {
			w[j] -= cfg.LearningRate * (sum[j]*invB + cfg.Lambda*w[j])
		}
		w[d] -= cfg.LearningRate * sum[d] * invB
	}
	for _, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Model{}, fmt.Errorf("learner: DP-SGD diverged (learning rate %g too large?)", cfg.LearningRate)
		}
	}
	return Model{W: w[:d:d], B: w[d]}, nil
}

// poissonSample appends to dst the rows i ∈ [0, n) that pass independent
// Bernoulli(b/n) trials, each an exact uniform draw U ∈ [0, n) with U < b.
func poissonSample(src *dp.Source, n, b int, dst []int) ([]int, error) {
	nn, bb := uint64(n), uint64(b)
	for i := range n {
		u, err := src.Uint64n(nn)
		if err != nil {
			return dst, fmt.Errorf("learner: Poisson sampling: %w", err)
		}
		if u < bb {
			dst = append(dst, i)
		}
	}
	return dst, nil
}

// dpsgdTrainer holds the data and the per-step buffers of TrainDPSGD.
type dpsgdTrainer struct {
	cfg     DPSGDConfig
	x, y    []float64
	n, d, p int

	rowNorm2 []float64 // ‖(x_i, 1)‖²
	clip     float64   // clipping norm applied in floating point (R or R')
	noise    latticeGaussian
	acc      []int64 // lattice-unit sum
	maxUnits float64 // |per-example coordinate| bound in lattice units
}

func (t *dpsgdTrainer) init() error {
	t.rowNorm2 = make([]float64, t.n)
	for i := range t.n {
		row := t.x[i*t.d : (i+1)*t.d]
		nr := norm(row)
		t.rowNorm2[i] = nr*nr + 1
	}
	R := t.cfg.ClipNorm
	t.clip = R
	if t.cfg.NoiseMultiplier == 0 {
		return nil
	}
	sigma := t.cfg.NoiseMultiplier * R
	k := latticeExponent(min(sigma, R))
	if k < -1000 { // h would approach the subnormal range
		return fmt.Errorf("learner: DP-SGD clipping norm %g and noise %g are too small for the noise lattice", R, sigma)
	}
	g, err := newLatticeGaussian(sigma, k)
	if err != nil {
		return err
	}
	t.noise = g
	// Rounding each coordinate moves a vector by ≤ √p·h/2; clipping to
	// R' = R − √p·h leaves room for that and for the floating-point error of
	// the scaling (relative 1e-15 ≪ √p·h/(2R) ≥ 2⁻²²).
	h := math.Ldexp(1, k)
	t.clip = R - math.Sqrt(float64(t.p))*h
	if !(t.clip >= R/2) {
		return fmt.Errorf("learner: DP-SGD with %d parameters needs a coarser noise lattice; raise the noise multiplier or reduce the features", t.p)
	}
	// Every per-example coordinate is ≤ R/h in lattice units, and a batch
	// has at most n rows: the int64 sums cannot overflow below 2^62.
	t.maxUnits = math.Ldexp(R, -k)
	if t.maxUnits*float64(t.n) >= 1<<62 {
		return fmt.Errorf("learner: DP-SGD noise multiplier %g is too small for exact lattice sums over %d rows; use 0 for a non-private baseline", t.cfg.NoiseMultiplier, t.n)
	}
	t.acc = make([]int64, t.p)
	return nil
}

// noisySum writes into sum the clipped per-example gradients of the batch at
// parameters w, summed, plus the Gaussian noise.
func (t *dpsgdTrainer) noisySum(src *dp.Source, w []float64, batch []int, sum []float64) error {
	d := t.d
	wv, b := w[:d], w[d]
	if t.cfg.NoiseMultiplier == 0 {
		clear(sum)
		for _, i := range batch {
			row := t.x[i*d : (i+1)*d]
			c := t.coefficient(i, dot(wv, row)+b)
			axpy(sum[:d], c, row)
			sum[d] += c
		}
		return nil
	}
	k := t.noise.k
	clear(t.acc)
	for _, i := range batch {
		row := t.x[i*d : (i+1)*d]
		c := t.coefficient(i, dot(wv, row)+b)
		// Per-example gradient c·(x_i, 1), rounded to the lattice h·ℤ.
		for j, v := range row {
			t.acc[j] += int64(math.Round(math.Ldexp(c*v, -k)))
		}
		t.acc[d] += int64(math.Round(math.Ldexp(c, -k)))
	}
	for j, a := range t.acc {
		z, err := t.noise.sample(src)
		if err != nil {
			return err
		}
		sum[j] = math.Ldexp(float64(a+z), k)
	}
	return nil
}

// coefficient returns c with c·(x_i, 1) the clipped gradient of row i's
// logistic loss at margin z: (σ(z) − y_i)·min(1, R/‖(σ(z) − y_i)(x_i, 1)‖).
func (t *dpsgdTrainer) coefficient(i int, z float64) float64 {
	r := sigmoid(z) - t.y[i]
	gn := math.Abs(r) * math.Sqrt(t.rowNorm2[i])
	if gn > t.clip {
		r *= t.clip / gn
	}
	return r
}

// ClippedGradientSum returns Σ_i g_i over all rows of d: the per-example
// logistic-loss gradients g_i = (σ(z_i) − y_i)·(x_i, 1) over (w, b) at the
// model m, each clipped to norm ≤ clipNorm exactly as TrainDPSGD clips them
// (the same code), without noise and without the regulariser. It is the
// noise-free sum one DP-SGD step adds when every row is in the batch, and
// serves audits: DP-SGD's accounting assumes that adding or removing one row
// changes this sum by a vector of norm ≤ clipNorm, which holds only if the
// other rows' preprocessing does not depend on that row (ScaleToBounds
// preprocessing qualifies; a Standardiser fitted to the same rows does not).
func ClippedGradientSum(d Data, m Model, clipNorm float64) ([]float64, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if len(m.W) != d.D {
		return nil, fmt.Errorf("learner: model has %d weights, data has %d features", len(m.W), d.D)
	}
	cfg := DPSGDConfig{LearningRate: 1, ClipNorm: clipNorm, Epochs: 1, ExpectedBatchSize: 1}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &dpsgdTrainer{cfg: cfg, x: d.X, y: d.Y, n: d.N, d: d.D, p: d.D + 1}
	if err := t.init(); err != nil {
		return nil, err
	}
	w := append(append(make([]float64, 0, t.p), m.W...), m.B)
	batch := make([]int, d.N)
	for i := range batch {
		batch[i] = i
	}
	sum := make([]float64, t.p)
	if err := t.noisySum(nil, w, batch, sum); err != nil {
		return nil, err
	}
	return sum, nil
}
