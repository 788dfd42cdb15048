package projection

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// seededNoise gives row partition k the test source seed·1000 + k.
func seededNoise(seed uint64) func(int) *dp.Source {
	return func(k int) *dp.Source { return dptest.Source(seed*1000 + uint64(k)) }
}

// outsideColumnSpace returns the largest relative residual of a column of
// z (row-major n×r) after projecting it onto the column space of the centred
// data x (row-major n×d).
func outsideColumnSpace(t *testing.T, z []float64, x []float64, n, d, r int) float64 {
	t.Helper()
	var qr mat.QR
	qr.Factorize(centredDense(x, n, d))
	var q mat.Dense
	qr.QTo(&q)
	basis := q.Slice(0, n, 0, d)
	zm := mat.NewDense(n, r, z)
	var coef, proj mat.Dense
	coef.Mul(basis.T(), zm)
	proj.Mul(basis, &coef)
	var worst float64
	for j := range r {
		var res, norm float64
		for i := range n {
			res += math.Pow(zm.At(i, j)-proj.At(i, j), 2)
			norm += zm.At(i, j) * zm.At(i, j)
		}
		worst = math.Max(worst, math.Sqrt(res/norm))
	}
	return worst
}

// TestLiftedReleaseRevealsColumnSpace records why the curator offers the
// Gaussian mechanism: the release of Algorithm 1 (docs/MATHS.md §2.1) lies exactly in
// the column space of the centred data, in both branches, because lifting
// keeps U. With n > d + 1, moving one row by less than one unit moves that
// space, so an adversary who knows the other rows (the DP threat model) can
// tell X from its neighbour X′ with certainty — no finite ε covers that. The
// Gaussian mechanism's noise spans all of Rⁿˣʳ, so the test finds no such
// structure in its release.
func TestLiftedReleaseRevealsColumnSpace(t *testing.T) {
	const n, d, r = 40, 3, 4
	x := gaussianData(3, n, d, 2)
	xn := append([]float64(nil), x...)
	xn[0] += 0.6 // a neighbour: row 0 moved by 0.6·√2 ≈ 0.85 < 1 unit
	xn[1] -= 0.6
	for _, c := range []struct {
		name   string
		eps    float64
		lifted bool
	}{{"step 5 (not lifted)", 1e9, false}, {"step 6 (lifted)", 1, true}} {
		z, rep, err := Project(context.Background(), x, n, d, Params{R: r, Epsilon: c.eps, Delta: 1e-5}, SeededSource(1))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Lifted != c.lifted {
			t.Fatalf("%s: Lifted = %v", c.name, rep.Lifted)
		}
		if in := outsideColumnSpace(t, z, x, n, d, r); in > 1e-9 {
			t.Errorf("%s: release is %.3g outside colspace(X): the distinguisher below is moot", c.name, in)
		}
		if out := outsideColumnSpace(t, z, xn, n, d, r); out < 1e-3 {
			t.Errorf("%s: release is only %.3g outside the neighbour's column space", c.name, out)
		}
	}
	z, _, err := ProjectGaussian(context.Background(), x, n, d, Params{R: r, Epsilon: 1, Delta: 1e-5}, SeededSource(1), seededNoise(2))
	if err != nil {
		t.Fatal(err)
	}
	if in := outsideColumnSpace(t, z, x, n, d, r); in < 0.1 {
		t.Errorf("Gaussian mechanism: release is only %.3g outside colspace(X)", in)
	}
}

// TestProjectGaussian checks the release against its definition: with the
// same M (a seeded source drawn again), Z − r^(−1/2)·X_c·M is noise of
// standard deviation Report.NoiseSD, and NoiseSD is dp.VectorGaussian's σ for
// the sensitivity sqrt(1 − 1/n)·‖M‖₂/√r (‖M‖₂ from gonum's SVD). The noise's
// mean and variance are checked with Google's 4.41717-standard-error
// tolerance (false failure ≈ 1e-5 each, fixed seeds).
func TestProjectGaussian(t *testing.T) {
	const n, d, r = 2000, 6, 5
	x := gaussianData(5, n, d, 3)
	p := Params{R: r, Epsilon: 2, Delta: 1e-5}
	z, rep, err := ProjectGaussian(context.Background(), x, n, d, p, SeededSource(9), seededNoise(4))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mechanism != MechanismGaussian || rep.Lifted || rep.N != n || rep.D != d || rep.R != r {
		t.Errorf("Report = %+v", rep)
	}
	m := make([]float64, d*r)
	SeededSource(9).normals(m)
	if err := orthonormalise(m, d, r); err != nil {
		t.Fatal(err)
	}
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(d, r, m), mat.SVDNone) {
		t.Fatal("SVD of M failed")
	}
	sens := math.Sqrt(1-1.0/n) * svd.Values(nil)[0] / math.Sqrt(r)
	// r^(−1/2)·M = √(d/r)·Q: every singular value is √(d/r).
	if want := math.Sqrt(1-1.0/n) * math.Sqrt(float64(d)/r); math.Abs(sens-want) > 1e-12*want {
		t.Errorf("sensitivity %g, want sqrt(1 − 1/n)·√(d/r) = %g", sens, want)
	}
	want, err := dp.NewVectorGaussian(p.Epsilon, p.Delta, sens, n*r)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.NoiseSD-want.Scale()) > 1e-9*want.Scale() {
		t.Errorf("NoiseSD = %g, want %g (sensitivity %g)", rep.NoiseSD, want.Scale(), sens)
	}
	if rep.Sensitivity < sens || rep.Sensitivity > sens*(1+1e-11) {
		t.Errorf("Sensitivity = %g, want %g rounded up by at most 1e-11", rep.Sensitivity, sens)
	}
	var exact mat.Dense
	exact.Mul(centredDense(x, n, d), mat.NewDense(d, r, m))
	exact.Scale(1/math.Sqrt(r), &exact)
	var sum, ss float64
	for i := range n {
		for j := range r {
			e := z[i*r+j] - exact.At(i, j)
			sum += e
			ss += e * e
		}
	}
	cnt := float64(n * r)
	v := rep.NoiseSD * rep.NoiseSD
	if mean, tol := sum/cnt, 4.41717*math.Sqrt(v/cnt); math.Abs(mean) > tol {
		t.Errorf("noise mean = %g, want 0 ± %g", mean, tol)
	}
	if got, tol := ss/cnt, 4.41717*math.Sqrt(2/cnt)*v; math.Abs(got-v) > tol {
		t.Errorf("noise variance = %g, want %g ± %g", got, v, tol)
	}
}

func TestProjectGaussianErrors(t *testing.T) {
	x := gaussianData(1, 10, 2, 1)
	ctx := context.Background()
	p := Params{R: 2, Epsilon: 1, Delta: 1e-5}
	if _, _, err := ProjectGaussian(ctx, x, 10, 2, p, SeededSource(1), nil); err == nil {
		t.Error("nil noise source: no error")
	}
	if _, _, err := ProjectGaussian(ctx, x, 10, 2, p, Source{}, seededNoise(1)); err == nil {
		t.Error("zero Source: no error")
	}
	if _, _, err := ProjectGaussian(ctx, x, 10, 2, Params{R: 0, Epsilon: 1, Delta: 1e-5}, SeededSource(1), seededNoise(1)); err == nil {
		t.Error("r = 0: no error")
	}
	bad := append([]float64(nil), x...)
	bad[3] = math.Inf(1)
	if _, _, err := ProjectGaussian(ctx, bad, 10, 2, p, SeededSource(1), seededNoise(1)); err == nil {
		t.Error("infinite data: no error")
	}
}

// BenchmarkProjectGaussian times the Gaussian mechanism's release; the n·r exact
// discrete Gaussian draws from crypto/rand dominate.
func BenchmarkProjectGaussian(b *testing.B) {
	const n, d, r = 100_000, 30, 20
	x := gaussianData(1, n, d, 1)
	b.SetBytes(int64(n * d * 8))
	for b.Loop() {
		if _, _, err := ProjectGaussian(context.Background(), x, n, d, Params{R: r, Epsilon: 1, Delta: 1e-5}, SecureSource(), CryptoNoise); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOrthonormalise checks the matrix ProjectGaussian releases with: for r ≤ d,
// r^(−1/2)·M has orthonormal columns times √(d/r); for r > d it has orthonormal
// rows, so it keeps every distance exactly.
func TestOrthonormalise(t *testing.T) {
	for _, c := range []struct{ d, r int }{{10, 5}, {6, 6}, {9, 15}, {1, 3}, {30, 1}} {
		m := make([]float64, c.d*c.r)
		SeededSource(uint64(c.d*100 + c.r)).normals(m)
		if err := orthonormalise(m, c.d, c.r); err != nil {
			t.Fatal(err)
		}
		a := mat.NewDense(c.d, c.r, m)
		a.Scale(1/math.Sqrt(float64(c.r)), a)
		var g mat.Dense
		want := 1.0
		if c.r <= c.d {
			g.Mul(a.T(), a) // r×r: (d/r)·I
			want = float64(c.d) / float64(c.r)
		} else {
			g.Mul(a, a.T()) // d×d: I
		}
		k, _ := g.Dims()
		for i := range k {
			for j := range k {
				w := 0.0
				if i == j {
					w = want
				}
				if math.Abs(g.At(i, j)-w) > 1e-12*want {
					t.Fatalf("d=%d r=%d: Gram[%d,%d] = %g, want %g", c.d, c.r, i, j, g.At(i, j), w)
				}
			}
		}
	}
}
