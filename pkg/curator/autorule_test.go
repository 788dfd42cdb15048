package curator

import (
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/projection"
)

// TestAutoSquaredDistance pins the D² of the rule choosing r, which the modeler takes
// from package projection, to the squared default clip radius the curator uses, so that
// both sides choose alike.
func TestAutoSquaredDistance(t *testing.T) {
	if projection.AutoSquaredDistance != autoSquaredDistance || autoSquaredDistance != dataset.DefaultClipNorm*dataset.DefaultClipNorm {
		t.Errorf("projection.AutoSquaredDistance = %v, the curator's D² = %v, dataset.DefaultClipNorm² = %v; want all equal",
			projection.AutoSquaredDistance, autoSquaredDistance, dataset.DefaultClipNorm*dataset.DefaultClipNorm)
	}
}
