package learner

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Classifier predicts a class label in [0, K) for a row of features. Model
// (logistic regression, K = 2) and Softmax implement it; Accuracy and
// NoisyAccuracy score any of them.
type Classifier interface {
	// Predict returns the predicted class of x; it panics if len(x) is not
	// NumFeatures().
	Predict(x []float64) int
	// NumFeatures returns the number of features a row must have.
	NumFeatures() int
}

// Predict returns 1 if Margin(x) > 0, else 0.
func (m Model) Predict(x []float64) int {
	if m.Margin(x) > 0 {
		return 1
	}
	return 0
}

// NumFeatures returns len(W).
func (m Model) NumFeatures() int { return len(m.W) }

// Softmax is multinomial logistic regression over Classes classes: logits
// z_k = w_k·x + b_k, P(y = k | x) = exp(z_k)/Σ_j exp(z_j), predicted class
// argmax_k z_k (the lowest k on ties). W is row-major Classes×(Features+1):
// row k is (w_k, b_k).
type Softmax struct {
	Classes, Features int
	W                 []float64
}

func (m Softmax) check() error {
	if m.Classes < 2 || m.Features < 1 || len(m.W) != m.Classes*(m.Features+1) {
		return fmt.Errorf("learner: softmax model needs ≥ 2 classes, ≥ 1 feature and Classes×(Features+1) parameters, got %d, %d and %d",
			m.Classes, m.Features, len(m.W))
	}
	return nil
}

// NumFeatures returns Features.
func (m Softmax) NumFeatures() int { return m.Features }

// Logits writes z_k = w_k·x + b_k into z (length Classes). It panics on a
// shape mismatch.
func (m Softmax) Logits(x, z []float64) {
	if len(x) != m.Features || len(z) != m.Classes || len(m.W) != m.Classes*(m.Features+1) {
		panic(fmt.Sprintf("learner: softmax model of %d classes × %d features given a row of %d features and %d logits", m.Classes, m.Features, len(x), len(z)))
	}
	d := m.Features
	for k := range z {
		z[k] = dot(m.W[k*(d+1):k*(d+1)+d], x) + m.W[k*(d+1)+d]
	}
}

// Predict returns argmax_k z_k, the lowest k on ties.
func (m Softmax) Predict(x []float64) int {
	z := make([]float64, m.Classes)
	m.Logits(x, z)
	best := 0
	for k, v := range z {
		if v > z[best] {
			best = k
		}
	}
	return best
}

// softmaxInto writes softmax(z) into p, shifted by max z against overflow.
func softmaxInto(z, p []float64) {
	m := slices.Max(z)
	s := 0.0
	for k, v := range z {
		p[k] = math.Exp(v - m)
		s += p[k]
	}
	for k := range p {
		p[k] /= s
	}
}

// TrainSoftmax returns a minimiser of
//
//	F(W) = λ/2 Σ_k ‖w_k‖² + (1/n) Σ_i −log P(y_i | x_i),
//
// the L2-regularised multinomial logistic loss with unregularised biases,
// found from 0 by L-BFGS with the analytic gradient
//
//	∇_{w_k} F = λ w_k + (1/n) Σ_i (p_ik − 1[y_i = k]) x_i,   ∂_{b_k} F = (1/n) Σ_i (p_ik − 1[y_i = k]),
//
// to a gradient infinity norm below 1e-9 (or 1e-6 if floating point stops the
// line search first). F is convex; the biases are determined up to a common
// shift, which changes no prediction. It needs λ > 0 finite and is the
// non-private reference DP-SGD's softmax regression is compared with. It
// stops with ctx's error when ctx is done.
func TrainSoftmax(ctx context.Context, train Data, lambda float64) (Softmax, error) {
	if err := train.check(); err != nil {
		return Softmax{}, err
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return Softmax{}, fmt.Errorf("learner: regularisation lambda must be positive and finite, got %g", lambda)
	}
	if err := ctx.Err(); err != nil {
		return Softmax{}, err
	}
	obj := &softmaxObjective{x: train.X, y: train.Y, n: train.N, d: train.D, k: train.NumClasses(), lambda: lambda}
	obj.z, obj.p = make([]float64, obj.k), make([]float64, obj.k)
	p, gn, iters, err := minimize(ctx, obj)
	if cerr := ctx.Err(); cerr != nil {
		return Softmax{}, cerr
	}
	if err != nil && !(gn <= acceptTolerance) {
		return Softmax{}, fmt.Errorf("learner: softmax regression did not converge (gradient norm %.3g after %d iterations, lambda %g): %v",
			gn, iters, lambda, err)
	}
	return Softmax{Classes: obj.k, Features: train.D, W: slices.Clone(p)}, nil
}

// softmaxObjective evaluates F and ∇F of TrainSoftmax in one pass; the
// parameters are laid out as Softmax.W.
type softmaxObjective struct {
	x, y    []float64
	n, d, k int
	lambda  float64
	z, p    []float64
}

func (o *softmaxObjective) dim() int { return o.k * (o.d + 1) }

func (o *softmaxObjective) eval(w, g []float64) float64 {
	if len(w) != o.dim() || len(g) != o.dim() {
		panic(fmt.Sprintf("learner: objective of dimension %d evaluated with %d and %d values", o.dim(), len(w), len(g)))
	}
	d := o.d
	clear(g)
	loss := 0.0
	for i := range o.n {
		row := o.x[i*d : (i+1)*d]
		for k := range o.k {
			o.z[k] = dot(w[k*(d+1):k*(d+1)+d], row) + w[k*(d+1)+d]
		}
		// −log p_y = logsumexp(z) − z_y.
		m := slices.Max(o.z)
		s := 0.0
		for _, v := range o.z {
			s += math.Exp(v - m)
		}
		y := int(o.y[i])
		loss += m + math.Log(s) - o.z[y]
		softmaxInto(o.z, o.p)
		o.p[y] -= 1
		for k, c := range o.p {
			gk := g[k*(d+1) : (k+1)*(d+1)]
			axpy(gk[:d], c, row)
			gk[d] += c
		}
	}
	inv := 1 / float64(o.n)
	reg := 0.0
	for k := range o.k {
		wk, gk := w[k*(d+1):k*(d+1)+d], g[k*(d+1):(k+1)*(d+1)]
		for j := range gk {
			gk[j] *= inv
		}
		for j, v := range wk {
			gk[j] += o.lambda * v
			reg += v * v
		}
	}
	return 0.5*o.lambda*reg + loss*inv
}
