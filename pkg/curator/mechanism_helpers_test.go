package curator

import (
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/projection"
)

// nominalMargin is the margin of the nominal whole-patient figures (projection.NominalMargin).
const nominalMargin = projection.NominalMargin

// wholePatientTable is the Gaussian mechanism's whole-patient table for the clip
// diameter diam, for m values of sensitivity sens (0, 0: nominal), as a release states it.
func wholePatientTable(eps, delta, diam float64, m int, sens float64) ([]dp.DistanceEpsilon, float64, error) {
	return projection.Gaussian{}.WholeRecord(eps, delta, wholePatientDists(diam), &projection.Report{N: m, R: 1, Sensitivity: sens})
}
