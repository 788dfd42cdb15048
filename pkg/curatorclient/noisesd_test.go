package curatorclient_test

import (
	"context"
	"math"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/modeler"
)

// TestProjectionNoiseSD checks that the noise sd the curator states in the projection
// header (default mechanism gaussian) reaches modeler.Projection over gRPC: the σ that
// dp.NewVectorGaussian calibrates for the sensitivity sqrt(1 − 1/n)·sqrt(d/r) of an
// orthonormal M (to a relative 1e-9: the curator rounds the sensitivity up by 1e-12),
// and the same on a replay.
func TestProjectionNoiseSD(t *testing.T) {
	ctx := context.Background()
	addr := startCuratorOutput(t, curator.OutputPrivacy{Mechanism: "laplace", Epsilon: answerEps, Lower: 0, Upper: 400})
	cur := curatorclient.New(curatortest.Client(t, addr, "noise-sd"))
	info, err := cur.DatasetInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := modeler.ProjectionRequest{R: 5, Epsilon: math.Exp(2), Delta: 1e-4}
	p, err := cur.ReleaseProjection(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	n, d := float64(info.Rows), float64(info.Dimension)
	m, err := dp.NewVectorGaussian(req.Epsilon, req.Delta, math.Sqrt((1-1/n)*d/5), info.Rows*5)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.Scale(); info.ProjectionMechanism != "gaussian" || !(math.Abs(p.NoiseSD-want) <= 1e-9*want) {
		t.Errorf("mechanism %s, noise sd %.12g; want gaussian with σ = %.12g", info.ProjectionMechanism, p.NoiseSD, want)
	}
	again, err := cur.ReleaseProjection(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.NoiseSD != p.NoiseSD {
		t.Errorf("replay: Replayed %v, noise sd %g; want true, %g", again.Replayed, again.NoiseSD, p.NoiseSD)
	}
}
