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
	Init              Init    // the starting parameters; the zero value starts from 0
}

// Init is how DP-SGD chooses its starting parameters. Either way they depend on no
// data, so the guarantee is the same.
type Init int

const (
	// InitZero starts from w = 0, b = 0: the default, and the usual start of a convex
	// logistic regression.
	InitZero Init = iota
	// InitUniform draws every weight and bias independently and uniformly from
	// [−1/√d, 1/√d] for d features, as neural-network libraries initialise a linear
	// layer (PyTorch's nn.Linear), from the training's randomness source. With a small
	// learning rate the model then stays near a random classifier, where from zero a
	// few summed gradients already classify by the class means.
	InitUniform
)

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
	case c.Init != InitZero && c.Init != InitUniform:
		return fmt.Errorf("learner: DP-SGD initialisation %d is unknown", int(c.Init))
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
// NoiseMultiplier = 0 nothing is private. It needs binary labels and
// ExpectedBatchSize ≤ n, and stops with ctx's error when ctx is done.
func TrainDPSGD(ctx context.Context, src *dp.Source, train Data, cfg DPSGDConfig) (Model, error) {
	if err := train.check(); err != nil {
		return Model{}, err
	}
	if !train.Binary() {
		return Model{}, fmt.Errorf("learner: logistic regression needs binary labels, the data has %d classes (use TrainDPSGDSoftmax)", train.NumClasses())
	}
	w, err := trainDPSGD(ctx, src, train, cfg, 1)
	if err != nil {
		return Model{}, err
	}
	d := train.D
	return Model{W: w[:d:d], B: w[d]}, nil
}

// TrainDPSGDSoftmax trains multinomial (softmax) logistic regression over
// train's K = NumClasses() classes with DP-SGD: the model has K(d + 1)
// parameters, each row's gradient (p_i − e_{y_i}) ⊗ (x_i, 1) is clipped in
// Euclidean norm over all of them together, and the noise is added to all of
// them. Adding or removing one row therefore moves the summed clipped
// gradient by at most ClipNorm, as for TrainDPSGD, and the guarantee is the
// same: that of the Poisson-subsampled Gaussian mechanism with sampling rate
// SamplingRate(n), noise multiplier NoiseMultiplier and Steps(n) steps, for
// adding or removing one training row. It works for K = 2 too (a two-class
// softmax, with twice TrainDPSGD's parameters).
func TrainDPSGDSoftmax(ctx context.Context, src *dp.Source, train Data, cfg DPSGDConfig) (Softmax, error) {
	if err := train.check(); err != nil {
		return Softmax{}, err
	}
	k := train.NumClasses()
	w, err := trainDPSGD(ctx, src, train, cfg, k)
	if err != nil {
		return Softmax{}, err
	}
	return Softmax{Classes: k, Features: train.D, W: w}, nil
}

// TrainDPSGDClassifier trains the classifier that fits train's labels with
// DP-SGD: logistic regression (TrainDPSGD) for binary labels, softmax
// regression (TrainDPSGDSoftmax) for more classes. Both have the guarantee
// stated at TrainDPSGD.
func TrainDPSGDClassifier(ctx context.Context, src *dp.Source, train Data, cfg DPSGDConfig) (Classifier, error) {
	if train.Binary() {
		return TrainDPSGD(ctx, src, train, cfg)
	}
	return TrainDPSGDSoftmax(ctx, src, train, cfg)
}

// trainDPSGD runs DP-SGD with outputs = 1 (logistic: one logit, σ(z) − y) or
// outputs = K (softmax: K logits, p − e_y) and returns the parameters, row o
// of outputs×(d+1) holding output o's weights and bias.
func trainDPSGD(ctx context.Context, src *dp.Source, train Data, cfg DPSGDConfig, outputs int) ([]float64, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, d := train.N, train.D
	if cfg.ExpectedBatchSize > n {
		return nil, fmt.Errorf("learner: DP-SGD expected batch size %d exceeds the %d training rows", cfg.ExpectedBatchSize, n)
	}
	if src == nil {
		return nil, fmt.Errorf("learner: DP-SGD needs a randomness source (dp.CryptoSource)")
	}
	t := newTrainer(cfg, train, outputs)
	if err := t.init(); err != nil {
		return nil, err
	}
	w := make([]float64, t.p) // outputs × (w, b)
	if cfg.Init == InitUniform {
		bound := 1 / math.Sqrt(float64(d))
		for j := range w {
			u, err := src.Uint64n(1 << 53)
			if err != nil {
				return nil, fmt.Errorf("learner: DP-SGD initialisation: %w", err)
			}
			w[j] = (math.Ldexp(float64(u), -52) - 1) * bound
		}
	}
	sum := make([]float64, t.p)
	batch := make([]int, 0, 2*cfg.ExpectedBatchSize+16)
	steps := cfg.Steps(n)
	invB := 1 / float64(cfg.ExpectedBatchSize)
	for range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if batch, err = poissonSample(src, n, cfg.ExpectedBatchSize, batch[:0]); err != nil {
			return nil, err
		}
		if err := t.noisySum(src, w, batch, sum); err != nil {
			return nil, err
		}
		for o := range outputs {
			row, g := w[o*(d+1):(o+1)*(d+1)], sum[o*(d+1):(o+1)*(d+1)]
			for j := range d {
				row[j] -= cfg.LearningRate * (g[j]*invB + cfg.Lambda*row[j])
			}
			row[d] -= cfg.LearningRate * g[d] * invB
		}
	}
	for _, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("learner: DP-SGD diverged (learning rate %g too large?)", cfg.LearningRate)
		}
	}
	return w, nil
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

// dpsgdTrainer holds the data and the per-step buffers of DP-SGD. The model
// has outputs logits z_o = w_o·x + b_o; parameters are laid out as
// outputs×(d+1), output o's row (w_o, b_o). A row's gradient is r ⊗ (x, 1)
// with the residual r = σ(z) − y (outputs = 1, logistic) or r = p − e_y
// (outputs = K, softmax, p = softmax(z)); its Euclidean norm over all
// parameters is ‖r‖·‖(x, 1)‖.
type dpsgdTrainer struct {
	cfg      DPSGDConfig
	x, y     []float64
	n, d, p  int
	outputs  int
	rowNorm2 []float64 // ‖(x_i, 1)‖²
	clip     float64   // clipping norm applied in floating point (R or R')
	noise    latticeGaussian
	acc      []int64   // lattice-unit sum
	draws    []int64   // noise, lattice units
	scale    float64   // 2^{−k}: multiplying by it is math.Ldexp(·, −k), exactly
	maxUnits float64   // |per-example coordinate| bound in lattice units
	z, r     []float64 // logits and residual of the current row
}

func newTrainer(cfg DPSGDConfig, data Data, outputs int) *dpsgdTrainer {
	return &dpsgdTrainer{cfg: cfg, x: data.X, y: data.Y, n: data.N, d: data.D, p: outputs * (data.D + 1), outputs: outputs,
		z: make([]float64, outputs), r: make([]float64, outputs)}
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
	t.draws = make([]int64, t.p)
	t.scale = math.Ldexp(1, -k)
	return nil
}

// noisySum writes into sum the clipped per-example gradients of the batch at
// parameters w, summed, plus the Gaussian noise.
func (t *dpsgdTrainer) noisySum(src *dp.Source, w []float64, batch []int, sum []float64) error {
	d := t.d
	if t.cfg.NoiseMultiplier == 0 {
		clear(sum)
		for _, i := range batch {
			row := t.x[i*d : (i+1)*d]
			t.residual(i, w)
			for o, c := range t.r {
				g := sum[o*(d+1) : (o+1)*(d+1)]
				axpy(g[:d], c, row)
				g[d] += c
			}
		}
		return nil
	}
	// Scaling by powers of two is exact here (|c·v| ≤ R and the lattice is far above
	// the subnormal range), so c·v·2^{−k} is math.Ldexp(c·v, −k) and (a+z)·h is
	// math.Ldexp(a+z, k), bit for bit.
	scale, h := t.scale, math.Ldexp(1, t.noise.k)
	clear(t.acc)
	for _, i := range batch {
		row := t.x[i*d : (i+1)*d]
		t.residual(i, w)
		// Per-example gradient r ⊗ (x_i, 1), rounded to the lattice h·ℤ.
		for o, c := range t.r {
			acc := t.acc[o*(d+1) : (o+1)*(d+1)]
			for j, v := range row {
				acc[j] += int64(math.Round(c * v * scale))
			}
			acc[d] += int64(math.Round(c * scale))
		}
	}
	if err := t.noise.fill(src, t.draws); err != nil {
		return err
	}
	for j, a := range t.acc {
		sum[j] = float64(a+t.draws[j]) * h
	}
	return nil
}

// residual sets t.r to the clipped residual of row i at parameters w:
// r·min(1, R/(‖r‖·‖(x_i, 1)‖)), so that r ⊗ (x_i, 1) is the clipped gradient
// of row i's loss (logistic for one output, softmax cross-entropy for K).
func (t *dpsgdTrainer) residual(i int, w []float64) {
	d := t.d
	row := t.x[i*d : (i+1)*d]
	if t.outputs == 1 {
		r := sigmoid(dot(w[:d], row)+w[d]) - t.y[i]
		gn := math.Abs(r) * math.Sqrt(t.rowNorm2[i])
		if gn > t.clip {
			r *= t.clip / gn
		}
		t.r[0] = r
		return
	}
	for o := range t.outputs {
		t.z[o] = dot(w[o*(d+1):o*(d+1)+d], row) + w[o*(d+1)+d]
	}
	softmaxInto(t.z, t.r)
	t.r[int(t.y[i])] -= 1
	gn := norm(t.r) * math.Sqrt(t.rowNorm2[i])
	if gn > t.clip {
		f := t.clip / gn
		for o := range t.r {
			t.r[o] *= f
		}
	}
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
	if !d.Binary() {
		return nil, fmt.Errorf("learner: logistic regression needs binary labels, the data has %d classes", d.NumClasses())
	}
	if len(m.W) != d.D {
		return nil, fmt.Errorf("learner: model has %d weights, data has %d features", len(m.W), d.D)
	}
	w := append(append(make([]float64, 0, d.D+1), m.W...), m.B)
	return clippedGradientSum(d, w, 1, clipNorm)
}

// ClippedGradientSumSoftmax is ClippedGradientSum for softmax regression: the
// sum over all rows of the clipped per-example gradients (p_i − e_{y_i}) ⊗
// (x_i, 1), laid out as m.W (Classes×(Features+1)), each clipped to norm ≤
// clipNorm over all parameters exactly as TrainDPSGDSoftmax clips them.
func ClippedGradientSumSoftmax(d Data, m Softmax, clipNorm float64) ([]float64, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	if m.Features != d.D || m.Classes != d.NumClasses() {
		return nil, fmt.Errorf("learner: model has %d classes × %d features, data has %d × %d", m.Classes, m.Features, d.NumClasses(), d.D)
	}
	return clippedGradientSum(d, m.W, m.Classes, clipNorm)
}

func clippedGradientSum(d Data, w []float64, outputs int, clipNorm float64) ([]float64, error) {
	cfg := DPSGDConfig{LearningRate: 1, ClipNorm: clipNorm, Epochs: 1, ExpectedBatchSize: 1}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := newTrainer(cfg, d, outputs)
	if err := t.init(); err != nil {
		return nil, err
	}
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
