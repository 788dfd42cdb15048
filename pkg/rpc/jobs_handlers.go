package rpc

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/refusal"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

func (h *handlers) jobManager() (*jobs.Manager, error) {
	if h.jobs == nil {
		return nil, status.Error(codes.Unimplemented, "this curator runs no jobs: its operator has not enabled them")
	}
	return h.jobs, nil
}

func (h *handlers) SubmitJob(ctx context.Context, req *curatorv1.SubmitJobRequest) (*curatorv1.Job, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	spec, err := specFromProto(req.GetSpec())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	j, err := m.Submit(ctx, identity(ctx), req.GetIdempotencyKey(), spec)
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobProto(j), nil
}

// QuoteJob plans a job without charging, recording or running it.
func (h *handlers) QuoteJob(ctx context.Context, req *curatorv1.QuoteJobRequest) (*curatorv1.JobQuote, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	spec, err := specFromProto(req.GetSpec())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	plan, err := m.Quote(spec)
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobQuoteProto(spec, plan), nil
}

func (h *handlers) GetJob(ctx context.Context, req *curatorv1.GetJobRequest) (*curatorv1.Job, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	j, err := m.Get(ctx, identity(ctx), req.GetId())
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobProto(j), nil
}

func (h *handlers) CancelJob(ctx context.Context, req *curatorv1.CancelJobRequest) (*curatorv1.Job, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	j, err := m.Cancel(ctx, identity(ctx), req.GetId())
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobProto(j), nil
}

func (h *handlers) ListJobs(ctx context.Context, _ *curatorv1.ListJobsRequest) (*curatorv1.ListJobsResponse, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	js, err := m.List(ctx, identity(ctx))
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	resp := &curatorv1.ListJobsResponse{}
	for _, j := range js {
		resp.Jobs = append(resp.Jobs, jobProto(j))
	}
	return resp, nil
}

func (h *handlers) WatchJob(req *curatorv1.WatchJobRequest, stream curatorv1.CuratorService_WatchJobServer) error {
	m, err := h.jobManager()
	if err != nil {
		return err
	}
	ctx := stream.Context()
	err = m.Watch(ctx, identity(ctx), req.GetId(), req.GetAfterSeq(), func(e jobs.Event) error {
		return stream.Send(&curatorv1.JobEvent{JobId: e.JobID, Seq: e.Seq, TimeUnixMs: e.Time.UnixMilli(), State: stateProto(e.State),
			Step: uint32(e.Step), Total: uint32(e.Total), Message: e.Message})
	})
	if err != nil {
		return h.jobStatus(ctx, err)
	}
	return nil
}

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
		if d, derr := st.WithDetails(info, forecastProto(&f)); derr == nil {
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
