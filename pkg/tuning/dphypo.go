package tuning

import (
	"context"

	"github.com/privbo/privbo/pkg/jobs"
)

func (r *Runner) dphypoPlan(s jobs.DPHyPOSpec) (struct{}, jobs.Plan, error) {
	return struct{}{}, jobs.Plan{}, invalid("DP-HyPO jobs are not available yet")
}

func (r *Runner) runDPHyPO(ctx context.Context, s jobs.DPHyPOSpec, progress func(jobs.Progress)) (jobs.Result, error) {
	return jobs.Result{}, invalid("DP-HyPO jobs are not available yet")
}
