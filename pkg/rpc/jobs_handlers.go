package rpc

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobpb"
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
	spec, err := jobpb.Spec(req.GetSpec())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	j, err := m.Submit(ctx, identity(ctx), req.GetIdempotencyKey(), spec)
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobpb.JobProto(j), nil
}

// QuoteJob plans a job without charging, recording or running it.
func (h *handlers) QuoteJob(ctx context.Context, req *curatorv1.QuoteJobRequest) (*curatorv1.JobQuote, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	spec, err := jobpb.Spec(req.GetSpec())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	plan, err := m.Quote(spec)
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobpb.QuoteProto(jobpb.Quote{Plan: plan, Refused: jobs.Refused(spec, plan)}), nil
}

func (h *handlers) GetJob(ctx context.Context, req *curatorv1.GetJobRequest) (*curatorv1.Job, error) {
	return h.oneJob(ctx, req.GetId(), (*jobs.Manager).Get)
}

func (h *handlers) CancelJob(ctx context.Context, req *curatorv1.CancelJobRequest) (*curatorv1.Job, error) {
	return h.oneJob(ctx, req.GetId(), (*jobs.Manager).Cancel)
}

// oneJob answers a request about the caller's job id with what op makes of it.
func (h *handlers) oneJob(ctx context.Context, id string, op func(*jobs.Manager, context.Context, string, string) (jobs.Job, error)) (*curatorv1.Job, error) {
	m, err := h.jobManager()
	if err != nil {
		return nil, err
	}
	j, err := op(m, ctx, identity(ctx), id)
	if err != nil {
		return nil, h.jobStatus(ctx, err)
	}
	return jobpb.JobProto(j), nil
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
		resp.Jobs = append(resp.Jobs, jobpb.JobProto(j))
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
		return stream.Send(jobpb.EventProto(e))
	})
	if err != nil {
		return h.jobStatus(ctx, err)
	}
	return nil
}
