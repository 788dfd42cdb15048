package projection

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
)

// CheckGaussian reports, without drawing or computing anything, whether
// ProjectGaussian can calibrate its noise for p on n rows of d columns, so that a
// request it cannot serve is refused before the data is touched. The noise depends
// only on (ε, δ), the n·r entries and the sensitivity Δ = sqrt(1 − 1/n)·‖r^(−1/2) M‖₂,
// and the orthonormalised M has ‖r^(−1/2) M‖₂ = max(1, √(d/r)) up to rounding; the
// calibration is tried at Δ/2 and 2Δ, so that the rounding of the computed M cannot
// turn a checked request into a failure. Extreme ε (σ outside [2⁻¹⁰⁰⁰, 2¹⁰⁰⁰]) fail.
func CheckGaussian(n, d int, p Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if n < 2 || d < 1 || n > math.MaxInt/p.R {
		return fmt.Errorf("projection: cannot release %d×%d from %d columns", n, p.R, d)
	}
	sens := GaussianSensitivity(n, max(1, math.Sqrt(float64(d)/float64(p.R))))
	for _, s := range []float64{sens / 2, sens * 2} {
		if _, err := dp.NewVectorGaussian(p.Epsilon, p.Delta, s, n*p.R); err != nil {
			return fmt.Errorf("projection: the Gaussian noise for ε = %g, δ = %g cannot be calibrated (%w); ask for an ε nearer 1 or a larger δ", p.Epsilon, p.Delta, err)
		}
	}
	return nil
}
