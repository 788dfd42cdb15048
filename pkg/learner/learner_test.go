package learner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomData returns n×d standard normal features and labels drawn from a
// logistic model with weights 1, −1, 1, … (seeded, reproducible).
func randomData(t testing.TB, n, d int, seed uint64) Data {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n*d)
	y := make([]float64, n)
	for i := range n {
		z := 0.0
		for j := range d {
			v := rng.NormFloat64()
			x[i*d+j] = v
			z += v * float64(1-2*(j%2))
		}
		if rng.Float64() < sigmoid(z) {
			y[i] = 1
		}
	}
	data, err := NewData(x, y, n, d)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestNewDataErrors(t *testing.T) {
	tests := []struct {
		x, y []float64
		n, d int
		want string
	}{
		{nil, nil, 0, 1, "n ≥ 1 rows and d ≥ 1"},
		{[]float64{1}, []float64{1}, 1, 0, "n ≥ 1 rows and d ≥ 1"},
		{[]float64{1, 2, 3}, []float64{0, 1}, 2, 2, "3 feature values, want n·d = 2·2 = 4"},
		{[]float64{1, 2}, []float64{0}, 2, 1, "1 labels, want n = 2"},
		{[]float64{1, math.NaN()}, []float64{0, 1}, 2, 1, "feature 0 of row 1 is NaN or infinite"},
		{[]float64{1, 2, 3, math.Inf(-1)}, []float64{0, 1}, 2, 2, "feature 1 of row 1"},
		{[]float64{1, 2}, []float64{0, 0.5}, 2, 1, "label of row 1 is not 0 or 1"},
		{[]float64{1, 2}, []float64{-1, 1}, 2, 1, "label of row 0"},
	}
	for _, tt := range tests {
		_, err := NewData(tt.x, tt.y, tt.n, tt.d)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "learner: ") {
			t.Errorf("NewData(%v, %v, %d, %d) error = %v, want one containing %q", tt.x, tt.y, tt.n, tt.d, err, tt.want)
		}
		// Errors never quote data values.
		if err != nil && (strings.Contains(err.Error(), "0.5") || strings.Contains(err.Error(), "NaN,")) {
			t.Errorf("NewData error %q quotes a value", err)
		}
	}
}

// idData has row i = (i, −i) and label i%2, so rows can be traced.
func idData(t *testing.T, n int) Data {
	x := make([]float64, 2*n)
	y := make([]float64, n)
	for i := range n {
		x[2*i], x[2*i+1] = float64(i), -float64(i)
		y[i] = float64(i % 2)
	}
	d, err := NewData(x, y, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkPartition verifies that train and val hold each row of an idData
// exactly once, in increasing order, with matching labels, and returns the
// validation row ids.
func checkPartition(t *testing.T, train, val Data, n int) []int {
	t.Helper()
	seen := make([]int, n)
	var ids []int
	for pi, part := range []Data{train, val} {
		prev := -1
		for i := range part.N {
			id := int(part.X[2*i])
			if part.X[2*i+1] != -float64(id) || part.Y[i] != float64(id%2) || id <= prev {
				t.Fatalf("part %d row %d = (%g, %g | %g), want an id row after %d", pi, i, part.X[2*i], part.X[2*i+1], part.Y[i], prev)
			}
			prev = id
			seen[id]++
			if pi == 1 {
				ids = append(ids, id)
			}
		}
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("row %d appears %d times in train ∪ val, want once", id, c)
		}
	}
	return ids
}

func TestSplitRandom(t *testing.T) {
	d := idData(t, 100)
	tests := []struct {
		frac    float64
		wantVal int
	}{
		{0.3, 30}, {0.001, 1}, {0.999, 99}, {0.5, 50}, {0.255, 26},
	}
	for _, tt := range tests {
		train, val, err := SplitRandom(d, tt.frac, 1)
		if err != nil {
			t.Fatalf("SplitRandom(%g) error: %v", tt.frac, err)
		}
		if val.N != tt.wantVal || train.N != 100-tt.wantVal {
			t.Errorf("SplitRandom(%g) sizes = %d, %d, want %d, %d", tt.frac, train.N, val.N, 100-tt.wantVal, tt.wantVal)
		}
		checkPartition(t, train, val, 100)
	}
	_, v1, _ := SplitRandom(d, 0.3, 7)
	_, v2, _ := SplitRandom(d, 0.3, 7)
	_, v3, _ := SplitRandom(d, 0.3, 8)
	if !slices.Equal(v1.X, v2.X) {
		t.Errorf("SplitRandom with seed 7 twice gave different splits")
	}
	if slices.Equal(v1.X, v3.X) {
		t.Errorf("SplitRandom with seeds 7 and 8 gave the same split")
	}
	for _, tt := range []struct {
		n    int
		frac float64
		want string
	}{
		{100, 0, "fraction must be in (0, 1)"},
		{100, 1, "fraction must be in (0, 1)"},
		{100, math.NaN(), "fraction"},
		{1, 0.5, "at least 2 rows"},
	} {
		if _, _, err := SplitRandom(idData(t, tt.n), tt.frac, 1); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SplitRandom(n=%d, %g) error = %v, want one containing %q", tt.n, tt.frac, err, tt.want)
		}
	}
}

// TestSplitRandomUniform checks that each row lands in validation with
// probability m/n: over 2000 seeds, row counts ~ Binomial(2000, 0.3). The
// largest |z| over 20 rows exceeds 4.9 with probability < 20·1e-6 = 2e-5
// (normal approximation), the false-failure rate.
func TestSplitRandomUniform(t *testing.T) {
	const n, seeds, p = 20, 2000, 0.3
	d := idData(t, n)
	counts := make([]int, n)
	for s := range uint64(seeds) {
		train, val, err := SplitRandom(d, p, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range checkPartition(t, train, val, n) {
			counts[id]++
		}
	}
	sd := math.Sqrt(seeds * p * (1 - p))
	for id, c := range counts {
		if z := (float64(c) - seeds*p) / sd; math.Abs(z) > 4.9 {
			t.Errorf("row %d in validation %d times of %d, want %g ± %.1f (z = %.2f)", id, c, seeds, seeds*p, sd, z)
		}
	}
}

func TestSplitByMask(t *testing.T) {
	d := idData(t, 5)
	train, val, err := SplitByMask(d, []bool{true, false, false, true, false})
	if err != nil {
		t.Fatal(err)
	}
	if ids := checkPartition(t, train, val, 5); !slices.Equal(ids, []int{0, 3}) {
		t.Errorf("SplitByMask validation rows = %v, want [0 3]", ids)
	}
	for _, tt := range []struct {
		mask []bool
		want string
	}{
		{[]bool{true, false}, "2 entries, want one per row (5)"},
		{make([]bool, 5), "puts 0 of 5 rows"},
		{[]bool{true, true, true, true, true}, "puts 5 of 5 rows"},
	} {
		if _, _, err := SplitByMask(d, tt.mask); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SplitByMask(%v) error = %v, want one containing %q", tt.mask, err, tt.want)
		}
	}
}

func TestClipRows(t *testing.T) {
	d := randomData(t, 500, 7, 3)
	for i := range 7 { // a few exact cases
		d.X[i] = 0
	}
	d.X[7] = 1e300 // overflow-prone row
	orig := slices.Clone(d.X)
	for _, maxNorm := range []float64{1, 0.1, 2.5, 1e-300} {
		c := ClipRows(d, maxNorm)
		if !slices.Equal(d.X, orig) {
			t.Fatalf("ClipRows(%g) modified its input", maxNorm)
		}
		for i := range d.N {
			in, out := d.Row(i), c.Row(i)
			nIn, nOut := norm(in), norm(out)
			if nOut > maxNorm {
				t.Errorf("ClipRows(%g) row %d norm = %.17g, want ≤ %g", maxNorm, i, nOut, maxNorm)
			}
			if nIn <= maxNorm {
				if !slices.Equal(in, out) {
					t.Errorf("ClipRows(%g) changed row %d of norm %g", maxNorm, i, nIn)
				}
				continue
			}
			// Clipped rows keep their direction and reach the bound.
			if math.Abs(nOut-maxNorm) > 1e-14*maxNorm {
				t.Errorf("ClipRows(%g) row %d norm = %.17g, want %g (to 1e-14)", maxNorm, i, nOut, maxNorm)
			}
			for j := range in {
				if want := in[j] / nIn * nOut; math.Abs(out[j]-want) > 1e-14*maxNorm {
					t.Errorf("ClipRows(%g)[%d,%d] = %g, want %g (same direction)", maxNorm, i, j, out[j], want)
				}
			}
		}
	}
}

func TestStandardiser(t *testing.T) {
	d := randomData(t, 300, 4, 5)
	for i := range d.N {
		d.X[i*4+1] = 3*d.X[i*4+1] + 10 // shifted, scaled column
		d.X[i*4+3] = 2                 // constant column
	}
	s := FitStandardiser(d)
	z := s.Apply(d)
	for j := range 4 {
		mean, sq := 0.0, 0.0
		for i := range z.N {
			mean += z.X[i*4+j]
		}
		mean /= float64(z.N)
		for i := range z.N {
			sq += (z.X[i*4+j] - mean) * (z.X[i*4+j] - mean)
		}
		sd := math.Sqrt(sq / float64(z.N))
		wantSD := 1.0
		if j == 3 {
			wantSD = 0
		}
		if math.Abs(mean) > 1e-12 || math.Abs(sd-wantSD) > 1e-12 {
			t.Errorf("standardised column %d: mean %g, sd %g, want 0, %g", j, mean, sd, wantSD)
		}
	}
}

// TestObjectiveGradient compares the analytic gradient with central finite
// differences, step 1e-6: the truncation error is O(h²‖∇³F‖) ≈ 1e-12 and
// the rounding error ≈ 1e-16/1e-6 = 1e-10, so 1e-7 is a safe tolerance.
func TestObjectiveGradient(t *testing.T) {
	data := randomData(t, 50, 4, 11)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, bias := range []bool{true, false} {
		for _, lambda := range []float64{1e-3, 0.7} {
			o := newLogisticObjective(data, lambda, bias)
			p := make([]float64, o.dim())
			for j := range p {
				p[j] = rng.NormFloat64()
			}
			g := make([]float64, o.dim())
			o.eval(p, g)
			scratch := make([]float64, o.dim())
			for j := range p {
				const h = 1e-6
				pp, pm := slices.Clone(p), slices.Clone(p)
				pp[j] += h
				pm[j] -= h
				fd := (o.eval(pp, scratch) - o.eval(pm, scratch)) / (2 * h)
				if math.Abs(fd-g[j]) > 1e-7 {
					t.Errorf("bias=%v λ=%g: ∂F/∂p[%d] = %.12g, finite difference %.12g", bias, lambda, j, g[j], fd)
				}
			}
		}
	}
}

// TestObjectiveValue pins F on a hand case: w = 1, b = 0.5, x = (0, 2),
// y = (1, 0), λ = 0.2: F = 0.1 + ½[log(1+e^{−0.5}) + log(1+e^{2.5})].
func TestObjectiveValue(t *testing.T) {
	data, _ := NewData([]float64{0, 2}, []float64{1, 0}, 2, 1)
	o := newLogisticObjective(data, 0.2, true)
	got := o.eval([]float64{1, 0.5}, make([]float64, 2))
	want := 0.1 + 0.5*(math.Log(1+math.Exp(-0.5))+math.Log(1+math.Exp(2.5)))
	if math.Abs(got-want) > 1e-15 {
		t.Errorf("F(1, 0.5) = %.17g, want %.17g", got, want)
	}
}

func TestTrainLogisticReference(t *testing.T) {
	// References: the zero of the gradient solved with mpmath.findroot at
	// 40 digits (see each case).
	tests := []struct {
		name   string
		x, y   []float64
		d      int
		lambda float64
		bias   bool
		want   []float64 // w…, then b if bias
	}{
		// Symmetric: b = 0 and w solves w = σ(−w).
		{"symmetric", []float64{-1, 1}, []float64{0, 1}, 1, 1, false, []float64{0.4010581375415470356506254}},
		{"symmetric-bias", []float64{-1, 1}, []float64{0, 1}, 1, 1, true, []float64{0.4010581375415470356506254, 0}},
		{"1d-bias", []float64{0, 1, 2, 3}, []float64{0, 1, 0, 1}, 1, 0.5, true,
			[]float64{0.309601479964701946709187, -0.4644022199470529200637805}},
		{"2d-bias", []float64{1, 2, -1, 0.5, 0.3, -1, 2, 1, -0.5, -2}, []float64{1, 0, 0, 1, 1}, 2, 0.1, true,
			[]float64{0.8369486655038276180256453, -0.005694971999450079500857947, 0.1919139560998800644636237}},
	}
	for _, tt := range tests {
		data, err := NewData(tt.x, tt.y, len(tt.y), tt.d)
		if err != nil {
			t.Fatal(err)
		}
		train := TrainLogistic
		if !tt.bias {
			train = TrainLogisticNoBias
		}
		m, err := train(context.Background(), data, tt.lambda)
		if err != nil {
			t.Fatalf("%s: error %v", tt.name, err)
		}
		got := append(slices.Clone(m.W), m.B)
		if !tt.bias && m.B != 0 {
			t.Errorf("%s: B = %g, want 0 without bias", tt.name, m.B)
		}
		for j, w := range tt.want {
			// ‖∇F‖∞ ≤ 1e-9 and F is λ-strongly convex in w, so |Δ| ≲ 1e-9/λ.
			if math.Abs(got[j]-w) > 1e-8 {
				t.Errorf("%s: parameter %d = %.15g, want %.15g", tt.name, j, got[j], w)
			}
		}
	}
}

// TestTrainLogisticOptimum checks that the returned point is a stationary
// point of F: ‖∇F‖∞ ≤ 1e-6 (the accepted tolerance; usually ≤ 1e-9).
func TestTrainLogisticOptimum(t *testing.T) {
	for _, tt := range []struct {
		n, d   int
		lambda float64
	}{{200, 5, 1e-2}, {1000, 30, 1e-4}, {50, 10, 10}, {30, 40, 1e-3}} {
		data := randomData(t, tt.n, tt.d, uint64(tt.n))
		for _, bias := range []bool{true, false} {
			fit := TrainLogistic
			if !bias {
				fit = TrainLogisticNoBias
			}
			m, err := fit(context.Background(), data, tt.lambda)
			if err != nil {
				t.Fatalf("%d×%d λ=%g bias=%v: %v", tt.n, tt.d, tt.lambda, bias, err)
			}
			o := newLogisticObjective(data, tt.lambda, bias)
			p := slices.Clone(m.W)
			if bias {
				p = append(p, m.B)
			}
			g := make([]float64, len(p))
			o.eval(p, g)
			if gn := infNorm(g); gn > 1e-6 {
				t.Errorf("%d×%d λ=%g bias=%v: ‖∇F‖∞ = %g at the result, want ≤ 1e-6", tt.n, tt.d, tt.lambda, bias, gn)
			}
		}
	}
}

func TestTrainLogisticErrors(t *testing.T) {
	data := randomData(t, 20, 2, 1)
	one, _ := NewData([]float64{1, 2, 3}, []float64{1, 1, 1}, 3, 1)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		ctx    context.Context
		data   Data
		lambda float64
		want   string
	}{
		{context.Background(), data, 0, "lambda must be positive"},
		{context.Background(), data, -1, "lambda must be positive"},
		{context.Background(), data, math.NaN(), "lambda must be positive"},
		{context.Background(), data, math.Inf(1), "lambda must be positive"},
		{context.Background(), one, 1, "only one label (3 of 3 rows positive)"},
		{context.Background(), Data{X: []float64{1}, Y: []float64{1, 0}, N: 2, D: 1}, 1, "feature values"},
		{cancelled, data, 1, context.Canceled.Error()},
	} {
		_, err := TrainLogistic(tt.ctx, tt.data, tt.lambda)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("TrainLogistic(λ=%g) error = %v, want one containing %q", tt.lambda, err, tt.want)
		}
	}
	// One label is fine without a bias.
	if _, err := TrainLogisticNoBias(context.Background(), one, 1); err != nil {
		t.Errorf("TrainLogisticNoBias(one label) error: %v", err)
	}
}

// TestTrainLogisticCancelDuringRun cancels from inside the objective's data
// pass count: a context that is done after the first few checks.
func TestTrainLogisticCancelDuringRun(t *testing.T) {
	data := randomData(t, 2000, 20, 9)
	ctx := &countdownCtx{Context: context.Background(), left: 3}
	_, err := TrainLogistic(ctx, data, 1e-6)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("TrainLogistic with a context cancelled mid-run: error %v, want context.Canceled", err)
	}
}

// countdownCtx reports Canceled after its Err method has been called left
// times.
type countdownCtx struct {
	context.Context
	left int
}

func (c *countdownCtx) Err() error {
	if c.left <= 0 {
		return context.Canceled
	}
	c.left--
	return nil
}

func TestScores(t *testing.T) {
	// w = (1), b = 0; rows x and labels y give margins z = x.
	val, _ := NewData([]float64{0.5, -2, 0.25, 3}, []float64{1, 1, 0, 0}, 4, 1)
	m := Model{W: []float64{1}}
	// Predictions 1[z > 0] = 1, 0, 1, 1 against labels 1, 1, 0, 0.
	if got := Accuracy(m, val); got != 0.25 {
		t.Errorf("Accuracy = %g, want 0.25", got)
	}
	// Ramp: clamp(1 − ỹz, 0, 1) = 0.5, 1, 1, 1.
	if got, want := RampScore(m, val), -3.5/4; math.Abs(got-want) > 1e-15 {
		t.Errorf("RampScore = %.17g, want %.17g", got, want)
	}
	// Sigmoid: 1/(1 + e^{ỹz}) with ỹz = 0.5, −2, −0.25, −3.
	want := 0.0
	for _, yz := range []float64{0.5, -2, -0.25, -3} {
		want -= 1 / (1 + math.Exp(yz)) / 4
	}
	if got := SigmoidScore(m, val); math.Abs(got-want) > 1e-15 {
		t.Errorf("SigmoidScore = %.17g, want %.17g", got, want)
	}
	// z = 0 predicts 0.
	if got := Accuracy(Model{W: []float64{0}}, val); got != 0.5 {
		t.Errorf("Accuracy(w = 0) = %g, want 0.5 (z = 0 predicts label 0)", got)
	}
}

// TestScoreLipschitz checks the documented constants empirically: for rows
// with ‖x‖ ≤ 1, |g(w) − g(w')| ≤ L‖w − w'‖ for random pairs, and 0 ≤ g ≤ g*.
func TestScoreLipschitz(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const d = 3
	for trial := range 20000 {
		x := make([]float64, d)
		for j := range x {
			x[j] = rng.NormFloat64()
		}
		x = ClipRows(Data{X: x, Y: []float64{0}, N: 1, D: d}, rng.Float64()).X
		y := float64(trial % 2)
		w1, w2 := make([]float64, d), make([]float64, d)
		diff := make([]float64, d)
		for j := range d {
			w1[j] = 3 * rng.NormFloat64()
			w2[j] = w1[j] + 0.5*rng.NormFloat64()
			diff[j] = w1[j] - w2[j]
		}
		val := Data{X: x, Y: []float64{y}, N: 1, D: d}
		for _, s := range []struct {
			name   string
			f      func(Model, Data) float64
			L, max float64
		}{{"ramp", RampScore, ScoreLipschitz, ScoreBound}, {"sigmoid", SigmoidScore, SigmoidLipschitz, SigmoidBound}} {
			g1, g2 := -s.f(Model{W: w1}, val), -s.f(Model{W: w2}, val)
			if math.Abs(g1-g2) > s.L*norm(diff)*(1+1e-12)+1e-15 || g1 < 0 || g1 > s.max {
				t.Fatalf("%s: g(w1) = %g, g(w2) = %g, ‖w1 − w2‖ = %g: violates L = %g or g* = %g", s.name, g1, g2, norm(diff), s.L, s.max)
			}
		}
	}
}
