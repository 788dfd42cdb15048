package gpucb

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSIMDMatchesScalar checks that the AVX2 loops give the scalar loops'
// values bit for bit (on a machine without AVX2 both sides are the scalar code).
func TestSIMDMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	same := func(what string, got, want float64) {
		t.Helper()
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("%s: %v, scalar %v", what, got, want)
		}
	}
	for range 20000 {
		var x [4]float64
		for k := range x {
			switch rng.IntN(8) {
			case 0:
				x[k] = -rng.Float64() * 1e-6
			case 1:
				x[k] = -750 + rng.Float64()*60
			case 2:
				x[k] = rng.Float64() * 3
			case 3:
				x[k] = float64(-rng.IntN(700))
			case 4:
				x[k] = math.NaN()
			default:
				x[k] = -rng.Float64() * 40
			}
		}
		in := x
		exp4(&x)
		for k := range x {
			same("exp4", x[k], expNonPos(in[k]))
		}
	}
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 20, 21, 199} {
		a, b := make([]float64, n), make([]float64, n)
		l, c := make([]float64, n), make([]float64, 4*n)
		for i := range n {
			a[i], b[i], l[i] = rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
		}
		for i := range c {
			c[i] = rng.NormFloat64()
		}
		same("sqDist", sqDist(a, b), sqDistGo(a, b))
		if useAVX2 && n > 0 {
			kc := make([]float64, 7*n)
			for i := range kc {
				kc[i] = rng.NormFloat64()
			}
			off := [4]int{0, 3 * n, 6 * n, 3 * n}
			var d [4]float64
			sqDist4AVX(&d, a, kc, &off)
			for k := range d {
				same("sqDist4", d[k], sqDistGo(a, kc[off[k]:off[k]+n]))
			}
		}
		v := [4]float64{1, 2, 3, 4}
		w := v
		chain4(&v, l, c)
		chain4Go(&w, l, c)
		for k := range v {
			same("chain4", v[k], w[k])
			col := make([]float64, n)
			for i := range n {
				col[i] = c[4*i+k]
			}
			same("dot1", dot1(float64(k+1), l, col), v[k])
		}
		rows := make([][]float64, 6)
		for j := range rows {
			rows[j] = make([]float64, n+3)
			for i := range rows[j] {
				rows[j][i] = rng.NormFloat64()
			}
		}
		col := []float64{0.5, -1, 2, 0.25, 3, -0.75}
		seg := make([]float64, n)
		for i := range seg {
			seg[i] = rng.NormFloat64()
		}
		want := make([]float64, n)
		for k := range want {
			want[k] = seg[k] - (float64(float64(col[0]*rows[0][3+k])+float64(col[1]*rows[1][3+k])) + float64(float64(col[2]*rows[2][3+k])+float64(col[3]*rows[3][3+k])))
			want[k] -= float64(col[4] * rows[4][3+k])
			want[k] -= float64(col[5] * rows[5][3+k])
		}
		subtractRows(seg, col, rows, 3)
		for k := range seg {
			same("subtractRows", seg[k], want[k])
		}
	}
}

// TestKernel4MatchesKernelAt checks the four-at-once kernel against kernelAt,
// for both kernels, with arguments near 0, ordinary ones and ones below −700.
func TestKernel4MatchesKernelAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{1, 3, 4, 7, 20} {
		const n = 64
		cands := make([]float64, n*dim)
		for i := range cands {
			cands[i] = rng.NormFloat64() * []float64{1e-9, 1, 30}[i/dim%3]
		}
		for _, kern := range []Kernel{SquaredExponential, Matern52} {
			g, err := NewPosterior(cands, n, dim, PosteriorConfig{Kernel: kern, Lengthscale: 0.7, SignalVariance: 2, NoiseVariance: 1e-3})
			if err != nil {
				t.Fatal(err)
			}
			for range 200 {
				zi := cands[rng.IntN(n)*dim:][:dim]
				xs := [4]int{rng.IntN(n), rng.IntN(n), rng.IntN(n), rng.IntN(n)}
				got := g.kernel4(zi, &[4]int{xs[0] * dim, xs[1] * dim, xs[2] * dim, xs[3] * dim})
				for k, x := range xs {
					want := g.kernelAt(zi, cands[x*dim:(x+1)*dim])
					if math.Float64bits(got[k]) != math.Float64bits(want) {
						t.Fatalf("dim %d kernel %v: kernel4 %v, kernelAt %v", dim, kern, got[k], want)
					}
				}
				rows := make([]int, rng.IntN(9))
				for i := range rows {
					rows[i] = rng.IntN(n) * dim
				}
				kv := make([]float64, 4*len(rows))
				g.kernelRows4(kv, &[4]int{xs[0] * dim, xs[1] * dim, xs[2] * dim, xs[3] * dim}, rows)
				for i, r := range rows {
					for k, x := range xs {
						want := g.kernelAt(cands[r:r+dim], cands[x*dim:(x+1)*dim])
						if math.Float64bits(kv[4*i+k]) != math.Float64bits(want) {
							t.Fatalf("dim %d kernel %v: kernelRows4 %v, kernelAt %v", dim, kern, kv[4*i+k], want)
						}
					}
				}
			}
		}
	}
}
