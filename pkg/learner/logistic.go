package learner

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/optimize"
)

// Model is a linear classifier: z = W·x + B, predicted label 1[z > 0],
// P(y = 1 | x) = σ(z).
type Model struct {
	W []float64
	B float64
}

// Margin returns z = W·x + B. It panics if len(x) ≠ len(W).
func (m Model) Margin(x []float64) float64 {
	if len(x) != len(m.W) {
		panic(fmt.Sprintf("learner: model has %d weights, row has %d features", len(m.W), len(x)))
	}
	return dot(m.W, x) + m.B
}

// gradTolerance is the L-BFGS stopping threshold on the gradient's infinity
// norm; acceptTolerance is the largest one accepted when the line search
// cannot make further progress in floating point.
const (
	gradTolerance   = 1e-9
	acceptTolerance = 1e-6
	maxIterations   = 10_000
)

// TrainLogistic returns the minimiser of
// λ/2 ‖w‖² + (1/n) Σ log(1 + exp(−ỹ_i (w·x_i + b))) with the bias b
// unregularised (see the package documentation), found from 0 by L-BFGS
// with the analytic gradient to a
// gradient infinity norm below 1e-9 (or 1e-6 if floating point stops the
// line search first). It needs λ > 0 finite and both labels present in train
// (otherwise b diverges). It stops with ctx's error when ctx is done.
func TrainLogistic(ctx context.Context, train Data, lambda float64) (Model, error) {
	return trainLogistic(ctx, train, lambda, true)
}

// TrainLogisticNoBias is TrainLogistic with b fixed at 0: the minimiser of
// the λ-strongly convex λ/2 ‖w‖² + (1/n) Σ log(1 + exp(−ỹ_i w·x_i)), the
// learner Kusner et al.'s Algorithm 3 analyses. One label alone is allowed.
func TrainLogisticNoBias(ctx context.Context, train Data, lambda float64) (Model, error) {
	return trainLogistic(ctx, train, lambda, false)
}

func trainLogistic(ctx context.Context, train Data, lambda float64, bias bool) (Model, error) {
	if err := train.check(); err != nil {
		return Model{}, err
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return Model{}, fmt.Errorf("learner: regularisation lambda must be positive and finite, got %g", lambda)
	}
	if !train.Binary() {
		return Model{}, fmt.Errorf("learner: logistic regression needs binary labels, the data has %d classes (use TrainSoftmax)", train.NumClasses())
	}
	if pos := train.Positives(); bias && (pos == 0 || pos == train.N) {
		return Model{}, fmt.Errorf("learner: training data has only one label (%d of %d rows positive); with an unregularised bias there is no minimiser", pos, train.N)
	}
	if err := ctx.Err(); err != nil {
		return Model{}, err
	}
	obj := newLogisticObjective(train, lambda, bias)
	p, gn, iters, err := minimize(ctx, obj)
	if cerr := ctx.Err(); cerr != nil {
		return Model{}, cerr
	}
	if err != nil && !(gn <= acceptTolerance) {
		return Model{}, fmt.Errorf("learner: logistic regression did not converge (gradient norm %.3g after %d iterations, lambda %g): %v",
			gn, iters, lambda, err)
	}
	m := Model{W: slices.Clone(p[:train.D])}
	if bias {
		m.B = p[train.D]
	}
	return m, nil
}

// logisticObjective evaluates F and ∇F in one pass over the data.
type logisticObjective struct {
	x, y   []float64
	n, d   int
	lambda float64
	bias   bool
}

func newLogisticObjective(train Data, lambda float64, bias bool) *logisticObjective {
	return &logisticObjective{x: train.X, y: train.Y, n: train.N, d: train.D, lambda: lambda, bias: bias}
}

func (o *logisticObjective) dim() int {
	if o.bias {
		return o.d + 1
	}
	return o.d
}

// eval returns F(p) and writes ∇F(p) into g; p = (w, b), or w without bias.
func (o *logisticObjective) eval(p, g []float64) float64 {
	if len(p) != o.dim() || len(g) != o.dim() {
		panic(fmt.Sprintf("learner: objective of dimension %d evaluated with %d and %d values", o.dim(), len(p), len(g)))
	}
	w := p[:o.d]
	b := 0.0
	if o.bias {
		b = p[o.d]
	}
	clear(g)
	gw := g[:o.d]
	loss, sb := 0.0, 0.0
	for i := range o.n {
		row := o.x[i*o.d : (i+1)*o.d]
		z := dot(w, row) + b
		// log(1 + exp(−ỹz)) = log(1 + e^z) − y·z; its z-derivative is σ(z) − y.
		// Both from e = exp(−|z|) (no overflow, one exponential).
		e := math.Exp(-math.Abs(z))
		sig := 1 / (1 + e)
		if z < 0 {
			sig = e / (1 + e)
		}
		loss += max(z, 0) + math.Log1p(e) - o.y[i]*z
		c := sig - o.y[i]
		axpy(gw, c, row)
		sb += c
	}
	inv := 1 / float64(o.n)
	for j := range gw {
		gw[j] = gw[j]*inv + o.lambda*w[j]
	}
	if o.bias {
		g[o.d] = sb * inv
	}
	return 0.5*o.lambda*dot(w, w) + loss*inv
}

// sigmoid returns 1/(1 + e^{−t}) without overflow.
func sigmoid(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

func dot(a, b []float64) float64 {
	b = b[:len(a)]
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// axpy sets y += a·x.
func axpy(y []float64, a float64, x []float64) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += a * v
	}
}

func infNorm(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// objective is a smooth function of dim() parameters: eval returns its value
// at p and writes its gradient into g.
type objective interface {
	dim() int
	eval(p, g []float64) float64
}

// minimize runs gonum's L-BFGS on the objective from the origin. gonum/optimize takes no
// context, so a cancelled ctx makes the gradient read as zero, which ends the run at
// once; the caller then reports ctx's error.
func minimize(ctx context.Context, obj objective) (x []float64, gnorm float64, iters int, err error) {
	dim := obj.dim()
	g := make([]float64, dim)
	problem := optimize.Problem{
		Func: func(x []float64) float64 { return obj.eval(x, g) },
		Grad: func(grad, x []float64) {
			if ctx.Err() != nil {
				clear(grad)
				return
			}
			obj.eval(x, grad)
		},
	}
	settings := &optimize.Settings{
		GradientThreshold: gradTolerance,
		MajorIterations:   maxIterations,
		Converger:         &optimize.FunctionConverge{Absolute: 0, Relative: 0, Iterations: maxIterations},
	}
	res, err := optimize.Minimize(problem, make([]float64, dim), settings, &optimize.LBFGS{Store: 10})
	if res == nil {
		return make([]float64, dim), math.Inf(1), 0, err
	}
	obj.eval(res.X, g)
	return res.X, infNorm(g), res.Stats.MajorIterations, err
}
