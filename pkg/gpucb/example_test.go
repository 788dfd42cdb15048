package gpucb_test

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/gpucb"
)

// GP-UCB over 11 candidates on a line: observe the first, then let the rule choose.
// The objective f(x) = −(x − 0.7)² peaks at candidate 7 (x = 0.7).
func Example() {
	const n = 11
	cands := make([]float64, n) // n rows of dimension 1
	for i := range cands {
		cands[i] = float64(i) / 10
	}
	f := func(i int) float64 { return -math.Pow(cands[i]-0.7, 2) }
	gp, err := gpucb.New(cands, n, 1, gpucb.Config{Lengthscale: 0.2, SignalVariance: 1, NoiseVariance: 1e-4, Delta: 0.1, SkipQueried: true})
	if err != nil {
		panic(err)
	}
	next := 0
	for range 5 {
		if err := gp.Observe(next, f(next)); err != nil {
			panic(err)
		}
		if next, err = gp.Next(); err != nil {
			panic(err)
		}
	}
	best := 0
	for i := range n {
		if gp.Mean(i) > gp.Mean(best) {
			best = i
		}
	}
	fmt.Printf("highest posterior mean at x = %.1f\n", cands[best])
	// Output: highest posterior mean at x = 0.7
}
