package rpc

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/kusner"
	"github.com/privbo/privbo/pkg/refusal"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestUninformativeStatus: a job refused for its forecast is FAILED_PRECONDITION with
// the reason and the figures as ErrorInfo metadata, and the forecast as a typed detail,
// so that no client parses the message.
func TestUninformativeStatus(t *testing.T) {
	err := (&handlers{}).jobStatus(context.Background(), &jobs.UninformativeError{Forecast: kusner.Forecast{EpsilonNeeded: 2.5, Margin: 0.1}})
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	var f *curatorv1.KusnerForecast
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *curatorv1.KusnerForecast:
			f = d
		}
	}
	if st.Code() != codes.FailedPrecondition || info == nil || info.GetReason() != string(refusal.Uninformative) ||
		info.GetMetadata()["epsilon_needed"] != "2.5" || f.GetEpsilonNeeded() != 2.5 {
		t.Errorf("jobStatus(uninformative) = %v, info %v, forecast %v; want FAILED_PRECONDITION, reason %s, ε needed 2.5 in both", st, info, f, string(refusal.Uninformative))
	}
}
