package server

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

// scaleDataset scales raw as cfg says, first estimating privately (and charging, or
// reusing the ledger's stored estimate) what no public source gives, and fills in
// cfg.Output's range (config.Config.ResolveOutputRange).
func scaleDataset(ctx context.Context, store curator.Ledger, cfg *config.Config, raw *dataset.Raw) (*dataset.Dataset, error) {
	p := curator.PlanScaling(raw, cfg.Data.Scaling, cfg.Output, cfg.PrivateScalingShare, cfg.Budget, cfg.DatasetBudget)
	sc := cfg.Data.Scaling
	var estimated *dataset.Bounds
	if p.Needed() {
		f, warnings, err := cfg.CheckScaling(raw, p)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			cfg.Logger.Warn(w)
			if cfg.Warn != nil {
				cfg.Warn(w)
			}
		}
		if len(warnings) == 0 {
			cfg.Logger.Info("private scaling estimate forecast", zap.String("forecast", f.String()))
		}
		if sc, estimated, err = p.Estimate(ctx, store, cfg.DatasetID, sc, raw, cfg.Logger); err != nil {
			if be := (*ledger.BudgetError)(nil); errors.As(err, &be) {
				f := cfg.Flag
				return nil, fmt.Errorf("%w; raise %s and %s (or %s and %s, their defaults), lower %s, or give public bounds and the target's range in a schema, %s (and %s/%s)",
					err, f(&cfg.DatasetBudget.Epsilon), f(&cfg.DatasetBudget.Delta), f(&cfg.Budget.Epsilon), f(&cfg.Budget.Delta),
					f(&cfg.PrivateScalingShare), f(&cfg.Data.Scaling.Schema), f(&cfg.Output.Lower), f(&cfg.Output.Upper))
			}
			return nil, err
		}
	}
	ds, err := raw.Scale(sc)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.DatasetName != "" {
		ds.Name = cfg.DatasetName
	}
	if err := cfg.ResolveOutputRange(ds, estimated); err != nil {
		return nil, err
	}
	if p.Target {
		// The range came from the private estimate: the answers' guarantee states its ε.
		cfg.Output.RangeEpsilon = p.EpsilonTarget
	}
	if err := cfg.Output.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return ds, nil
}
