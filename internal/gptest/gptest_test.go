package gptest

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func se(x []float64, l float64) func(i, j int) float64 {
	return func(i, j int) float64 {
		d := x[i] - x[j]
		return math.Exp(-d * d / (2 * l * l))
	}
}

// TestFactor checks that L Lᵀ is K + σ²I.
func TestFactor(t *testing.T) {
	x := []float64{0, 0.1, 0.35, 0.7, 1}
	k := se(x, 0.3)
	ch := Factor(t, len(x), k, 0.01)
	var l mat.TriDense
	ch.LTo(&l)
	var llt mat.Dense
	llt.Mul(&l, l.T())
	for i := range x {
		for j := range x {
			want := k(i, j)
			if i == j {
				want += 0.01
			}
			if got := llt.At(i, j); math.Abs(got-want) > 1e-12 {
				t.Errorf("(L Lᵀ)[%d][%d] = %.15g, want %.15g", i, j, got, want)
			}
		}
	}
}

// TestDrawPriorCovariance: the sample covariance of 20000 draws at three points is K + σ²I
// within sampling error (sd of a covariance estimate ≤ √(2/20000) ≈ 0.01 for entries ≤ 1).
func TestDrawPriorCovariance(t *testing.T) {
	x := []float64{0, 0.2, 0.9}
	k := se(x, 0.4)
	const noise, draws = 0.05, 20000
	rng := rand.New(rand.NewPCG(1, 2))
	ch := Factor(t, len(x), k, noise)
	var sum [3][3]float64
	for range draws {
		f := Draw(ch, rng)
		for i := range 3 {
			for j := range 3 {
				sum[i][j] += f[i] * f[j]
			}
		}
	}
	for i := range 3 {
		for j := range 3 {
			want := k(i, j)
			if i == j {
				want += noise
			}
			if got := sum[i][j] / draws; math.Abs(got-want) > 0.05 {
				t.Errorf("cov[%d][%d] = %.4f, want %.4f", i, j, got, want)
			}
		}
	}
	// DrawPrior is Factor then Draw, on the same stream.
	a := DrawPrior(t, rand.New(rand.NewPCG(5, 6)), 3, k, noise)
	b := Draw(ch, rand.New(rand.NewPCG(5, 6)))
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("DrawPrior %v, Factor+Draw %v", a, b)
		}
	}
}

// fatalRecorder records whether Fatalf was called, standing in for a test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
}

// TestFactorNotPositiveDefinite: a matrix that is not positive definite fails the test.
func TestFactorNotPositiveDefinite(t *testing.T) {
	rec := &fatalRecorder{}
	Factor(rec, 2, func(i, j int) float64 { return 1 }, -0.5)
	if !rec.failed {
		t.Error("Factor of [[0.5 1] [1 0.5]] did not fail the test")
	}
}
