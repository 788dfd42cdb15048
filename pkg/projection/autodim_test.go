package projection

import (
	"math"
	"testing"
)

// TestAutoDimension checks the rule of AutoDimension (what the curator applies when a
// study leaves r to it, and states in its quote): on the shipped diabetes shape (n = 442, d = 10,
// ε = e², δ = 1e-4) the noise's share is small and r = d; with d = 400 features (δ =
// 1e-6) the noise's share is about 0.6 and the rule stops at the smallest r whose distortion is at
// most the share (checked against r − 1); the lifted mechanism gets d; a curator that
// does not state d is refused.
func TestAutoDimension(t *testing.T) {
	c, err := AutoDimension(442, 10, MechanismGaussian, math.Exp(2), 1e-4, AutoSquaredDistance)
	if err != nil || c.R != 10 || !(c.NoiseSD > 0) {
		t.Errorf("diabetes: %+v, %v; want r = 10 with σ > 0", c, err)
	}
	t.Logf("diabetes: r = %d, σ = %.4g, noise share %.3g, distortion %.3g", c.R, c.NoiseSD, c.NoiseShare, c.Distortion)
	c, err = AutoDimension(10_000, 400, MechanismGaussian, math.Exp(2), 1e-6, AutoSquaredDistance)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.R > 1 && c.R < 400) || c.Distortion > c.NoiseShare {
		t.Fatalf("wide: %+v; want 1 < r < 400 with distortion ≤ noise share", c)
	}
	t.Logf("wide: r = %d, σ = %.4g, noise share %.3g, distortion %.3g", c.R, c.NoiseSD, c.NoiseShare, c.Distortion)
	sd, err := NominalNoiseSD(10_000, 400, c.R-1, math.Exp(2), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if share, dist := 2*float64(c.R-1)*sd*sd/c.TypicalSquaredDistance, math.Sqrt(8*math.Log(10_000)/float64(c.R-1)); dist <= share {
		t.Errorf("wide: r − 1 = %d already meets the rule (distortion %g ≤ share %g)", c.R-1, dist, share)
	}
	if c, err := AutoDimension(442, 10, MechanismLifted, 1, 1e-5, AutoSquaredDistance); err != nil || c.R != 10 || c.NoiseSD != 0 {
		t.Errorf("lifted: %+v, %v; want r = d = 10, σ = 0", c, err)
	}
	if _, err := AutoDimension(442, 0, MechanismGaussian, 1, 1e-5, AutoSquaredDistance); err == nil {
		t.Error("AutoDimension without the dimension: no error")
	}
}
