package answer_test

import (
	"fmt"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
)

// A curator's private answers: each target value is clipped to the public range
// [0, 400] and released with Laplace noise of scale 400/ε. The noise comes from
// crypto/rand (dp.CryptoSource), so the released value is not printed here; its noise
// sd and its cost are public.
func Example() {
	m, err := answer.New(answer.MechanismLaplace, answer.Params{Epsilon: 1, Lower: 0, Upper: 400})
	if err != nil {
		panic(err)
	}
	v, err := m.Release(dp.CryptoSource(), 250)
	if err != nil {
		panic(err)
	}
	c := m.Cost()
	fmt.Printf("%s: ε=%g, δ=%g, noise sd %.4g, under the %s relation\n", m.Name(), c.Epsilon, c.Delta, m.NoiseSD(), m.Relation())
	fmt.Println("released a finite value:", v == v)
	// Output:
	// laplace: ε=1, δ=0, noise sd 565.7, under the record relation
	// released a finite value: true
}
