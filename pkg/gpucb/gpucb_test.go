package gpucb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privbo/privbo/internal/gptest"
)

// refKernel is an independent transcription of the kernels of docs/MATHS.md §2.4.
func refKernel(cfg Config, x, z []float64) float64 {
	var d2 float64
	for k := range x {
		d2 += (x[k] - z[k]) * (x[k] - z[k])
	}
	l := cfg.Lengthscale
	switch cfg.Kernel {
	case SquaredExponential:
		return cfg.SignalVariance * math.Exp(-d2/(2*l*l))
	case Matern52:
		r := math.Sqrt(d2)
		return cfg.SignalVariance * (1 + math.Sqrt(5)*r/l + 5*r*r/(3*l*l)) * math.Exp(-math.Sqrt(5)*r/l)
	}
	panic("bad kernel")
}

// densePosterior computes µ_t and σ²_t at every candidate from scratch:
// K + σ_n² I factorised by gonum's mat.Cholesky, then solves. With
// Standardise the outputs are (y − mean)/sd (sample sd, 1 if t < 2 or sd = 0)
// and the results are mapped back to the original units.
func densePosterior(t *testing.T, cands []float64, n, dim int, cfg Config, idx []int, ys []float64) (mu, vr []float64) {
	t.Helper()
	nt := len(idx)
	row := func(i int) []float64 { return cands[i*dim : (i+1)*dim] }
	mu = make([]float64, n)
	vr = make([]float64, n)
	m, s := 0.0, 1.0
	if cfg.Standardise && nt > 0 {
		for _, y := range ys {
			m += y
		}
		m /= float64(nt)
		if nt >= 2 {
			var ss float64
			for _, y := range ys {
				ss += (y - m) * (y - m)
			}
			if sd := math.Sqrt(ss / float64(nt-1)); sd > 0 {
				s = sd
			}
		}
	}
	if nt == 0 {
		for z := range n {
			mu[z] = m
			vr[z] = refKernel(cfg, row(z), row(z))
		}
		return mu, vr
	}
	chol := gptest.Factor(t, nt, func(p, q int) float64 { return refKernel(cfg, row(idx[p]), row(idx[q])) }, cfg.NoiseVariance)
	yt := mat.NewVecDense(nt, nil)
	for p, y := range ys {
		yt.SetVec(p, (y-m)/s)
	}
	var alpha mat.VecDense
	if err := chol.SolveVecTo(&alpha, yt); err != nil {
		t.Fatalf("dense reference: %v", err)
	}
	ks := mat.NewDense(nt, n, nil)
	for p := range nt {
		for z := range n {
			ks.Set(p, z, refKernel(cfg, row(idx[p]), row(z)))
		}
	}
	var x mat.Dense
	if err := chol.SolveTo(&x, ks); err != nil {
		t.Fatalf("dense reference: %v", err)
	}
	for z := range n {
		var mz, qz float64
		for p := range nt {
			mz += ks.At(p, z) * alpha.AtVec(p)
			qz += ks.At(p, z) * x.At(p, z)
		}
		mu[z] = m + s*mz
		vr[z] = s * s * (refKernel(cfg, row(z), row(z)) - qz)
	}
	return mu, vr
}

func randomCands(rng *rand.Rand, n, dim int) []float64 {
	c := make([]float64, n*dim)
	for k := range c {
		c[k] = rng.Float64()
	}
	return c
}

// smooth is a test objective on [0,1]^dim.
func smooth(z []float64) float64 {
	var s float64
	for k, x := range z {
		s += math.Sin(3*x+float64(k)) * (1 + 0.3*float64(k))
	}
	return s
}

func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*max(1, math.Abs(want))
}

// TestPosteriorMatchesDense checks, after each of 30 observations, the
// incremental posterior mean and variance at every candidate against the dense
// computation to a relative tolerance of 1e-9 (absolute below magnitude 1),
// and that Next returns the dense argmax of µ + sqrt(β)σ. Queries mix Next
// with random indices, so candidates are observed more than once.
func TestPosteriorMatchesDense(t *testing.T) {
	const (
		n, dim, steps = 120, 3, 30
		tol           = 1e-9
	)
	type tc struct {
		kernel      Kernel
		standardise bool
		constBeta   float64
		offset      float64 // added to the outputs, exercises standardisation
	}
	var cases []tc
	for _, k := range []Kernel{SquaredExponential, Matern52} {
		for _, std := range []bool{false, true} {
			cases = append(cases, tc{k, std, 0, 0}, tc{k, std, 2.5, 40})
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%v/std=%v/beta=%g", c.kernel, c.standardise, c.constBeta)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.kernel)))
			cands := randomCands(rng, n, dim)
			cfg := Config{
				Kernel: c.kernel, Lengthscale: 0.4, SignalVariance: 1.3, NoiseVariance: 0.01,
				Delta: 0.05, ConstantBeta: c.constBeta, Standardise: c.standardise, Capacity: 7,
			}
			g, err := New(cands, n, dim, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var idx []int
			var ys []float64
			for step := 0; step <= steps; step++ {
				mu, vr := densePosterior(t, cands, n, dim, cfg, idx, ys)
				for z := range n {
					if got := g.Mean(z); !near(got, mu[z], tol) {
						t.Fatalf("t=%d: Mean(%d) = %.15g, want %.15g", step, z, got, mu[z])
					}
					if got := g.Variance(z); !near(got, vr[z], tol) {
						t.Fatalf("t=%d: Variance(%d) = %.15g, want %.15g", step, z, got, vr[z])
					}
				}
				beta := c.constBeta
				if beta == 0 {
					beta = Beta(n, step+1, cfg.Delta)
				}
				if got := g.Beta(); got != beta {
					t.Fatalf("t=%d: Beta() = %g, want %g", step, got, beta)
				}
				want, wantScore := -1, math.Inf(-1)
				score := make([]float64, n)
				for z := range n {
					score[z] = mu[z] + math.Sqrt(beta*max(vr[z], 0))
					if score[z] > wantScore {
						want, wantScore = z, score[z]
					}
				}
				got, err := g.Next()
				if err != nil {
					t.Fatalf("t=%d: Next: %v", step, err)
				}
				// A different index is acceptable only for a tie within rounding.
				if got != want && !near(score[got], wantScore, tol) {
					t.Fatalf("t=%d: Next() = %d (score %.15g), want %d (score %.15g)", step, got, score[got], want, wantScore)
				}
				if step == steps {
					break
				}
				i := got
				if step%3 == 1 {
					i = rng.IntN(n)
				}
				if step%7 == 3 && len(idx) > 0 {
					i = idx[len(idx)-1] // observe the same index again
				}
				y := c.offset + smooth(cands[i*dim:(i+1)*dim]) + 0.1*rng.NormFloat64()
				if err := g.Observe(i, y); err != nil {
					t.Fatalf("t=%d: Observe(%d, %g): %v", step, i, y, err)
				}
				idx = append(idx, i)
				ys = append(ys, y)
				if g.T() != len(idx) {
					t.Fatalf("T() = %d, want %d", g.T(), len(idx))
				}
			}
			// The packed Cholesky factor equals gonum's factor of K + σ²I.
			nt := len(idx)
			chol := gptest.Factor(t, nt, func(p, q int) float64 {
				return refKernel(cfg, cands[idx[p]*dim:(idx[p]+1)*dim], cands[idx[q]*dim:(idx[q]+1)*dim])
			}, cfg.NoiseVariance)
			var l mat.TriDense
			chol.LTo(&l)
			for p := range nt {
				for q := 0; q <= p; q++ {
					if got, want := g.lpk[p*(p+1)/2+q], l.At(p, q); !near(got, want, tol) {
						t.Fatalf("L[%d,%d] = %.15g, want %.15g", p, q, got, want)
					}
				}
			}
		})
	}
}

// TestWorkersIdentical checks that results are bit-for-bit identical with one
// and two workers (each candidate is computed by the same operations).
func TestWorkersIdentical(t *testing.T) {
	const n, dim, steps = 5000, 4, 20
	rng := rand.New(rand.NewPCG(7, 7))
	cands := randomCands(rng, n, dim)
	for _, std := range []bool{false, true} {
		cfg := Config{Kernel: Matern52, Lengthscale: 0.3, SignalVariance: 1, NoiseVariance: 1e-3, Delta: 0.1, Standardise: std}
		var gs [2]*GP
		for w := range gs {
			cfg.Workers = w + 1
			g, err := New(cands, n, dim, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(g.bounds) - 1; got != w+1 {
				t.Fatalf("Workers=%d gives %d blocks, want %d", w+1, got, w+1)
			}
			gs[w] = g
		}
		for step := range steps {
			i0, err0 := gs[0].Next()
			i1, err1 := gs[1].Next()
			if err0 != nil || err1 != nil || i0 != i1 {
				t.Fatalf("std=%v t=%d: Next() = %d, %v with 1 worker, %d, %v with 2", std, step, i0, err0, i1, err1)
			}
			y := smooth(cands[i0*dim : (i0+1)*dim])
			for _, g := range gs {
				if err := g.Observe(i0, y); err != nil {
					t.Fatal(err)
				}
			}
			for z := range n {
				if m0, m1 := gs[0].Mean(z), gs[1].Mean(z); m0 != m1 {
					t.Fatalf("std=%v t=%d: Mean(%d) = %v with 1 worker, %v with 2", std, step, z, m0, m1)
				}
				if v0, v1 := gs[0].Variance(z), gs[1].Variance(z); v0 != v1 {
					t.Fatalf("std=%v t=%d: Variance(%d) = %v with 1 worker, %v with 2", std, step, z, v0, v1)
				}
			}
		}
	}
}

func TestBeta(t *testing.T) {
	tests := []struct {
		n, t  int
		delta float64
		want  float64
	}{
		// 2·log(10000·1²·π²/(6·0.05)) = 2·log(328986.813…) = 25.40754589600184 (python math)
		{10000, 1, 0.05, 25.40754589600184},
		// 2·log(100000·2²·π²/(6·0.1)) = 2·log(6579736.26…) = 31.39901044310982 (python math)
		{100000, 2, 0.1, 31.39901044310982},
		// 2·log(1·1²·π²/(6·0.5)) = 2·log(3.2898681…) = 2.381694966061381 (python math)
		{1, 1, 0.5, 2.381694966061381},
		{1, 1, 1, math.NaN()}, // δ' = 1 is out of range
		{0, 1, 0.05, math.NaN()},
		{10, 0, 0.05, math.NaN()},
		{10, 1, 0, math.NaN()},
		{10, 1, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		got := Beta(tt.n, tt.t, tt.delta)
		if math.IsNaN(tt.want) {
			if !math.IsNaN(got) {
				t.Errorf("Beta(%d, %d, %g) = %g, want NaN", tt.n, tt.t, tt.delta, got)
			}
			continue
		}
		if !near(got, tt.want, 1e-14) {
			t.Errorf("Beta(%d, %d, %g) = %.17g, want %.17g", tt.n, tt.t, tt.delta, got, tt.want)
		}
	}
}

func TestConstantBeta(t *testing.T) {
	cands := []float64{0, 1, 2, 3}
	g, err := New(cands, 4, 1, Config{Lengthscale: 1, SignalVariance: 1, NoiseVariance: 0.1, ConstantBeta: 4})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		if got := g.Beta(); got != 4 {
			t.Errorf("t=%d: Beta() = %g, want 4 (ConstantBeta)", step, got)
		}
		if err := g.Observe(step, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Schedule: Beta() after t observations is β_{t+1}.
	g, err = New(cands, 4, 1, Config{Lengthscale: 1, SignalVariance: 1, NoiseVariance: 0.1, Delta: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Observe(1, 0.5); err != nil {
		t.Fatal(err)
	}
	// β_2 = 2·log(4·2²·π²/(6·0.2)) = 2·log(131.59…) = 9.759453874289253 (python math)
	if got, want := g.Beta(), 9.759453874289253; !near(got, want, 1e-14) {
		t.Errorf("Beta() after 1 observation = %g, want β_2 = %g", got, want)
	}
}

func TestKernelValues(t *testing.T) {
	tests := []struct {
		k          Kernel
		l, sv      float64
		want0      float64 // k(0,0) = σ_y²
		want1      float64 // k(0,1)
		referenced string
	}{
		// 2·exp(−1/(2·0.25)) = 2·e^{−2}
		{SquaredExponential, 0.5, 2, 2, 0.2706705664732254, "python 2*math.exp(-2)"},
		// (1 + √5 + 5/3)·e^{−√5}
		{Matern52, 1, 1, 1, 0.5239941088318203, "python (1+sqrt(5)+5/3)*exp(-sqrt(5))"},
	}
	for _, tt := range tests {
		g, err := New([]float64{0, 1}, 2, 1, Config{Kernel: tt.k, Lengthscale: tt.l, SignalVariance: tt.sv, Delta: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, 2)
		g.kernelRow(0, []float64{0}, 0, 2, out)
		if !near(out[0], tt.want0, 1e-15) || !near(out[1], tt.want1, 1e-15) {
			t.Errorf("%v kernel(0, {0,1}) = %v, want [%v %v] (%s)", tt.k, out, tt.want0, tt.want1, tt.referenced)
		}
	}
}

func TestParseKernel(t *testing.T) {
	for _, k := range []Kernel{SquaredExponential, Matern52} {
		got, err := ParseKernel(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKernel(%q) = %v, %v, want %v", k.String(), got, err, k)
		}
	}
	if got, err := ParseKernel(" Matern52 "); err != nil || got != Matern52 {
		t.Errorf("ParseKernel(\" Matern52 \") = %v, %v, want matern52", got, err)
	}
	for _, s := range []string{"", "rbf", "matern32"} {
		if _, err := ParseKernel(s); err == nil {
			t.Errorf("ParseKernel(%q) succeeded, want error", s)
		}
	}
	if got, want := Kernel(7).String(), "Kernel(7)"; got != want {
		t.Errorf("Kernel(7).String() = %q, want %q", got, want)
	}
}

func TestDefaultLengthscale(t *testing.T) {
	tests := []struct {
		name      string
		cands     []float64
		n, dim    int
		want      float64
		reference string
	}{
		{"square", []float64{0, 0, 2, 0, 0, 2, 2, 2, 1, 1}, 5, 2,
			math.Sqrt2, "mean (1,1); distances √2,√2,√2,√2,0; median √2"},
		{"even", []float64{0, 1, 2, 7}, 4, 1,
			2, "mean 2.5; distances 2.5,1.5,0.5,4.5; median (1.5+2.5)/2 = 2"},
		{"median zero", []float64{-1, 0, 0, 0, 1}, 5, 1,
			1, "mean 0; distances 1,0,0,0,1; median 0, so the max distance 1"},
		{"identical", []float64{5, 5, 5, 5}, 2, 2, 1, "all rows equal: fallback 1"},
		{"empty", nil, 0, 3, 1, "no rows: fallback 1"},
	}
	for _, tt := range tests {
		if got := DefaultLengthscale(tt.cands, tt.n, tt.dim); !near(got, tt.want, 1e-15) {
			t.Errorf("DefaultLengthscale(%s) = %.17g, want %.17g (%s)", tt.name, got, tt.want, tt.reference)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("DefaultLengthscale with 3 values for 2×2 did not panic")
		}
	}()
	DefaultLengthscale([]float64{1, 2, 3}, 2, 2)
}

func TestNewValidation(t *testing.T) {
	good := Config{Kernel: SquaredExponential, Lengthscale: 1, SignalVariance: 1, NoiseVariance: 0.1, Delta: 0.1}
	cands := []float64{0, 1, 2, 3}
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		cands  []float64
		n, dim int
		mod    func(*Config)
	}{
		{"n zero", nil, 0, 1, nil},
		{"n negative", cands, -4, -1, nil},
		{"dim zero", cands, 4, 0, nil},
		{"length mismatch", cands, 3, 1, nil},
		{"NaN candidate", []float64{0, nan}, 2, 1, nil},
		{"Inf candidate", []float64{inf, 0}, 2, 1, nil},
		{"kernel", cands, 4, 1, func(c *Config) { c.Kernel = 9 }},
		{"lengthscale zero", cands, 4, 1, func(c *Config) { c.Lengthscale = 0 }},
		{"lengthscale negative", cands, 4, 1, func(c *Config) { c.Lengthscale = -1 }},
		{"lengthscale NaN", cands, 4, 1, func(c *Config) { c.Lengthscale = nan }},
		{"lengthscale Inf", cands, 4, 1, func(c *Config) { c.Lengthscale = inf }},
		{"signal zero", cands, 4, 1, func(c *Config) { c.SignalVariance = 0 }},
		{"signal NaN", cands, 4, 1, func(c *Config) { c.SignalVariance = nan }},
		{"noise negative", cands, 4, 1, func(c *Config) { c.NoiseVariance = -1e-9 }},
		{"noise NaN", cands, 4, 1, func(c *Config) { c.NoiseVariance = nan }},
		{"noise Inf", cands, 4, 1, func(c *Config) { c.NoiseVariance = inf }},
		{"delta zero", cands, 4, 1, func(c *Config) { c.Delta = 0 }},
		{"delta one", cands, 4, 1, func(c *Config) { c.Delta = 1 }},
		{"delta NaN", cands, 4, 1, func(c *Config) { c.Delta = nan }},
		{"beta negative", cands, 4, 1, func(c *Config) { c.ConstantBeta = -1 }},
		{"beta NaN", cands, 4, 1, func(c *Config) { c.ConstantBeta = nan }},
		{"beta Inf", cands, 4, 1, func(c *Config) { c.ConstantBeta = inf }},
		{"workers", cands, 4, 1, func(c *Config) { c.Workers = -1 }},
		{"capacity", cands, 4, 1, func(c *Config) { c.Capacity = -1 }},
		{"lazy columns", cands, 4, 1, func(c *Config) { c.Lazy, c.LazyColumns = true, -1 }},
	}
	for _, tt := range tests {
		cfg := good
		if tt.mod != nil {
			tt.mod(&cfg)
		}
		g, err := New(tt.cands, tt.n, tt.dim, cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "gpucb: ") {
			t.Errorf("New(%s) = %v, %v, want a gpucb: error", tt.name, g, err)
		}
	}
	// Delta is not needed with a constant beta; zero noise is allowed.
	cfg := good
	cfg.Delta, cfg.ConstantBeta, cfg.NoiseVariance = 0, 3, 0
	if _, err := New(cands, 4, 1, cfg); err != nil {
		t.Errorf("New with ConstantBeta and no Delta: %v, want success", err)
	}
	if _, err := New(cands, 4, 1, good); err != nil {
		t.Errorf("New(valid config) = %v", err)
	}
}

func TestObserveErrors(t *testing.T) {
	g, err := New([]float64{0, 1, 2}, 3, 1, Config{Lengthscale: 1, SignalVariance: 1, NoiseVariance: 0, Delta: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i int
		y float64
	}{{-1, 0}, {3, 0}, {0, math.NaN()}, {0, math.Inf(-1)}} {
		if err := g.Observe(c.i, c.y); err == nil {
			t.Errorf("Observe(%d, %g) succeeded, want error", c.i, c.y)
		}
	}
	if g.T() != 0 {
		t.Fatalf("T() = %d after rejected observations, want 0", g.T())
	}
	if err := g.Observe(1, 2); err != nil {
		t.Fatal(err)
	}
	m, v := g.Mean(0), g.Variance(0)
	// Noise-free repeat of index 1: l_tt² = 0, must be refused without changes.
	if err := g.Observe(1, 2); err == nil {
		t.Error("noise-free repeated Observe(1, 2) succeeded, want error")
	}
	if g.T() != 1 || g.Mean(0) != m || g.Variance(0) != v {
		t.Errorf("after refused Observe: T, Mean(0), Variance(0) = %d, %g, %g, want 1, %g, %g", g.T(), g.Mean(0), g.Variance(0), m, v)
	}
	// Noise-free posterior interpolates: µ(1) = 2, σ²(1) = 0.
	if got := g.Mean(1); !near(got, 2, 1e-12) {
		t.Errorf("noise-free Mean(1) = %g, want 2", got)
	}
	if got := g.Variance(1); got > 1e-12 {
		t.Errorf("noise-free Variance(1) = %g, want 0", got)
	}
}

func TestNextTiesAndSkip(t *testing.T) {
	// 1-D candidates 0, 10, 10, 20, 20 with l = 1: after observing y = 0 at
	// index 0 the others are uncorrelated with it up to k = e^{−50}, so
	// µ = 0 and σ² = 1 exactly in floating point: indices 1–4 tie.
	cands := []float64{0, 10, 10, 20, 20}
	cfg := Config{Lengthscale: 1, SignalVariance: 1, NoiseVariance: 1e-6, ConstantBeta: 1}
	g, err := New(cands, 5, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if i, err := g.Next(); err != nil || i != 0 {
		t.Fatalf("Next() on the prior = %d, %v, want 0 (all tie)", i, err)
	}
	if err := g.Observe(0, 0); err != nil {
		t.Fatal(err)
	}
	if i, err := g.Next(); err != nil || i != 1 {
		t.Fatalf("Next() = %d, %v, want 1 (tie among 1..4)", i, err)
	}
	if err := g.Observe(1, 0); err != nil {
		t.Fatal(err)
	}
	if i, err := g.Next(); err != nil || i != 3 {
		t.Fatalf("Next() = %d, %v, want 3 (tie among 3, 4; 2 duplicates 1)", i, err)
	}

	// SkipQueried: a very good observed point is suggested again only without it.
	for _, skip := range []bool{false, true} {
		cfg := Config{Lengthscale: 1, SignalVariance: 1, NoiseVariance: 0.01, ConstantBeta: 1, SkipQueried: skip}
		g, err := New([]float64{0, 5}, 2, 1, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Observe(0, 100); err != nil {
			t.Fatal(err)
		}
		want := 0
		if skip {
			want = 1
		}
		if i, err := g.Next(); err != nil || i != want {
			t.Errorf("SkipQueried=%v: Next() = %d, %v, want %d", skip, i, err, want)
		}
	}

	// SkipQueried visits every candidate once, then errors.
	cfg = Config{Lengthscale: 0.5, SignalVariance: 1, NoiseVariance: 0.01, Delta: 0.1, SkipQueried: true}
	g, err = New([]float64{0, 1, 2, 3, 4}, 5, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 5 {
		i, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if seen[i] {
			t.Fatalf("SkipQueried: Next() = %d again", i)
		}
		seen[i] = true
		if err := g.Observe(i, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if i, err := g.Next(); err == nil {
		t.Errorf("Next() with all candidates queried = %d, nil, want error", i)
	}
}

// TestFindsMaximum runs GP-UCB for 20 iterations on a 200-point grid of
// [0, 1] with a smooth two-peak function (global max 1 near x = 0.7, local
// max 0.6 at x = 0.2) and requires the best value found to be within 0.01 of
// the grid maximum. Deterministic: no noise is added.
func TestFindsMaximum(t *testing.T) {
	const n = 200
	cands := make([]float64, n)
	f := make([]float64, n)
	fmax := math.Inf(-1)
	for i := range n {
		x := float64(i) / (n - 1)
		cands[i] = x
		f[i] = math.Exp(-(x-0.7)*(x-0.7)/0.01) + 0.6*math.Exp(-(x-0.2)*(x-0.2)/0.02) + 0.1*math.Sin(20*x)
		fmax = max(fmax, f[i])
	}
	for _, k := range []Kernel{SquaredExponential, Matern52} {
		cfg := Config{Kernel: k, Lengthscale: 0.1, SignalVariance: 1, NoiseVariance: 1e-4, Delta: 0.1, Standardise: true}
		g, err := New(cands, n, 1, cfg)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(-1)
		for range 20 {
			i, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			best = max(best, f[i])
			if err := g.Observe(i, f[i]); err != nil {
				t.Fatal(err)
			}
		}
		if best < fmax-0.01 {
			t.Errorf("%v: best value after 20 iterations = %g, want ≥ %g (grid max %g)", k, best, fmax-0.01, fmax)
		}
	}
}

// TestCapacityGrowth observes far more points than Capacity and checks the
// rows stay intact (against the dense posterior) across chunk boundaries.
func TestCapacityGrowth(t *testing.T) {
	const n, dim = 40, 2
	rng := rand.New(rand.NewPCG(3, 4))
	cands := randomCands(rng, n, dim)
	cfg := Config{Lengthscale: 0.5, SignalVariance: 1, NoiseVariance: 0.05, Delta: 0.1, Capacity: 1}
	g, err := New(cands, n, dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	var ys []float64
	for step := range 45 {
		i := rng.IntN(n)
		y := smooth(cands[i*dim : (i+1)*dim])
		if err := g.Observe(i, y); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		idx, ys = append(idx, i), append(ys, y)
	}
	mu, vr := densePosterior(t, cands, n, dim, cfg, idx, ys)
	for z := range n {
		if got := g.Mean(z); !near(got, mu[z], 1e-9) {
			t.Errorf("Mean(%d) = %.15g, want %.15g", z, got, mu[z])
		}
		if got := g.Variance(z); !near(got, vr[z], 1e-9) {
			t.Errorf("Variance(%d) = %.15g, want %.15g", z, got, vr[z])
		}
	}
}

// FuzzParseKernel checks that any accepted name denotes a valid kernel whose
// String form parses back to it.
func FuzzParseKernel(f *testing.F) {
	for _, s := range []string{"se", "matern52", " SE ", "rbf", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKernel(s)
		if err != nil {
			return
		}
		if !k.valid() {
			t.Fatalf("ParseKernel(%q) = %v, an invalid kernel", s, k)
		}
		if back, err := ParseKernel(k.String()); err != nil || back != k {
			t.Fatalf("ParseKernel(%q) = %v, %v, want %v", k.String(), back, err, k)
		}
	})
}

// TestExpNonPos compares the kernel's exponential with math.Exp: relative
// error at most 1e-15 on a grid of [−745, 0] and on random points of
// [−5, 0], exact at 0, and NaN/−Inf handled as math.Exp does.
func TestExpNonPos(t *testing.T) {
	const tol = 1e-15
	check := func(x float64) {
		got, want := expNonPos(x), math.Exp(x)
		if want == 0 {
			if got != 0 {
				t.Errorf("expNonPos(%g) = %g, want 0", x, got)
			}
			return
		}
		if math.Abs(got-want) > tol*want {
			t.Errorf("expNonPos(%.17g) = %.17g, want %.17g (math.Exp)", x, got, want)
		}
	}
	for k := 0; k <= 745_000; k++ {
		check(-float64(k) / 1000)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		check(-5 * rng.Float64())
		check(-1e-3 * rng.Float64())
	}
	if got := expNonPos(0); got != 1 {
		t.Errorf("expNonPos(0) = %.17g, want 1", got)
	}
	if got := expNonPos(math.Inf(-1)); got != 0 {
		t.Errorf("expNonPos(-Inf) = %g, want 0", got)
	}
	if got := expNonPos(math.NaN()); !math.IsNaN(got) {
		t.Errorf("expNonPos(NaN) = %g, want NaN", got)
	}
}

// TestOverflowingOutputs checks that an output whose difference from the first one
// overflows is refused, leaving the GP as it was, rather than turning every
// acquisition value into NaN and reporting, wrongly, that every candidate was queried.
func TestOverflowingOutputs(t *testing.T) {
	g, err := New([]float64{0, 1, 2, 3}, 4, 1, Config{Lengthscale: 1, SignalVariance: 1, NoiseVariance: 1e-3, Delta: 0.1, SkipQueried: true, Standardise: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Observe(0, 1.7e308); err != nil {
		t.Fatal(err)
	}
	if err := g.Observe(1, -1.7e308); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("Observe of an overflowing difference: %v", err)
	}
	if g.T() != 1 {
		t.Errorf("T = %d after a refused observation, want 1", g.T())
	}
	if i, err := g.Next(); err != nil || i == 0 {
		t.Errorf("Next = %d, %v; want an unqueried candidate", i, err)
	}
}
