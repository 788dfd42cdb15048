package curatorclient_test

import (
	"context"
	"math"
	"testing"

	"google.golang.org/grpc"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/study"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// infoClient answers GetDatasetInfo with op and nothing else.
type infoClient struct {
	curatorv1.CuratorServiceClient
	op *curatorv1.OutputPrivacy
}

func (c infoClient) GetDatasetInfo(context.Context, *curatorv1.GetDatasetInfoRequest, ...grpc.CallOption) (*curatorv1.GetDatasetInfoResponse, error) {
	return &curatorv1.GetDatasetInfoResponse{Name: "d", Rows: 10, Dimension: 2, OutputPrivacy: c.op}, nil
}

// TestStatedNoiseFamily checks how the answers' noise reaches the modeler: the noise
// family and sd the curator states are taken as stated, whatever the mechanism is
// called (a stated sd of 3 under the name "laplace", whose calibration on [0, 400] at
// ε = 2 would be 282.8, stays 3); a curator that states no family (it predates the
// statement) is calibrated by calibrate.Noise from its mechanism's settings; and a
// curator that states noisy answers without a positive sd is refused.
func TestStatedNoiseFamily(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		op   *curatorv1.OutputPrivacy
		want study.OutputPrivacy // Exact, NoiseSD (to 1e-6 relative), Laplace
	}{
		{"stated Laplace", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_LAPLACE},
			study.OutputPrivacy{NoiseSD: 3, Laplace: true}},
		{"stated Gaussian", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_GAUSSIAN},
			study.OutputPrivacy{NoiseSD: 3}},
		{"stated exact", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_NONE},
			study.OutputPrivacy{Exact: true}},
		{"unstated Laplace", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400},
			study.OutputPrivacy{NoiseSD: math.Sqrt2 * 200, Laplace: true}},
		{"unstated exact", &curatorv1.OutputPrivacy{Mechanism: "none"}, study.OutputPrivacy{Exact: true}},
	} {
		info, err := curatorclient.New(infoClient{op: tc.op}).DatasetInfo(ctx)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := info.OutputPrivacy
		if got.Exact != tc.want.Exact || got.Laplace != tc.want.Laplace || math.Abs(got.NoiseSD-tc.want.NoiseSD) > 1e-6*tc.want.NoiseSD {
			t.Errorf("%s: exact %v, noise sd %g, Laplace %v; want %v, %g, %v", tc.name, got.Exact, got.NoiseSD, got.Laplace, tc.want.Exact, tc.want.NoiseSD, tc.want.Laplace)
		}
	}
	bad := &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_LAPLACE}
	if _, err := curatorclient.New(infoClient{op: bad}).DatasetInfo(ctx); err == nil {
		t.Error("Laplace answers stated with noise sd 0: accepted")
	}
}
