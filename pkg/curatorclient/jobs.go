package curatorclient

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobpb"
	"github.com/privbo/privbo/pkg/kusner"
	"github.com/privbo/privbo/pkg/refusal"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// A Go program's private jobs on a curator, in package jobs' types: submit or quote a
// spec, follow a job to its end, read, list or cancel jobs. The modeler's job command
// is built on these. Refusals come back as *refusal.Error (Refused); a job refused for
// its forecast carries it (RefusedForecast).

// SubmitJob pays for spec and starts it. key is the idempotency key: submitting the
// same spec with a key used before returns that job and charges nothing more; "" is a
// new job every time.
func (c *Client) SubmitJob(ctx context.Context, key string, spec jobs.Spec) (jobs.Job, error) {
	p, err := c.c.SubmitJob(ctx, &curatorv1.SubmitJobRequest{IdempotencyKey: key, Spec: jobpb.SpecProto(spec)})
	if err != nil {
		return jobs.Job{}, Refused(err)
	}
	return jobpb.Job(p)
}

// QuoteJob plans spec as SubmitJob would — cost, relation, guarantee and, for a Kusner
// job, its forecast — and charges, records and runs nothing.
func (c *Client) QuoteJob(ctx context.Context, spec jobs.Spec) (jobpb.Quote, error) {
	q, err := c.c.QuoteJob(ctx, &curatorv1.QuoteJobRequest{Spec: jobpb.SpecProto(spec)})
	if err != nil {
		return jobpb.Quote{}, Refused(err)
	}
	return jobpb.QuoteOf(q), nil
}

// Job returns the caller's job id as it stands.
func (c *Client) Job(ctx context.Context, id string) (jobs.Job, error) {
	p, err := c.c.GetJob(ctx, &curatorv1.GetJobRequest{Id: id})
	if err != nil {
		return jobs.Job{}, Refused(err)
	}
	return jobpb.Job(p)
}

// Jobs lists the caller's jobs, newest first.
func (c *Client) Jobs(ctx context.Context) ([]jobs.Job, error) {
	resp, err := c.c.ListJobs(ctx, &curatorv1.ListJobsRequest{})
	if err != nil {
		return nil, Refused(err)
	}
	out := make([]jobs.Job, 0, len(resp.GetJobs()))
	for _, p := range resp.GetJobs() {
		j, err := jobpb.Job(p)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// CancelJob stops the caller's job id if it is still queued or running and returns it
// in its final state; its charge stays spent.
func (c *Client) CancelJob(ctx context.Context, id string) (jobs.Job, error) {
	p, err := c.c.CancelJob(ctx, &curatorv1.CancelJobRequest{Id: id})
	if err != nil {
		return jobs.Job{}, Refused(err)
	}
	return jobpb.Job(p)
}

// WaitJob follows the caller's job id from its first event until it ends, handing each
// event to progress (nil: none), and returns the job as it ended: its result, or its
// error. The events carry counts and data-independent messages only.
func (c *Client) WaitJob(ctx context.Context, id string, progress func(jobs.Event)) (jobs.Job, error) {
	stream, err := c.c.WatchJob(ctx, &curatorv1.WatchJobRequest{Id: id})
	if err != nil {
		return jobs.Job{}, Refused(err)
	}
	for {
		e, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return jobs.Job{}, fmt.Errorf("watch: %w", Refused(err))
		}
		if progress != nil {
			progress(jobpb.Event(e))
		}
	}
	return c.Job(ctx, id)
}

// RefusedForecast returns the forecast a SubmitJob refusal for an uninformative Kusner
// job carries, or nil for any other error: the refusal is told by its reason
// (refusal.Uninformative), the forecast is the typed detail beside it.
func RefusedForecast(err error) *kusner.Forecast {
	if !errors.Is(err, refusal.ErrUninformative) {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if f, isForecast := d.(*curatorv1.KusnerForecast); isForecast {
			return jobpb.Forecast(f)
		}
	}
	return nil
}
