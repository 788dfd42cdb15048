package modeler

import (
	"fmt"

	"github.com/privbo/privbo/pkg/projection"
)

// AutoRChoice is the projection dimension AutoR chose and the public figures it chose
// it from (projection.AutoChoice).
type AutoRChoice = projection.AutoChoice

// AutoRRule names the rule of AutoR.
const AutoRRule = projection.AutoRule

// GaussianNoiseSD returns the σ that the curator's Gaussian projection mechanism adds
// to every entry of an n × r release of d features at (ε, δ)
// (projection.NominalNoiseSD): the curator's σ up to the last bits of ‖M‖₂. It depends
// on public quantities only.
func GaussianNoiseSD(n, d, r int, epsilon, delta float64) (float64, error) {
	sd, err := projection.NominalNoiseSD(n, d, r, epsilon, delta)
	if err != nil {
		return 0, fmt.Errorf("modeler: %w", err)
	}
	return sd, nil
}

// AutoR chooses the projection dimension r from public quantities only — the dataset's
// rows n and features d, the projection mechanism and the release's (ε, δ) — by the
// rule the curator applies when a study leaves r to it (projection.AutoDimension,
// docs/MATHS.md §2.6), with D² the squared default clip radius
// (projection.AutoSquaredDistance, the public scale of the curator's rows). Never above d.
func AutoR(info *DatasetInfo, epsilon, delta float64) (AutoRChoice, error) {
	if info.Dimension < 1 {
		return AutoRChoice{}, fmt.Errorf("modeler: choosing r needs the dataset's number of features, which curator %q does not state; give r", info.Name)
	}
	c, err := projection.AutoDimension(info.Rows, info.Dimension, info.ProjectionMechanism, epsilon, delta, AutoRSquaredDistance)
	if err != nil {
		return AutoRChoice{}, fmt.Errorf("modeler: dataset %s: %w", info.Name, err)
	}
	return c, nil
}

// AutoRSquaredDistance is the typical squared distance D² of AutoR's rule: the squared
// default clip radius, the public scale of a curator's rows.
const AutoRSquaredDistance = projection.AutoSquaredDistance
