package curatorclient

import curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"

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
