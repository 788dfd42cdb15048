package learner

import (
	"context"
	"math"
	"testing"
)

// TestLBFGSQuadratic minimises f(x) = ½ Σ a_i x_i² − Σ b_i x_i with
// curvatures a_i from 1 to 10⁴ (condition number 10⁴); the minimiser is
// x_i = b_i/a_i. ‖∇f‖∞ ≤ 1e-9 bounds the error by 1e-9/min a_i = 1e-9.
func TestLBFGSQuadratic(t *testing.T) {
	const n = 50
	a, b := make([]float64, n), make([]float64, n)
	for i := range n {
		a[i] = math.Pow(1e4, float64(i)/(n-1))
		b[i] = float64(i%7) - 3
	}
	fg := func(x, g []float64) float64 {
		f := 0.0
		for i, v := range x {
			f += 0.5*a[i]*v*v - b[i]*v
			g[i] = a[i]*v - b[i]
		}
		return f
	}
	x := make([]float64, n)
	gn, iters, err := lbfgs(context.Background(), fg, x, 1e-9, 10_000)
	if err != nil || gn > 1e-9 {
		t.Fatalf("lbfgs: gradient norm %g after %d iterations, error %v", gn, iters, err)
	}
	for i, v := range x {
		if want := b[i] / a[i]; math.Abs(v-want) > 1e-9 {
			t.Errorf("x[%d] = %.15g, want %.15g", i, v, want)
		}
	}
	t.Logf("converged in %d iterations", iters)
}

// TestLBFGSIterationLimit: a limit too small to converge is reported.
func TestLBFGSIterationLimit(t *testing.T) {
	fg := func(x, g []float64) float64 {
		// Rosenbrock: far from converged after 2 iterations.
		g[0] = -2*(1-x[0]) - 400*x[0]*(x[1]-x[0]*x[0])
		g[1] = 200 * (x[1] - x[0]*x[0])
		return (1-x[0])*(1-x[0]) + 100*(x[1]-x[0]*x[0])*(x[1]-x[0]*x[0])
	}
	x := []float64{-1.2, 1}
	if _, iters, err := lbfgs(context.Background(), fg, x, 1e-9, 2); err == nil || iters != 2 {
		t.Errorf("lbfgs with 2 iterations: %d iterations, error %v, want 2 and an iteration-limit error", iters, err)
	}
}
