package curatorclient_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/noise"
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
		want study.OutputPrivacy // Noise, NoiseSD (to 1e-6 relative)
	}{
		{"stated Laplace", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_LAPLACE},
			study.OutputPrivacy{NoiseSD: 3, Noise: noise.Laplace}},
		{"stated Gaussian", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_GAUSSIAN},
			study.OutputPrivacy{NoiseSD: 3, Noise: noise.Gaussian}},
		{"stated exact", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_NONE},
			study.OutputPrivacy{Noise: noise.None}},
		{"unstated Laplace", &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400},
			study.OutputPrivacy{NoiseSD: math.Sqrt2 * 200, Noise: noise.Laplace}},
		{"unstated exact", &curatorv1.OutputPrivacy{Mechanism: "none"}, study.OutputPrivacy{Noise: noise.None}},
	} {
		info, err := curatorclient.New(infoClient{op: tc.op}).DatasetInfo(ctx)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := info.OutputPrivacy
		if got.Noise != tc.want.Noise || math.Abs(got.NoiseSD-tc.want.NoiseSD) > 1e-6*tc.want.NoiseSD {
			t.Errorf("%s: noise %v, sd %g; want %v, %g", tc.name, got.Noise, got.NoiseSD, tc.want.Noise, tc.want.NoiseSD)
		}
	}
	bad := &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, Noise: curatorv1.NoiseFamily_NOISE_FAMILY_LAPLACE}
	if _, err := curatorclient.New(infoClient{op: bad}).DatasetInfo(ctx); err == nil {
		t.Error("Laplace answers stated with noise sd 0: accepted")
	}
}

// TestNoiseFamiliesAreTheProtoEnum: every stated noise family is the value of
// curator.proto's NoiseFamily of the same name and reaches the modeler as itself, and the
// enum has no other value, so a family added on one side only fails here (pkg/server
// states a family by the same name; pkg/modeler's wire test sends each mechanism's).
func TestNoiseFamiliesAreTheProtoEnum(t *testing.T) {
	if got, want := len(curatorv1.NoiseFamily_name)-1, len(noise.Families()); got != want {
		t.Errorf("curator.proto's NoiseFamily has %d stated values, package noise %d families", got, want)
	}
	for _, f := range noise.Families() {
		v, ok := curatorv1.NoiseFamily_value["NOISE_FAMILY_"+strings.ToUpper(f.String())]
		if !ok {
			t.Errorf("noise family %v: no value of its name in curator.proto's NoiseFamily", f)
			continue
		}
		op := &curatorv1.OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 2, Upper: 400, NoiseSd: 3, Noise: curatorv1.NoiseFamily(v)}
		info, err := curatorclient.New(infoClient{op: op}).DatasetInfo(context.Background())
		if err != nil || info.OutputPrivacy.Noise != f {
			t.Errorf("%v sent: the modeler holds %v, %v", curatorv1.NoiseFamily(v), info.OutputPrivacy.Noise, err)
		}
	}
}
