package jobpb

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestAxesConvert checks the two edges of a grid axis: what the modeler sends for its
// --grid flags (AxesProto of hparam.ParseAxis) is read by the curator (Axes) as
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
	sent := AxesProto(axes)
	got, err := Axes(sent)
	if err != nil || !reflect.DeepEqual(got, axes) {
		t.Fatalf("Axes(AxesProto(axes)) = %+v, %v, want %+v", got, err, axes)
	}
	back := AxesProto(got)
	for k := range sent {
		if !proto.Equal(back[k], sent[k]) {
			t.Errorf("axis %d: the curator writes back %v, the modeler sent %v", k, back[k], sent[k])
		}
	}
	if sent[3].GetScale() != curatorv1.HyperparameterRange_SCALE_LOG_LIST || sent[0].GetCount() != 16 || len(sent[0].GetValues()) != 0 {
		t.Errorf("sent %v; want a log list as SCALE_LOG_LIST and a range as low, high and count", sent)
	}
	_, err = Axes([]*curatorv1.HyperparameterRange{sent[0], {Name: "beta"}})
	if err == nil || !strings.Contains(err.Error(), `space[1] (hyperparameter "beta"): scale must be`) {
		t.Errorf("an axis without a scale: error = %v, want one naming space[1] and beta", err)
	}
}

// TestSpecConvertRoundTrip: a job spec read by the curator and written back is the one
// the modeler sent, for both kinds and every field (force and the forecast gap included),
// and the modeler reads the same spec back in the job record (Job).
func TestSpecConvertRoundTrip(t *testing.T) {
	space := AxesProto([]hparam.Axis{{Name: "lambda", Kind: hparam.AxisLog, Low: 1e-4, High: 10, Count: 16}})
	for _, sent := range []*curatorv1.JobSpec{
		{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{Algorithm: 2, Space: space, Iterations: 7, Epsilon: 3, Delta: 1e-4,
			K1: 0.5, NoiseVariance: 0.01, GammaT: 4, A: 1, Tau: 2, Lengthscale: 0.3, Evaluator: "e", ForecastGap: 0.02, Force: true}}},
		{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{Space: space, Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Tau: 0.1,
			Beta: 1, Delta: 1e-5, TargetEpsilon: 8, Dpsgd: &curatorv1.DPSGDSettings{LearningRate: 0.5, ClipNorm: 1, Epochs: 5, BatchSize: 64, L2: 1e-3}}}},
	} {
		s, err := Spec(sent)
		if err != nil {
			t.Fatal(err)
		}
		if back := SpecProto(s); !proto.Equal(back, sent) {
			t.Errorf("SpecProto(Spec(x)) = %v, want %v", back, sent)
		}
		j, err := Job(&curatorv1.Job{Spec: sent})
		if err != nil || !reflect.DeepEqual(j.Spec, s) {
			t.Errorf("Job spec = %+v, %v; want the curator's %+v", j.Spec, err, s)
		}
	}
}

func FuzzJobSpec(f *testing.F) {
	seed := func(m proto.Message) []byte { b, _ := proto.Marshal(m); return b }
	f.Add(seed(&curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{Algorithm: 1, Iterations: 5, Epsilon: 1, Delta: 1e-3,
		Space: []*curatorv1.HyperparameterRange{{Name: "lambda", Scale: curatorv1.HyperparameterRange_SCALE_LOG, Low: 1e-4, High: 1, Count: 8}}}}}))
	f.Add(seed(&curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &curatorv1.JobSpec{}
		if proto.Unmarshal(data, p) != nil {
			return
		}
		spec, err := Spec(p)
		if err != nil {
			return
		}
		// A parsed spec must convert back to the same proto.
		if back := SpecProto(spec); !proto.Equal(back, p) && spec.Kind() != "" {
			again, err := Spec(back)
			if err != nil || SpecProto(again) == nil {
				t.Fatalf("spec does not round-trip: %v", err)
			}
		}
	})
}

// TestStateRoundTrip: every job state goes on the wire as its own enum value and back.
func TestStateRoundTrip(t *testing.T) {
	for _, s := range []jobs.State{jobs.Queued, jobs.Running, jobs.Succeeded, jobs.Failed, jobs.Cancelled} {
		if p := StateProto(s); p == curatorv1.JobState_JOB_STATE_UNSPECIFIED || State(p) != s {
			t.Errorf("StateProto(%q) = %v, read back as %q", s, p, State(p))
		}
	}
}
