//go:build !amd64 || purego

package gpucb

const useAVX2 = false

func chain4AVX(v *[4]float64, l []float64, c []float64)                 { chain4Go(v, l, c) }
func sqDistAVX(a, b []float64) float64                                  { return sqDistGo(a, b) }
func subRows4AVX(seg, r0, r1, r2, r3 []float64, c0, c1, c2, c3 float64) { panic("gpucb: no AVX2") }

func prefetchAVX(p []float64) {}

func exp4AVX(x *[4]float64, tab *[32]float64, cst *[10]float64) { panic("gpucb: no AVX2") }

func sqDist4AVX(out *[4]float64, a, kc []float64, off *[4]int) { panic("gpucb: no AVX2") }

func seKernelRows4AVX(out, rows, kc []float64, off *[4]int, roff []int, sv, c float64, tab *[32]float64, cst *[10]float64, dim int) int {
	panic("gpucb: no AVX2")
}
