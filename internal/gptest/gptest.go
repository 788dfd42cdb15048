// Package gptest holds dense reference computations for tests of Gaussian-process code:
// the Cholesky factor of K + σ²I by gonum, and draws from a zero-mean GP prior
// f ~ N(0, K + σ²I) as L w with L Lᵀ = K + σ²I and w ~ N(0, I) (Rasmussen and Williams
// 2006, appendix A.2). They are written independently of package gpucb, so that tests
// can check its packed factorisation and fit hyperparameters to functions with known ones.
package gptest

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Factor returns the Cholesky factorisation of the m×m matrix K + noise·I, where
// K[i][j] = k(i, j) for a symmetric k; it fails t if the matrix is not positive definite.
func Factor(t testing.TB, m int, k func(i, j int) float64, noise float64) *mat.Cholesky {
	t.Helper()
	a := mat.NewSymDense(m, nil)
	for i := range m {
		for j := 0; j <= i; j++ {
			v := k(i, j)
			if i == j {
				v += noise
			}
			a.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		t.Fatalf("gptest: K + %g·I (%d×%d) is not positive definite", noise, m, m)
	}
	return &ch
}

// Draw returns L w, with L the lower factor of ch and w standard normal from rng, drawn
// in order w[0], w[1], …: one draw of N(0, L Lᵀ).
func Draw(ch *mat.Cholesky, rng *rand.Rand) []float64 {
	var l mat.TriDense
	ch.LTo(&l)
	m := ch.SymmetricDim()
	w := make([]float64, m)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	var v mat.VecDense
	v.MulVec(&l, mat.NewVecDense(m, w))
	return v.RawVector().Data
}

// DrawPrior returns one draw at m points of a zero-mean GP with covariance k(i, j)
// between points i and j, plus noise·I (observation noise, or jitter), from rng.
func DrawPrior(t testing.TB, rng *rand.Rand, m int, k func(i, j int) float64, noise float64) []float64 {
	t.Helper()
	return Draw(Factor(t, m, k, noise), rng)
}
