package learner

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp/dptest"
)

func TestDPSGDConfig(t *testing.T) {
	good := DPSGDConfig{LearningRate: 0.5, ClipNorm: 1, NoiseMultiplier: 1.1, Epochs: 3, ExpectedBatchSize: 64, Lambda: 1e-3}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v, want nil", good, err)
	}
	for _, tt := range []struct {
		n, steps int
		q        float64
	}{{640, 30, 0.1}, {641, 33, 64.0 / 641}, {64, 3, 1}, {1, 3, 64}} {
		if got := good.Steps(tt.n); got != tt.steps {
			t.Errorf("Steps(%d) = %d, want %d", tt.n, got, tt.steps)
		}
		if got := good.SamplingRate(tt.n); got != tt.q {
			t.Errorf("SamplingRate(%d) = %g, want %g", tt.n, got, tt.q)
		}
	}
	if got := good.Steps(0); got != 0 {
		t.Errorf("Steps(0) = %d, want 0", got)
	}
	for _, tt := range []struct {
		mod  func(*DPSGDConfig)
		want string
	}{
		{func(c *DPSGDConfig) { c.LearningRate = 0 }, "learning rate must be positive"},
		{func(c *DPSGDConfig) { c.LearningRate = math.Inf(1) }, "learning rate"},
		{func(c *DPSGDConfig) { c.ClipNorm = -1 }, "clipping norm must be positive"},
		{func(c *DPSGDConfig) { c.ClipNorm = math.NaN() }, "clipping norm"},
		{func(c *DPSGDConfig) { c.NoiseMultiplier = -0.1 }, "noise multiplier must be in [0, 1e+06]"},
		{func(c *DPSGDConfig) { c.NoiseMultiplier = math.NaN() }, "noise multiplier"},
		{func(c *DPSGDConfig) { c.NoiseMultiplier = 2e6 }, "noise multiplier"},
		{func(c *DPSGDConfig) { c.Epochs = 0 }, "epochs must be in [1, 1000000], got 0"},
		{func(c *DPSGDConfig) { c.ExpectedBatchSize = 0 }, "batch size must be at least 1"},
		{func(c *DPSGDConfig) { c.Lambda = -1 }, "lambda must be non-negative"},
		{func(c *DPSGDConfig) { c.Lambda = math.Inf(1) }, "lambda"},
	} {
		c := good
		tt.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "learner: DP-SGD ") {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c, err, tt.want)
		}
	}
}

func TestTrainDPSGDErrors(t *testing.T) {
	data := randomData(t, 50, 3, 1)
	cfg := DPSGDConfig{LearningRate: 0.1, ClipNorm: 1, NoiseMultiplier: 1, Epochs: 1, ExpectedBatchSize: 10}
	big := cfg
	big.ExpectedBatchSize = 51
	tiny := cfg
	tiny.NoiseMultiplier = 1e-12
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		ctx  context.Context
		cfg  DPSGDConfig
		want string
	}{
		{context.Background(), big, "batch size 51 exceeds the 50 training rows"},
		{context.Background(), tiny, "too small for exact lattice sums"},
		{context.Background(), DPSGDConfig{}, "learning rate"},
		{context.Background(), DPSGDConfig{LearningRate: 0.1, ClipNorm: 1e-305, NoiseMultiplier: 1, Epochs: 1, ExpectedBatchSize: 10}, "too small for the noise lattice"},
		{cancelled, cfg, context.Canceled.Error()},
	} {
		if _, err := TrainDPSGD(tt.ctx, dptest.Source(1), data, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("TrainDPSGD(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := TrainDPSGD(context.Background(), nil, data, cfg); err == nil {
		t.Errorf("TrainDPSGD(nil source) succeeded, want an error")
	}
	// A failing source is reported, not ignored.
	src := dptest.FromReader(failingReader{})
	if _, err := TrainDPSGD(context.Background(), src, data, cfg); err == nil || !strings.Contains(err.Error(), "randomness") {
		t.Errorf("TrainDPSGD(failing source) error = %v, want a randomness error", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// TestTrainDPSGDDeterministic: equal seeds give equal models, different
// seeds different ones (the noise is used).
func TestTrainDPSGDDeterministic(t *testing.T) {
	data := randomData(t, 200, 4, 2)
	cfg := DPSGDConfig{LearningRate: 0.2, ClipNorm: 1, NoiseMultiplier: 1, Epochs: 2, ExpectedBatchSize: 20}
	m1, err1 := TrainDPSGD(context.Background(), dptest.Source(5), data, cfg)
	m2, err2 := TrainDPSGD(context.Background(), dptest.Source(5), data, cfg)
	m3, err3 := TrainDPSGD(context.Background(), dptest.Source(6), data, cfg)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if m1.B != m2.B || m1.W[0] != m2.W[0] {
		t.Errorf("TrainDPSGD with seed 5 twice: %v, %v, want equal", m1, m2)
	}
	if m1.B == m3.B {
		t.Errorf("TrainDPSGD with seeds 5 and 6: equal bias %g, want different", m1.B)
	}
}

// TestClippedLatticeSensitivity checks the invariant the privacy argument
// rests on: every per-example gradient, clipped and rounded to the lattice,
// has L2 norm ≤ R (in the float64 evaluation of the exact integer vector),
// for logistic regression (one output, d + 1 parameters) and for softmax
// regression (10 outputs, 10(d + 1) parameters, clipped over all of them).
// Rows are large so that clipping is active for nearly all of them.
func TestClippedLatticeSensitivity(t *testing.T) {
	binary := randomData(t, 2000, 9, 8)
	multi := randomClassData(t, 2000, 9, 10, 8)
	for _, data := range []Data{binary, multi} {
		for i := range data.X {
			data.X[i] *= 50
		}
	}
	for _, tt := range []struct {
		data     Data
		outputs  int
		R, noise float64
	}{
		{binary, 1, 1, 1}, {binary, 1, 0.37, 0.05}, {binary, 1, 3, 20}, {binary, 1, 1e-3, 1e3},
		{multi, 10, 1, 1}, {multi, 10, 0.37, 0.05}, {multi, 10, 3, 20}, {multi, 10, 1e-3, 1e3},
	} {
		data := tt.data
		cfg := DPSGDConfig{LearningRate: 1, ClipNorm: tt.R, NoiseMultiplier: tt.noise, Epochs: 1, ExpectedBatchSize: 1}
		tr := newTrainer(cfg, data, tt.outputs)
		if err := tr.init(); err != nil {
			t.Fatal(err)
		}
		k := tr.noise.k
		w := make([]float64, tr.p)
		for j := range w {
			w[j] = 0.01 * (float64(j%3) - 1) // small: residuals of order ½
		}
		active := 0
		for i := range data.N {
			row := append(slices.Clone(data.Row(i)), 1)
			tr.residual(i, w)
			sq := 0.0
			for _, c := range tr.r {
				for _, v := range row {
					u := math.Ldexp(math.Round(math.Ldexp(c*v, -k)), k)
					sq += u * u
				}
			}
			if nrm := math.Sqrt(sq); nrm > tt.R {
				t.Errorf("outputs=%d R=%g: rounded clipped gradient of row %d has norm %.17g > R", tt.outputs, tt.R, i, nrm)
			}
			if norm(tr.r)*math.Sqrt(tr.rowNorm2[i]) > 0.99*tt.R {
				active++
			}
		}
		if active < data.N/2 {
			t.Errorf("outputs=%d R=%g: clipping active for %d of %d rows, want most (test data too small?)", tt.outputs, tt.R, active, data.N)
		}
	}
}

// TestPoissonSample: over S steps on n rows with q = b/n, the total batch
// size is Binomial(S·n, q); each per-step size is Binomial(n, q); each row's
// inclusion count is Binomial(S, q). Thresholds (normal approximations): the
// total within 4.9 sd (two-sided false-failure rate 1e-6), the sample
// variance of the step sizes within 5 of its standard errors (6e-7), and
// Pearson's statistic over rows, approximately χ²_n, below n + 5√(2n)
// (about 3e-6 for n = 1000, allowing for the χ² right tail). Overall below
// 1e-5.
func TestPoissonSample(t *testing.T) {
	const n, b, steps = 1000, 64, 1000
	q := float64(b) / n
	src := dptest.Source(42)
	counts := make([]int, n)
	sizes := make([]float64, steps)
	var batch []int
	total := 0
	for s := range steps {
		var err error
		batch, err = poissonSample(src, n, b, batch[:0])
		if err != nil {
			t.Fatal(err)
		}
		for k, i := range batch {
			if k > 0 && i <= batch[k-1] || i < 0 || i >= n {
				t.Fatalf("batch %v not strictly increasing in [0, %d)", batch, n)
			}
			counts[i]++
		}
		sizes[s] = float64(len(batch))
		total += len(batch)
	}
	mean := float64(steps*n) * q
	sd := math.Sqrt(float64(steps*n) * q * (1 - q))
	if z := (float64(total) - mean) / sd; math.Abs(z) > 4.9 {
		t.Errorf("total batch size = %d, want %g ± %.1f (z = %.2f)", total, mean, sd, z)
	}
	m := float64(total) / steps
	v := 0.0
	for _, s := range sizes {
		v += (s - m) * (s - m)
	}
	v /= steps - 1
	wantVar := n * q * (1 - q)
	if se := wantVar * math.Sqrt(2.0/(steps-1)); math.Abs(v-wantVar) > 5*se {
		t.Errorf("variance of batch sizes = %.2f, want %.2f ± %.2f", v, wantVar, se)
	}
	chi2 := 0.0
	e := steps * q
	for _, c := range counts {
		chi2 += (float64(c) - e) * (float64(c) - e) / (e * (1 - q))
	}
	if limit := n + 5*math.Sqrt(2*n); chi2 > limit {
		t.Errorf("Pearson statistic of per-row inclusion counts = %.1f, want ≤ %.1f", chi2, limit)
	}
}

// TestGaussianNoise: N draws of gaussianNoise(σ) have mean 0 and variance σ²
// (the discrete Gaussian on a lattice 2²⁰ times finer than σ has variance σ²
// up to a relative e^{−2π²·2⁴⁰}). Thresholds: |mean| ≤ 4.9 σ/√N and
// |s² − σ²| ≤ 5 σ²√(2/N) (normal approximations for Gaussian data;
// false-failure rate below 2e-6 per σ). Every draw lies on the lattice.
func TestGaussianNoise(t *testing.T) {
	const draws = 20000
	src := dptest.Source(7)
	for _, sigma := range []float64{2.5, 1e-7, 3e5} {
		h := math.Ldexp(1, latticeExponent(sigma))
		if !(h <= sigma/(1<<20) && h > sigma/(1<<21)) {
			t.Fatalf("lattice step for σ = %g is %g, want in (σ/2^21, σ/2^20]", sigma, h)
		}
		sum, sq := 0.0, 0.0
		for range draws {
			v, err := gaussianNoise(src, sigma)
			if err != nil {
				t.Fatal(err)
			}
			if r := v / h; r != math.Trunc(r) {
				t.Fatalf("gaussianNoise(%g) = %g is not on the lattice %g·ℤ", sigma, v, h)
			}
			sum += v
			sq += v * v
		}
		mean := sum / draws
		variance := (sq - draws*mean*mean) / (draws - 1)
		if lim := 4.9 * sigma / math.Sqrt(draws); math.Abs(mean) > lim {
			t.Errorf("gaussianNoise(%g): mean %g, want |mean| ≤ %g", sigma, mean, lim)
		}
		if lim := 5 * sigma * sigma * math.Sqrt(2.0/draws); math.Abs(variance-sigma*sigma) > lim {
			t.Errorf("gaussianNoise(%g): variance %g, want %g ± %g", sigma, variance, sigma*sigma, lim)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := gaussianNoise(src, bad); err == nil {
			t.Errorf("gaussianNoise(%g) succeeded, want an error", bad)
		}
	}
}

// TestNoisyAccuracy: releases centre on the true accuracy with sd σ (same
// thresholds as TestGaussianNoise, 5000 draws per case, false-failure rate
// below 1e-5 in all), and (release·m − count) lies on the lattice.
func TestNoisyAccuracy(t *testing.T) {
	val, _ := NewData([]float64{0.5, -2, 0.25, 3, 1, -1, 2}, []float64{1, 1, 0, 0, 1, 0, 1}, 7, 1)
	m := Model{W: []float64{1}}
	acc := Accuracy(m, val) // 5 of 7
	const draws = 5000
	src := dptest.Source(3)
	for _, sigma := range []float64{0.05, 1e-4, 3} {
		sum, sq := 0.0, 0.0
		for range draws {
			v, err := NoisyAccuracy(src, m, val, sigma)
			if err != nil {
				t.Fatal(err)
			}
			sum += v - acc
			sq += (v - acc) * (v - acc)
		}
		mean := sum / draws
		variance := (sq - draws*mean*mean) / (draws - 1)
		if lim := 4.9 * sigma / math.Sqrt(draws); math.Abs(mean) > lim {
			t.Errorf("NoisyAccuracy(σ=%g): mean error %g, want |·| ≤ %g", sigma, mean, lim)
		}
		if lim := 5 * sigma * sigma * math.Sqrt(2.0/draws); math.Abs(variance-sigma*sigma) > lim {
			t.Errorf("NoisyAccuracy(σ=%g): variance %g, want %g ± %g", sigma, variance, sigma*sigma, lim)
		}
	}
	for _, tt := range []struct {
		sigma float64
		m     Model
		want  string
	}{
		{0, m, "sigma must be positive"},
		{math.NaN(), m, "sigma must be positive"},
		{1e300, m, "too large"},
		{1, Model{W: []float64{1, 2}}, "2 weights, validation data has 1"},
	} {
		if _, err := NoisyAccuracy(src, tt.m, val, tt.sigma); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NoisyAccuracy(σ=%g) error = %v, want one containing %q", tt.sigma, err, tt.want)
		}
	}
}
