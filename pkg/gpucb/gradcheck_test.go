package gpucb

import (
	"math"
	"testing"
)

// checkGradient compares the analytic gradient of the log marginal likelihood lml with
// respect to (log l, log σ_y², log σ_n²) at h with central finite differences (step
// 1e-5 in each log hyperparameter), to a relative 1e-5.
func checkGradient(t *testing.T, what string, h Hyper, lml func(Hyper) (float64, [3]float64, error)) {
	t.Helper()
	_, g, err := lml(h)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	const step = 1e-5
	for j := range 3 {
		at := func(d float64) float64 {
			th := [3]float64{math.Log(h.Lengthscale), math.Log(h.SignalVariance), math.Log(h.NoiseVariance)}
			th[j] += d
			v, _, err := lml(Hyper{math.Exp(th[0]), math.Exp(th[1]), math.Exp(th[2])})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return v
		}
		fd := (at(step) - at(-step)) / (2 * step)
		if math.Abs(g[j]-fd) > 1e-5*max(1, math.Abs(fd)) {
			t.Errorf("%s: gradient[%d] = %.10g, finite difference %.10g", what, j, g[j], fd)
		}
	}
}
