package projection

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
)

// AutoChoice is the projection dimension AutoDimension chose and the public figures it
// chose it from.
type AutoChoice struct {
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

// AutoSquaredDistance is the typical squared distance D² that the curator and the
// modeler give AutoDimension: the squared default clip radius of package dataset
// (DefaultClipNorm = 25), the public scale of a curator's rows. It is written here, with
// the rule, so that the modeler needs no dataset package to choose as the curator does;
// pkg/curator's tests pin it to dataset.DefaultClipNorm².
const AutoSquaredDistance = 25 * 25

// AutoRule names the rule of AutoDimension.
const AutoRule = "smallest r ≤ d whose JL distortion sqrt(8 ln n / r) is at most the noise's share 2rσ(r)²/D² of a typical squared distance D² = (clip norm)²; else d"

// NominalNoiseSD returns the σ that ProjectGaussian adds to every entry of an n × r
// release of d features at (ε, δ): the L2 sensitivity sqrt(1 − 1/n)·‖r^{−1/2} M‖₂ with
// M orthonormal (‖r^{−1/2} M‖₂ = sqrt(d/r) for r ≤ d, 1 for r > d), calibrated by
// dp.NewVectorGaussian: a release's σ up to the last bits of ‖M‖₂, which
// ProjectGaussian computes by an SVD. It depends on public quantities only, so it can
// be stated before a release is made.
func NominalNoiseSD(n, d, r int, epsilon, delta float64) (float64, error) {
	if n < 2 || d < 1 || r < 1 {
		return 0, fmt.Errorf("projection: the noise needs n ≥ 2, d ≥ 1 and r ≥ 1, got n=%d, d=%d, r=%d", n, d, r)
	}
	norm := 1.0 // ‖M‖₂/√r of the orthonormal M ProjectGaussian draws
	if r <= d {
		norm = math.Sqrt(float64(d) / float64(r))
	}
	m, err := dp.NewVectorGaussian(epsilon, delta, GaussianSensitivity(n, norm), n*r)
	if err != nil {
		return 0, fmt.Errorf("projection: %w", err)
	}
	return m.Scale(), nil
}

// AutoDimension chooses the projection dimension r from public quantities only: the
// dataset's rows n and features d, the mechanism and the release's (ε, δ)
// (docs/MATHS.md §2.6). For the Gaussian mechanism, a squared distance between two
// released rows carries two errors relative to a typical squared distance D²
// (typicalSquaredDistance): the JL distortion, of relative size about sqrt(8 ln n / r)
// over all n² pairs (Dasgupta and Gupta 2003), which falls with r, and the noise, whose
// bias 2rσ(r)² and spread are a share s(r) = 2rσ(r)²/D² of it. With an orthonormal M,
// σ(r)² ∝ d/r for r ≤ d, so s(r) is the same for every r ≤ d: past the r where the
// distortion falls below s, a larger r buys nothing against the noise and costs time.
// AutoDimension returns the smallest r ≤ d with sqrt(8 ln n / r) ≤ s(r), or d if there
// is none, never above d. The lifted mechanism adds no noise (s = 0): r = d.
//
// It takes the mechanism's name, as a modeler reads it from the curator; the curator,
// holding the parsed Mechanism, calls AutoDimensionFor.
func AutoDimension(n, d int, mechanism string, epsilon, delta, typicalSquaredDistance float64) (AutoChoice, error) {
	m, err := ParseMechanism(mechanism)
	if err != nil {
		// A name this build does not know, or none (a curator that predates the
		// choice of mechanism), is taken as a mechanism without noise: r = d.
		m = Lifted{}
	}
	return AutoDimensionFor(n, d, m, epsilon, delta, typicalSquaredDistance)
}

// AutoDimensionFor is AutoDimension for the mechanism m.
func AutoDimensionFor(n, d int, m Mechanism, epsilon, delta, typicalSquaredDistance float64) (AutoChoice, error) {
	if d < 1 {
		return AutoChoice{}, fmt.Errorf("projection: choosing r needs the number of features d ≥ 1, got %d", d)
	}
	if n < 2 {
		return AutoChoice{}, fmt.Errorf("projection: choosing r needs at least 2 rows, got %d", n)
	}
	choice := func(r int) (AutoChoice, error) {
		c := AutoChoice{R: r, Rule: AutoRule, Distortion: math.Sqrt(8 * math.Log(float64(n)) / float64(r)), TypicalSquaredDistance: typicalSquaredDistance}
		if m.AddsNoise() {
			sd, err := m.NoiseSD(n, d, r, epsilon, delta)
			if err != nil {
				return AutoChoice{}, err
			}
			c.NoiseSD, c.NoiseShare = sd, 2*float64(r)*sd*sd/typicalSquaredDistance
		}
		return c, nil
	}
	for r := 1; r < d; r++ {
		c, err := choice(r)
		if err != nil {
			return AutoChoice{}, err
		}
		if c.Distortion <= c.NoiseShare {
			return c, nil
		}
	}
	return choice(d)
}
