package curatorclient_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
)

// TestRunUsesNoiseAwarePrior runs a study against a curator that releases Laplace answers
// and one that releases exact answers: the first study's GP models the answer noise, the
// second's keeps the exact-answer prior.
func TestRunUsesNoiseAwarePrior(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		out       curator.OutputPrivacy
		wantNoise float64
		wantRule  string
	}{
		// b ≈ 400/1, σ_n² = 2b² ≈ 320000, s_f² = 10⁴: NoiseVariance ≈ 32.
		{"laplace", curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1, Lower: 0, Upper: 400}, 32, "ratio"},
		{"exact", curator.OutputPrivacy{Mechanism: "none"}, 1e-3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := curatortest.Client(t, startCuratorOutput(t, tc.out), "prior-"+tc.name)
			res, err := modeler.Run(ctx, curatorclient.New(client), modeler.Config{R: 3, Epsilon: 1, Delta: 1e-5, Iterations: 5, InitialIndex: 0})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.NoiseVariance-tc.wantNoise) > 1e-4*tc.wantNoise || res.SignalVariance != 1 || res.NoisePrior != tc.wantRule {
				t.Errorf("study prior: signal %g, noise %g, rule %q; want 1, %g, %q", res.SignalVariance, res.NoiseVariance, res.NoisePrior, tc.wantNoise, tc.wantRule)
			}
			// The recommendation is a queried row. With exact answers the posterior
			// mean at a queried row is its answer (up to the small noise term), so the
			// recommendation is the best answer; with noisy answers the posterior mean
			// shrinks the answers towards each other and lies below the best one.
			if !slices.Contains(res.Queried, res.Recommended) {
				t.Fatalf("recommended row %d was not queried (%v)", res.Recommended, res.Queried)
			}
			if tc.wantRule == "" {
				// Rows may tie at the best answer (diabetes has repeated targets): any of them will do.
				answer := res.Values[slices.Index(res.Queried, res.Recommended)]
				if answer != res.BestValue || math.Abs(res.RecommendedMean-res.BestValue) > 1e-2*math.Abs(res.BestValue)+1e-6 {
					t.Errorf("exact answers: recommended row %d (answer %g, mean %g), want a row of the best answer %g (row %d)", res.Recommended, answer, res.RecommendedMean, res.BestValue, res.BestIndex)
				}
			} else if !(res.RecommendedMean < res.BestValue) {
				t.Errorf("noisy answers: recommended mean %g not below the best noisy answer %g", res.RecommendedMean, res.BestValue)
			}
		})
	}
}
