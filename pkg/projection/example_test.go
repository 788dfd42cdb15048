package projection_test

import (
	"context"
	"fmt"

	"github.com/privbo/privbo/pkg/projection"
)

// The Gaussian mechanism projects a curator's n×d scaled rows to r dimensions and adds
// noise calibrated to (ε, δ): Z = X·M + N(0, σ²) per entry. The modeler receives Z and
// the public σ; never X or M (M is drawn from crypto/rand by SecureSource).
func Example() {
	const n, d = 200, 5
	x := make([]float64, n*d)
	for i := range x {
		x[i] = float64(i%7) - 3 // scaled rows, norm ≤ the clip norm
	}
	p := projection.Params{R: 3, Epsilon: 2, Delta: 1e-5}
	z, rep, err := projection.ProjectGaussian(context.Background(), x, n, d, p, projection.SecureSource(), projection.CryptoNoise)
	if err != nil {
		panic(err)
	}
	sd, err := projection.Gaussian{}.NoiseSD(n, d, p.R, p.Epsilon, p.Delta)
	if err != nil {
		panic(err)
	}
	fmt.Printf("Z is %d×%d (%d values), mechanism %s, noise sd per entry %.4g (stated before the release: %.4g)\n", rep.N, rep.R, len(z), rep.Mechanism, rep.NoiseSD, sd)
	// Output: Z is 200×3 (600 values), mechanism gaussian, noise sd per entry 2.768 (stated before the release: 2.768)
}
