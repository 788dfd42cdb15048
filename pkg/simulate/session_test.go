package simulate

import (
	"context"
	"slices"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
)

// TestSimulationIsTheModelerSession runs the session a simulation runs (Config.session,
// through Local over the in-process curator, as runOne does) and the modeler's session
// over gRPC (pkg/curatorclient against a curator served in-process by
// internal/curatortest) on the same data, the same projection Z and the same exact
// answers, sequentially and in batches with refits, and checks that they query the same
// rows in the same order and recommend the same row. The gRPC study runs first and
// receives a new lifted projection; the simulated study asks the same curator, as the
// same identity, for the same release, which the curator replays (the same Z, at no
// cost), and its answers are the exact values released before.
func TestSimulationIsTheModelerSession(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		batch, fitEvery int
	}{{"sequential", 1, 0}, {"batches of 3 with refits", 3, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := curatortest.Start(t, curatortest.Options{
				Output:    curator.OutputPrivacy{Mechanism: "none"},
				Configure: func(c *config.Config) { c.ProjectionMechanism = projection.MechanismLifted },
			})
			cfg := Config{Data: &DataConfig{Path: curatortest.Diabetes}, Runs: 1, Iterations: 13, Epsilon: 2, Delta: 1e-5,
				Batch: tc.batch, GP: GPSettings{FitEvery: tc.fitEvery}, Methods: []Method{{Kind: POGPUCB, R: 3}}}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			const first = 17
			mcfg := cfg.session(3, 0, first, 0)
			viaGRPC, err := modeler.Run(ctx, curatorclient.New(curatortest.Client(t, srv.Addr, "alice")), mcfg)
			if err != nil {
				t.Fatal(err)
			}
			local := &Local{Curator: srv.Server.Curator(), Identity: "alice"}
			simulated, err := modeler.Run(ctx, local, mcfg)
			if err != nil {
				t.Fatal(err)
			}
			if simulated.ReleaseID != viaGRPC.ReleaseID {
				t.Fatalf("simulated study used release %s, the gRPC study %s", simulated.ReleaseID, viaGRPC.ReleaseID)
			}
			if len(viaGRPC.Queried) != cfg.Iterations || viaGRPC.Queried[0] != first {
				t.Fatalf("gRPC study queried %v, want %d rows from row %d", viaGRPC.Queried, cfg.Iterations, first)
			}
			if !slices.Equal(simulated.Queried, viaGRPC.Queried) || !slices.Equal(simulated.Values, viaGRPC.Values) {
				t.Errorf("simulated study queried %v (values %v), the gRPC study %v (values %v)",
					simulated.Queried, simulated.Values, viaGRPC.Queried, viaGRPC.Values)
			}
			if simulated.Recommended != viaGRPC.Recommended || simulated.Refits != viaGRPC.Refits || simulated.Rounds != viaGRPC.Rounds {
				t.Errorf("simulated study: recommended %d, %d refits, %d rounds; gRPC study: %d, %d, %d",
					simulated.Recommended, simulated.Refits, simulated.Rounds, viaGRPC.Recommended, viaGRPC.Refits, viaGRPC.Rounds)
			}
			if wantRounds := 1 + (cfg.Iterations-1+tc.batch-1)/tc.batch; viaGRPC.Rounds != wantRounds {
				t.Errorf("%d rounds, want %d", viaGRPC.Rounds, wantRounds)
			}
			if tc.fitEvery > 0 && viaGRPC.Refits == 0 {
				t.Error("no refit with fit-every")
			}
			// Nothing was charged twice: the simulated study's release and answers were
			// replays.
			if simulated.EpsilonSpent != viaGRPC.EpsilonSpent {
				t.Errorf("ε spent %g after the simulated study, %g after the gRPC study; want no new charge", simulated.EpsilonSpent, viaGRPC.EpsilonSpent)
			}
		})
	}
}
