package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
)

// ResolveOutputRange fills the target's range of private outputs: the operator's
// Output.Lower/Upper first, then the schema's line for the target, then the
// private estimate, estimated (nil when none was made). It fails, naming all three
// ways, when none is available.
func (cfg *Config) ResolveOutputRange(ds *dataset.Dataset, estimated *dataset.Bounds) error {
	o := &cfg.Output
	if answer.IsExact(o.Mechanism) || o.RangeDeclared() {
		return nil
	}
	switch {
	case curator.SchemaTargetRange(ds.Scaling, ds.Target) != nil && ds.Scaling.Mode == dataset.ScaleSchema:
		r := curator.SchemaTargetRange(ds.Scaling, ds.Target)
		o.Lower, o.Upper = r.Lower, r.Upper
	case estimated != nil:
		o.Lower, o.Upper = estimated.Lower, estimated.Upper
	case ds.TargetRange != nil:
		o.Lower, o.Upper = ds.TargetRange.Lower, ds.TargetRange.Upper
	default:
		return fmt.Errorf("server: output privacy %s needs the range of the target (answers are clipped to it and the noise is calibrated to its width): "+
			"set "+cfg.Flag(&cfg.Output.Lower)+" and "+cfg.Flag(&cfg.Output.Upper)+", or give it on the target's line of the schema, "+cfg.Flag(&cfg.Data.Scaling.Schema)+", or let the curator "+
			"estimate it privately (with "+cfg.Flag(&cfg.PrivateScalingShare)+" of the budget); or choose "+cfg.Flag(&cfg.Output.Mechanism)+" none explicitly to release exact, unprotected answers", o.Mechanism)
	}
	return nil
}

// CheckScaling makes the checks server.Start and server.CheckReport share before anything is charged: the
// target's range of private answers must be declared when the operator gave a public
// scaling (a schema without the target's line is a mistake, not a request to spend ε
// on it) unless Config.EstimateTargetRange asks for the estimate; and the forecast of
// the estimate (dataset.ForecastBounds, from n, the number of columns and its ε and δ
// only) must not be poor. A coarse forecast is returned as a warning, with the schema
// lines that would replace the estimate. p must be needed (ScalingPlan.Needed); the
// forecast is returned too.
func (cfg Config) CheckScaling(raw *dataset.Raw, p curator.ScalingPlan) (dataset.BoundsForecast, []string, error) {
	if p.Target && !p.Features && !cfg.EstimateTargetRange {
		return dataset.BoundsForecast{}, nil, errTargetRangeMissing(cfg, raw, p)
	}
	f, err := dataset.ForecastBounds(raw.N, p.Columns(raw), p.Privacy())
	if err != nil {
		return f, nil, fmt.Errorf("server: %w", err)
	}
	switch f.Quality {
	case dataset.BoundsPoor:
		return f, nil, cfg.Refuse(&cfg.PrivateScalingShare, fmt.Sprintf("the private estimate of %s would be poor, so it is not made: %s. "+
			"It would spend %s of the dataset's budget and locate little of the data. %s",
			p.What(), f, p.Privacy(), remedies(cfg, raw, p, f)))
	case dataset.BoundsCoarse:
		return f, []string{fmt.Sprintf("WARNING: the private estimate of %s will be coarse (it is made, once, at the first start): %s. Expect intervals up to about 4× the width of a column's "+
			"1st–99th percentile range, and up to a tenth of a column's rows clamped (more for heavy-tailed, zero-centred or narrowly "+
			"concentrated columns); the scaled features keep less of their signal and the answers' range is wider than the target's. %s",
			p.What(), f, remedies(cfg, raw, p, f))}, nil
	}
	return f, nil, nil
}

// remedies says how to do better than forecast f: public bounds in a schema (the lines
// to write) or a larger share of the budget.
func remedies(cfg Config, raw *dataset.Raw, p curator.ScalingPlan, f dataset.BoundsForecast) string {
	var lines []string
	if p.Features {
		for _, c := range raw.Features {
			lines = append(lines, c+",LOWER,UPPER")
		}
	}
	if p.Target {
		lines = append(lines, raw.Target+",LOWER,UPPER")
	}
	where := "a schema file (" + cfg.Flag(&cfg.Data.Scaling.Schema) + ")"
	if p.Target && !p.Features {
		where = "the schema"
		if sch := cfg.Data.Scaling.Schema; sch != nil && sch.File != "" {
			where += " " + sch.File
		}
		where += " (or " + cfg.Flag(&cfg.Output.Lower) + " and " + cfg.Flag(&cfg.Output.Upper) + ")"
	}
	msg := fmt.Sprintf("Public bounds cost no privacy and fit better: give them in %s, a CSV with the header line column,lower,upper and one line per column, "+
		"each column's public range (what its values can be, not read from the data):\n  column,lower,upper\n  %s\n", where, strings.Join(lines, "\n  "))
	var need []string
	if f.Quality == dataset.BoundsPoor {
		need = append(need, spend(cfg, "a coarse", f.EpsilonFor(dataset.BoundsCoarse)))
	}
	need = append(need, spend(cfg, "a good", f.EpsilonFor(dataset.BoundsGood)))
	return msg + "Or spend more on the estimate: " + strings.Join(need, "; ") + "."
}

// spend says what ε an estimate of some quality needs and, when the budget allows it,
// the Config.PrivateScalingShare that gives it.
func spend(cfg Config, what string, eps float64) string {
	if math.IsInf(eps, 1) {
		return what + " one needs ε above 10⁴"
	}
	s := fmt.Sprintf("%s one needs ε ≥ %.3g", what, eps)
	if share := eps / cfg.Budget.Epsilon; share < 1 {
		return s + fmt.Sprintf(" ("+cfg.Flag(&cfg.PrivateScalingShare)+" ≥ %.2g of "+cfg.Flag(&cfg.Budget.Epsilon)+" %g)", math.Ceil(share*100)/100, cfg.Budget.Epsilon)
	}
	return s + fmt.Sprintf(", more than "+cfg.Flag(&cfg.Budget.Epsilon)+" %g lets the share reach", cfg.Budget.Epsilon)
}

// errTargetRangeMissing is the refusal of a public scaling without the target's range.
func errTargetRangeMissing(cfg Config, raw *dataset.Raw, p curator.ScalingPlan) error {
	sc := cfg.Data.Scaling
	what := "scaling " + string(sc.Mode) + " gives none"
	fix := "Set " + cfg.Flag(&cfg.Output.Lower) + " and " + cfg.Flag(&cfg.Output.Upper) + " to the target's public range"
	if sc.Schema != nil {
		file := sc.Schema.File
		if file == "" {
			file = "(built in code)"
		}
		what = "the schema " + file + " has no line for it"
		fix = fmt.Sprintf("Add the target's public range to the schema, the line\n  %s\n(fields as in its header %s), or set "+cfg.Flag(&cfg.Output.Lower)+" and "+cfg.Flag(&cfg.Output.Upper),
			sc.Schema.LineFor(raw.Target, "LOWER", "UPPER"), sc.Schema.HeaderLine())
		if len(sc.Schema.Fields) == 0 { // not read from a file: no header to follow
			fix = fmt.Sprintf("Add the target's public range to the schema (column %s, lower LOWER, upper UPPER), or set "+cfg.Flag(&cfg.Output.Lower)+" and "+cfg.Flag(&cfg.Output.Upper), raw.Target)
		}
	}
	return cfg.Refuse(&cfg.EstimateTargetRange, fmt.Sprintf("the answers are private ("+cfg.Flag(&cfg.Output.Mechanism)+" %s) and clipped to the range of the target %s, "+
		"but no range is declared: %s, and "+cfg.Flag(&cfg.Output.Lower)+"/"+cfg.Flag(&cfg.Output.Upper)+" are unset. %s; "+
		"or set "+cfg.Flag(&cfg.EstimateTargetRange)+" to estimate the range privately from the data, once, for %s of the dataset's budget",
		cfg.Output.Mechanism, raw.Target, what, fix, p.Privacy()))
}
