package curator

import (
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// TestNewTakesParsedMechanism: a mechanism the caller parsed (Config.Projection, as the
// server passes it) is used as it is, its name filled in; a name that contradicts it
// is refused rather than one of the two silently chosen.
func TestNewTakesParsedMechanism(t *testing.T) {
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 1e-5}, Dataset: ledger.Cost{Epsilon: 1, Delta: 1e-5}}
	c, _, cfg := rowsCurator(t, 5, limits, func(cfg *Config) { cfg.Projection = projection.Lifted{} })
	if c.proj != (projection.Lifted{}) || c.cfg.ProjectionMechanism != projection.MechanismLifted {
		t.Errorf("New with Projection lifted: mechanism %v named %q, want lifted", c.proj, c.cfg.ProjectionMechanism)
	}
	if info, err := c.Info(t.Context(), "acme"); err != nil || info.ProjectionMechanism != projection.MechanismLifted {
		t.Errorf("Info = %q, %v; want the lifted mechanism named", info.ProjectionMechanism, err)
	}
	cfg.ProjectionMechanism = projection.MechanismGaussian
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "different mechanisms") {
		t.Errorf("New with Projection lifted and ProjectionMechanism gaussian: %v, want refused", err)
	}
}
