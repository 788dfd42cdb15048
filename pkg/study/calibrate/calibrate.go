// Package calibrate states the answers' noise of a study.OutputPrivacy from its
// mechanism's name and settings, through the answer registry (pkg/dp/answer), as the
// curator calibrates it. The curator states its noise on the wire (OutputPrivacy.noise_sd
// and noise), and the modeler reads that; this package is only for what predates the
// statement — a curator that leaves the noise unspecified, a study stored before it —
// so that pkg/study and pkg/modeler need no mechanism.
package calibrate

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
)

// Noise states the answers' noise of op (study.OutputPrivacy.Noise and NoiseSD)
// from its mechanism's name and settings, as the curator calibrates it: Laplace noise of
// scale (U − L)/ε has sd √2·(U − L)/ε, the Gaussian the analytic Gaussian σ (Balle and
// Wang 2018), and the exact mechanism (or none named) no noise. It is the one place on
// the modeler's side that calibrates a mechanism: curatorclient uses it for a curator
// that leaves OutputPrivacy.noise unspecified, and the modeler's CLI opens its studies
// with study.WithNoiseStatement(Noise). A stated op is left as it is.
func Noise(op *study.OutputPrivacy) error {
	if !op.Unstated() {
		return nil
	}
	if op.Mechanism == "" || answer.IsExact(op.Mechanism) {
		op.Noise = noise.None
		return nil
	}
	p := answer.Params{Epsilon: op.EpsilonPerIndex, Delta: op.DeltaPerIndex, Lower: op.Lower, Upper: op.Upper}
	if answer.PureEpsilon(op.Mechanism) {
		p.Delta = 0 // the noise of a pure mechanism does not depend on δ
	}
	m, err := answer.New(op.Mechanism, p)
	if err != nil {
		return fmt.Errorf("calibrate: the answers' noise: %w", err)
	}
	op.NoiseSD, op.Noise = math.Sqrt(m.NoiseVariance()), m.Noise()
	return nil
}
