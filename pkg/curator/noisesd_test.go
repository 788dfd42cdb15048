package curator

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/projection"
)

// TestProjectionNoiseSD checks that a Gaussian release states the σ its recorded
// sensitivity calibrates (dp.NewVectorGaussian), that a replay states the same σ, that
// a record stored before σ was kept (noise_sd absent) gives the same σ from its
// sensitivity, and that a lifted release states 0.
func TestProjectionNoiseSD(t *testing.T) {
	ctx := context.Background()
	c, led := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScaleNone})
	req := ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5}
	p, err := c.ReleaseProjection(ctx, "alice", req)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := led.Get(ctx, c.account("alice"), "projection/"+p.ID)
	if err != nil || !ok {
		t.Fatalf("ledger record: %v, %v", ok, err)
	}
	var pr projectionRecord
	if err := json.Unmarshal(rec.Result, &pr); err != nil {
		t.Fatal(err)
	}
	m, err := dp.NewVectorGaussian(1, 1e-5, pr.Sensitivity, 20*2)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.NoiseSD > 0) || p.NoiseSD != m.Scale() || pr.NoiseSD != p.NoiseSD {
		t.Errorf("release σ %g, recorded %g; want the calibrated %g", p.NoiseSD, pr.NoiseSD, m.Scale())
	}
	again, err := c.ReleaseProjection(ctx, "alice", req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.NoiseSD != p.NoiseSD {
		t.Errorf("replay: Replayed %v, σ %g; want true, %g", again.Replayed, again.NoiseSD, p.NoiseSD)
	}
	old := pr
	old.NoiseSD = 0
	if got, err := old.noiseSD(req); err != nil || got != p.NoiseSD {
		t.Errorf("σ of a record without noise_sd = %g, %v; want %g", got, err, p.NoiseSD)
	}
	if got, err := (projectionRecord{Rows: 20, Cols: 2}).noiseSD(req); err != nil || got != 0 {
		t.Errorf("σ of a lifted record = %g, %v; want 0", got, err)
	}
}

// TestLiftedNoiseSD checks that the lifted mechanism states σ = 0.
func TestLiftedNoiseSD(t *testing.T) {
	c, _ := scaledCurator(t, 20, dataset.Scaling{Mode: dataset.ScaleNone})
	c.cfg.ProjectionMechanism, c.proj = projection.MechanismLifted, projection.Lifted{} // the mechanism is parsed once, in New
	p, err := c.ReleaseProjection(context.Background(), "bob", ProjectionRequest{R: 2, Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if p.NoiseSD != 0 {
		t.Errorf("lifted release σ = %g, want 0", p.NoiseSD)
	}
}
