//go:build !purego

package gpucb

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 loops of simd_amd64.s, which give the scalar
// loops' results bit for bit.
var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func chain4AVX(v *[4]float64, l []float64, c []float64)

//go:noescape
func sqDistAVX(a, b []float64) float64

//go:noescape
func subRows4AVX(seg, r0, r1, r2, r3 []float64, c0, c1, c2, c3 float64)

//go:noescape
func prefetchAVX(p []float64)

//go:noescape
func exp4AVX(x *[4]float64, tab *[32]float64, cst *[10]float64)

//go:noescape
func sqDist4AVX(out *[4]float64, a, kc []float64, off *[4]int)

//go:noescape
func seKernelRows4AVX(out, rows, kc []float64, off *[4]int, roff []int, sv, c float64, tab *[32]float64, cst *[10]float64, dim int) int
