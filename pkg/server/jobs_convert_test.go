package server

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
