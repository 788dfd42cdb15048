package config

import (
	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/learner"
	"github.com/privbo/privbo/pkg/tuning"
)

// Tuning is the configuration of the tuning-job runner (tuning.New) of j over ds: the
// feature bounds of the built-in learner are the schema's when it gives them for every
// feature, else each job's private estimate at j.BoundsEpsilon (none when 0).
func (j JobsConfig) Tuning(ds *dataset.Dataset, log *zap.Logger) tuning.Config {
	tc := tuning.Config{Dataset: ds, ValidationFraction: j.ValidationFraction, SplitSeed: j.SplitSeed,
		Evaluators: j.Evaluators, Kusner: j.Kusner, MaxGrid: j.MaxGrid, MaxIterations: j.MaxIterations, Logger: log,
		Preprocessing: j.Preprocessing, Classes: j.Classes, TrainingConsented: j.TrainingConsented}
	if b, ok := schemaFeatureBounds(ds); ok {
		tc.FeatureBounds = b
		if ds.Scaling.Mode == dataset.ScalePrivate {
			// The scaling's own private estimate, not public bounds: the texts say so.
			tc.FeatureBoundsEpsilon = ds.Scaling.Epsilon
		}
	} else if j.BoundsEpsilon > 0 {
		tc.BoundsEpsilon = j.BoundsEpsilon
		tc.EstimateBounds = estimateBounds
	}
	return tc
}

// estimateBounds is dataset.EstimateBounds for the learner (tuning.Config.EstimateBounds).
func estimateBounds(x []float64, n, d int, epsilon float64) ([]learner.Bounds, error) {
	est, err := dataset.EstimateBounds(x, n, d, epsilon, dp.CryptoSource())
	if err != nil {
		return nil, err
	}
	out := make([]learner.Bounds, len(est))
	for k, e := range est {
		out[k] = learner.Bounds{Lower: e.Lower, Upper: e.Upper}
	}
	return out, nil
}

// schemaFeatureBounds returns the public bounds of every feature of ds from its schema,
// and false unless the schema gives bounds (not only a scale) for each of them.
func schemaFeatureBounds(ds *dataset.Dataset) ([]learner.Bounds, bool) {
	sch := ds.Scaling.Schema
	if sch == nil {
		return nil, false
	}
	out := make([]learner.Bounds, 0, ds.D)
	for _, f := range ds.Features {
		col, ok := sch.Column(f)
		if !ok || !col.HasBounds {
			return nil, false
		}
		out = append(out, learner.Bounds{Lower: col.Lower, Upper: col.Upper})
	}
	return out, true
}
