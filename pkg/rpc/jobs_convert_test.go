package rpc

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/hparam"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestAxesConvert checks the two edges of a grid axis: what the modeler sends for its
// --grid flags (curatorclient.SpaceProto of hparam.ParseAxis) is read by the curator as
// the same axes, every kind included, and written back to the same messages.
func TestAxesConvert(t *testing.T) {
	var axes []hparam.Axis
	for _, spec := range []string{"lambda=log:1e-4:10:16", "lr=linear:0.1:1:10", "depth=list:3,1,2", "c=loglist:0.1,1,10"} {
		a, err := hparam.ParseAxis(spec)
		if err != nil {
			t.Fatal(err)
		}
		axes = append(axes, a)
	}
	sent, err := curatorclient.SpaceProto(axes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := axesFromProto(sent)
	if err != nil || !reflect.DeepEqual(got, axes) {
		t.Fatalf("axesFromProto(SpaceProto(axes)) = %+v, %v, want %+v", got, err, axes)
	}
	back := axesProto(got)
	for k := range sent {
		if !proto.Equal(back[k], sent[k]) {
			t.Errorf("axis %d: the curator writes back %v, the modeler sent %v", k, back[k], sent[k])
		}
	}
	if sent[3].GetScale() != curatorv1.HyperparameterRange_SCALE_LOG_LIST || sent[0].GetCount() != 16 || len(sent[0].GetValues()) != 0 {
		t.Errorf("sent %v; want a log list as SCALE_LOG_LIST and a range as low, high and count", sent)
	}
	_, err = axesFromProto([]*curatorv1.HyperparameterRange{sent[0], {Name: "beta"}})
	if err == nil || !strings.Contains(err.Error(), `space[1] (hyperparameter "beta"): scale must be`) {
		t.Errorf("an axis without a scale: error = %v, want one naming space[1] and beta", err)
	}
}

// TestSpecConvertRoundTrip: a job spec read by the curator and written back is the one
// the modeler sent, for both kinds and every field (force and the forecast gap included),
// and the modeler's report reads the same spec back (curatorclient.JobFromProto).
func TestSpecConvertRoundTrip(t *testing.T) {
	space, _ := curatorclient.SpaceProto([]hparam.Axis{{Name: "lambda", Kind: hparam.AxisLog, Low: 1e-4, High: 10, Count: 16}})
	for _, sent := range []*curatorv1.JobSpec{
		{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{Algorithm: 2, Space: space, Iterations: 7, Epsilon: 3, Delta: 1e-4,
			K1: 0.5, NoiseVariance: 0.01, GammaT: 4, A: 1, Tau: 2, Lengthscale: 0.3, Evaluator: "e", ForecastGap: 0.02, Force: true}}},
		{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{Space: space, Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Tau: 0.1,
			Beta: 1, Delta: 1e-5, TargetEpsilon: 8, Dpsgd: &curatorv1.DPSGDSettings{LearningRate: 0.5, ClipNorm: 1, Epochs: 5, BatchSize: 64, L2: 1e-3}}}},
	} {
		s, err := specFromProto(sent)
		if err != nil {
			t.Fatal(err)
		}
		if back := specProto(s); !proto.Equal(back, sent) {
			t.Errorf("specProto(specFromProto(x)) = %v, want %v", back, sent)
		}
		j, err := curatorclient.JobFromProto(&curatorv1.Job{Spec: sent})
		if err != nil || !reflect.DeepEqual(j.Spec, s) {
			t.Errorf("JobFromProto spec = %+v, %v; want the curator's %+v", j.Spec, err, s)
		}
	}
}
