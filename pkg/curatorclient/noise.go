package curatorclient

import (
	"fmt"

	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/study/calibrate"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// stateNoise fills op's statement of the answers' noise from the noise family f and sd
// the curator sent; a curator that sends no family predates the statement, and op is
// calibrated from its mechanism's settings (calibrate.Noise) instead. Noisy answers
// stated with a non-positive sd are an error (op's family is filled all the same).
func stateNoise(op *study.OutputPrivacy, f curatorv1.NoiseFamily, sd float64) error {
	exact, laplace, stated := statedNoise(f)
	if !stated {
		return calibrate.Noise(op)
	}
	op.Exact, op.Laplace = exact, laplace
	if exact {
		return nil
	}
	if op.NoiseSD = sd; !(sd > 0) {
		return fmt.Errorf("curatorclient: the curator states noisy answers (%s) with noise sd %g", op.Mechanism, sd)
	}
	return nil
}

// statedNoise is the study's form of a noise family the curator stated: exact and
// Laplace, and whether it stated one at all.
func statedNoise(f curatorv1.NoiseFamily) (exact, laplace, stated bool) {
	switch f {
	case curatorv1.NoiseFamily_NOISE_FAMILY_NONE:
		return true, false, true
	case curatorv1.NoiseFamily_NOISE_FAMILY_LAPLACE:
		return false, true, true
	case curatorv1.NoiseFamily_NOISE_FAMILY_GAUSSIAN:
		return false, false, true
	}
	return false, false, false
}
