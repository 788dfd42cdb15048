package rpc

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobpb"
	"github.com/privbo/privbo/pkg/refusal"
)

// The job manager's errors as gRPC statuses. The job messages' conversions are package
// jobpb's, shared with the Go client.

func (h *handlers) jobStatus(ctx context.Context, err error) error {
	var ue *jobs.UninformativeError
	if errors.As(err, &ue) {
		f := ue.Forecast
		st := status.New(codes.FailedPrecondition, err.Error())
		info := &errdetails.ErrorInfo{Reason: string(refusal.Uninformative), Domain: refusal.Domain, Metadata: map[string]string{
			refusal.KeyEpsilonNeeded: strconv.FormatFloat(f.EpsilonNeeded, 'g', -1, 64),
			"selection_lift":         strconv.FormatFloat(f.SelectionLift, 'g', -1, 64),
			"value_lift":             strconv.FormatFloat(f.ValueLift, 'g', -1, 64),
			"margin":                 strconv.FormatFloat(f.Margin, 'g', -1, 64),
		}}
		if d, derr := st.WithDetails(info, jobpb.ForecastProto(&f)); derr == nil {
			st = d
		}
		return st.Err()
	}
	switch {
	case errors.Is(err, jobs.ErrInvalidSpec):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, jobs.ErrNotFound):
		return status.Error(codes.NotFound, "no such job for this identity")
	case errors.Is(err, jobs.ErrKeyReused):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, jobs.ErrClosed):
		return status.Error(codes.Unavailable, "the curator is shutting down; retry with the same idempotency key")
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return err
	}
	return h.status(ctx, err)
}
