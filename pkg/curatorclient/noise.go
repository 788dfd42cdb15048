package curatorclient

import (
	"fmt"
	"strings"

	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/study"
	"github.com/privbo/privbo/pkg/study/calibrate"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// stateNoise fills op's statement of the answers' noise from the noise family f and sd
// the curator sent; a curator that sends no family predates the statement, and op is
// calibrated from its mechanism's settings (calibrate.Noise) instead. Noisy answers
// stated with a non-positive sd are an error (op's family is filled all the same).
func stateNoise(op *study.OutputPrivacy, f curatorv1.NoiseFamily, sd float64) error {
	if op.Noise = noiseFamily(f); op.Noise == noise.Unstated {
		return calibrate.Noise(op)
	}
	if op.Exact() {
		return nil
	}
	if op.NoiseSD = sd; !(sd > 0) {
		return fmt.Errorf("curatorclient: the curator states noisy answers (%s) with noise sd %g", op.Mechanism, sd)
	}
	return nil
}

// noiseFamily is the family of the proto's value of the same name: noise.Unstated for
// UNSPECIFIED, which curators that predate the statement send, and for a value this
// client does not know.
func noiseFamily(f curatorv1.NoiseFamily) noise.Family {
	name, _ := strings.CutPrefix(f.String(), "NOISE_FAMILY_")
	fam, _ := noise.Parse(strings.ToLower(name))
	return fam
}
