package modeler

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/projection"
)

// AutoRChoice is the projection dimension AutoR chose and the public figures it chose
// it from.
type AutoRChoice struct {
	R int `json:"r"`
	// Rule names the rule (docs/MATHS.md §2.6).
	Rule string `json:"rule"`
	// NoiseSD is the σ per entry the Gaussian mechanism adds at R (0 for the lifted
	// mechanism); NoiseShare = 2·R·σ²/D² the noise's share of a typical squared distance
	// D² = TypicalSquaredDistance; Distortion = sqrt(8 ln n / R) the JL distortion.
	NoiseSD                float64 `json:"noise_sd"`
	NoiseShare             float64 `json:"noise_share"`
	Distortion             float64 `json:"distortion"`
	TypicalSquaredDistance float64 `json:"typical_squared_distance"`
}

// AutoRRule names the rule of AutoR.
const AutoRRule = "smallest r ≤ d whose JL distortion sqrt(8 ln n / r) is at most the noise's share 2rσ(r)²/D² of a typical squared distance D² = (clip norm)²; else d"

// GaussianNoiseSD returns the σ that the curator's Gaussian projection mechanism
// (package projection, ProjectGaussian) adds to every entry of an n × r release of d
// features at (ε, δ): the L2 sensitivity sqrt(1 − 1/n)·‖r^{−1/2} M‖₂ with M orthonormal
// (‖r^{−1/2} M‖₂ = sqrt(d/r) for r ≤ d, 1 for r > d), rounded up by a relative 1e-12
// as the curator rounds it, calibrated by dp.NewVectorGaussian: the curator's σ up to
// the last bits of ‖M‖₂, which it computes by an SVD. It depends on public quantities
// only.
func GaussianNoiseSD(n, d, r int, epsilon, delta float64) (float64, error) {
	if n < 2 || d < 1 || r < 1 {
		return 0, fmt.Errorf("modeler: the projection's noise needs n ≥ 2, d ≥ 1 and r ≥ 1, got n=%d, d=%d, r=%d", n, d, r)
	}
	norm := 1.0 // ‖M‖₂/√r of the orthonormal M ProjectGaussian draws
	if r <= d {
		norm = math.Sqrt(float64(d) / float64(r))
	}
	sens := projection.GaussianSensitivity(n, norm)
	m, err := dp.NewVectorGaussian(epsilon, delta, sens, n*r)
	if err != nil {
		return 0, fmt.Errorf("modeler: %w", err)
	}
	return m.Scale(), nil
}

// AutoR chooses the projection dimension r from public quantities only: the dataset's
// rows n and features d, the projection mechanism and the release's (ε, δ)
// (docs/MATHS.md §2.6). For the Gaussian mechanism, a squared distance between two
// released rows carries two errors relative to a typical squared distance D²: the JL
// distortion, of relative size about sqrt(8 ln n / r) over all n² pairs (Dasgupta and
// Gupta 2003), which falls with r, and the noise, whose bias 2rσ(r)² (removed by the
// expected kernel) and spread are a share s(r) = 2rσ(r)²/D² of it. With an orthonormal
// M, σ(r)² ∝ d/r for r ≤ d, so s(r) is the same for every r ≤ d: past the r where the
// distortion falls below s, a larger r buys nothing against the noise and costs time.
// AutoR returns the smallest r ≤ d with sqrt(8 ln n / r) ≤ s(r), or d if there is none,
// never above d. D² is the squared default clip radius (dataset.DefaultClipNorm, the
// public scale of the curator's rows). The lifted mechanism adds no noise (s = 0): r = d.
func AutoR(info *DatasetInfo, epsilon, delta float64) (AutoRChoice, error) {
	n, d := info.Rows, info.Dimension
	if d < 1 {
		return AutoRChoice{}, fmt.Errorf("modeler: --r auto needs the dataset's number of features, which curator %q does not state; give r", info.Name)
	}
	if n < 2 {
		return AutoRChoice{}, fmt.Errorf("modeler: --r auto needs at least 2 rows, dataset %s has %d", info.Name, n)
	}
	d2 := float64(dataset.DefaultClipNorm * dataset.DefaultClipNorm)
	gaussian := info.ProjectionMechanism == projection.MechanismGaussian
	choice := func(r int) (AutoRChoice, error) {
		c := AutoRChoice{R: r, Rule: AutoRRule, Distortion: math.Sqrt(8 * math.Log(float64(n)) / float64(r)), TypicalSquaredDistance: d2}
		if gaussian {
			sd, err := GaussianNoiseSD(n, d, r, epsilon, delta)
			if err != nil {
				return AutoRChoice{}, err
			}
			c.NoiseSD, c.NoiseShare = sd, 2*float64(r)*sd*sd/d2
		}
		return c, nil
	}
	for r := 1; r < d; r++ {
		c, err := choice(r)
		if err != nil {
			return AutoRChoice{}, err
		}
		if c.Distortion <= c.NoiseShare {
			return c, nil
		}
	}
	return choice(d)
}
