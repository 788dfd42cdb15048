package curatorclient

import (
	"fmt"

	"github.com/privbo/privbo/pkg/hparam"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// SpaceProto converts a job's grid axes (hparam.ParseAxis reads them from the
// modeler's --grid flags) to the protocol's form, which keeps a range as low, high
// and count. The curator checks the axes again when it plans the job.
func SpaceProto(axes []hparam.Axis) ([]*curatorv1.HyperparameterRange, error) {
	out := make([]*curatorv1.HyperparameterRange, len(axes))
	for k, a := range axes {
		r := &curatorv1.HyperparameterRange{Name: a.Name, Values: a.Values, Low: a.Low, High: a.High}
		switch a.Kind {
		case hparam.AxisList:
			r.Scale = curatorv1.HyperparameterRange_SCALE_LIST
		case hparam.AxisLogList:
			r.Scale = curatorv1.HyperparameterRange_SCALE_LOG_LIST
		case hparam.AxisLinear:
			r.Scale = curatorv1.HyperparameterRange_SCALE_LINEAR
		case hparam.AxisLog:
			r.Scale = curatorv1.HyperparameterRange_SCALE_LOG
		default:
			return nil, fmt.Errorf("curatorclient: hyperparameter %q: unknown axis kind %q", a.Name, a.Kind)
		}
		if a.Count < 0 || a.Count > hparam.MaxSize {
			return nil, fmt.Errorf("curatorclient: hyperparameter %q: count %d out of [0, %d]", a.Name, a.Count, hparam.MaxSize)
		}
		r.Count = uint32(a.Count)
		out[k] = r
	}
	return out, nil
}
