package config

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/transport"
)

// Resolve validates cfg, fills in its defaults and returns with it the projection
// mechanism cfg.ProjectionMechanism names, parsed once, here: server.Start passes the
// value on to the curator (curator.Config.Projection) instead of having the name
// parsed again. What needs files (TLS material, the dataset) is checked by
// server.CheckReport and server.Start.
func (cfg Config) Resolve() (Config, projection.Mechanism, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.Jobs.Lease < 0 {
		return cfg, nil, fieldError("Jobs.Lease", fmt.Sprintf("Config.Jobs.Lease must not be negative, got %v (0 takes the default, %v)", cfg.Jobs.Lease, jobs.DefaultLease))
	}
	if cfg.StateDir == "" {
		return cfg, nil, fieldError("StateDir", "Config.StateDir is required: the directory for what must survive a restart (ledger, released matrices)")
	}
	if cfg.DatasetID == "" {
		return cfg, nil, fieldError("DatasetID", "Config.DatasetID is required: budgets are kept per dataset id, "+
			"so that renaming or moving the data file never gives the same records a fresh budget; declare a stable id "+
			"(an existing deployment: the dataset name its ledger already uses, see 'curator ledger')")
	}
	if err := (ledger.Account{Dataset: cfg.DatasetID, Identity: curator.CuratorIdentity}).Validate(); err != nil {
		return cfg, nil, &FieldError{Field: "DatasetID", Msg: "Config.DatasetID", Err: err}
	}
	if cfg.Budget.Epsilon == 0 {
		return cfg, nil, fieldError("Budget.Epsilon", fmt.Sprintf("a privacy budget is required: Config.Budget.Epsilon, the ε each modeler identity may spend "+
			"(and Config.Budget.Delta, for instance %g)", DefaultBudgetDelta))
	}
	// Each part of the dataset cap defaults to the identity budget's on its own, so
	// that setting only DatasetBudget.Epsilon does not leave a δ cap of zero.
	if cfg.DatasetBudget.Epsilon == 0 {
		cfg.DatasetBudget.Epsilon = cfg.Budget.Epsilon
	}
	if cfg.DatasetBudget.Delta == 0 {
		cfg.DatasetBudget.Delta = cfg.Budget.Delta
	}
	mech, err := projection.ParseMechanism(cmp.Or(cfg.ProjectionMechanism, projection.MechanismGaussian))
	if err != nil {
		return cfg, nil, fieldError("ProjectionMechanism", fmt.Sprintf("Config.ProjectionMechanism: unknown projection mechanism %q (want %s)",
			cfg.ProjectionMechanism, strings.Join(projection.MechanismNames(), " or ")))
	}
	cfg.PatientBudget, cfg.PatientDatasetBudget = PatientCaps(cfg.Budget, cfg.PatientBudget, cfg.PatientDatasetBudget)
	if err := cfg.limits().Validate(); err != nil {
		return cfg, nil, fmt.Errorf("server: budget: %w", err)
	}
	if err := patientCapConflict(cfg, mech); err != nil {
		return cfg, nil, err
	}
	if e := cfg.DefaultStudy.Epsilon; math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
		return cfg, nil, fieldError("DefaultStudy.Epsilon", fmt.Sprintf("Config.DefaultStudy.Epsilon must be positive and finite (0 for the default), got %g", e))
	}
	if d := cfg.DefaultStudy.Delta; math.IsNaN(d) || d < 0 || d >= 1 {
		return cfg, nil, fieldError("DefaultStudy.Delta", fmt.Sprintf("Config.DefaultStudy.Delta must lie in (0, 1) (0 for the default), got %g", d))
	}
	if cfg.Output.Mechanism == "" {
		cfg.Output.Mechanism = answer.Default
	}
	if !answer.IsExact(cfg.Output.Mechanism) && cfg.Output.Epsilon == 0 {
		cfg.Output.Epsilon = curator.DefaultOutputEpsilon
	}
	// The target's range may come from the schema or a private estimate (server.Start, after
	// loading the data); until then validate with a placeholder range.
	probe := cfg.Output
	if !answer.IsExact(probe.Mechanism) && !probe.RangeDeclared() {
		probe.Lower, probe.Upper = 0, 1
	}
	if err := probe.Validate(); err != nil {
		return cfg, nil, fmt.Errorf("server: %w", err)
	}
	if cfg.Data.Scaling.Mode == "" {
		cfg.Data.Scaling.Mode = dataset.ScalePrivate
	}
	if cfg.PrivateScalingShare == 0 {
		cfg.PrivateScalingShare = DefaultPrivateScalingShare
	}
	if s := cfg.PrivateScalingShare; !(s > 0 && s < 1) {
		return cfg, nil, fieldError("PrivateScalingShare", fmt.Sprintf("Config.PrivateScalingShare must lie in (0, 1) (the fraction of the per-identity budget ε "+
			"spent once on the private scaling estimate), got %g", s))
	}
	if cfg.ExactAnswersMaxRows == 0 {
		cfg.ExactAnswersMaxRows = DefaultExactAnswersMaxRows
	}
	if cfg.ExactAnswersMaxRows < 0 {
		return cfg, nil, fieldError("ExactAnswersMaxRows", fmt.Sprintf("Config.ExactAnswersMaxRows must be ≥ 1, got %d", cfg.ExactAnswersMaxRows))
	}
	if answer.IsExact(cfg.Output.Mechanism) && cfg.Evaluation.Mode == curator.EvaluateProgram && !cfg.AllowExactProgramAnswers {
		return cfg, nil, fieldError("AllowExactProgramAnswers", "Config.Evaluation.Mode program with Config.Output.Mechanism none would release exact functions "+
			"of each queried record's features, which the projection is meant to protect; choose Config.Output.Mechanism laplace or gaussian, "+
			"or set Config.AllowExactProgramAnswers to accept it explicitly")
	}
	for _, l := range []struct {
		field string
		value float64
	}{{"Limits.Rate", cfg.Limits.Rate}, {"Limits.Burst", float64(cfg.Limits.Burst)}, {"Limits.Concurrent", float64(cfg.Limits.Concurrent)}} {
		if l.value < 0 {
			return cfg, nil, fieldError(l.field, fmt.Sprintf("Config.%s: rate and concurrency limits must be ≥ 0, got %g", l.field, l.value))
		}
	}
	if r := cfg.AuthFailures.Rate; math.IsNaN(r) || math.IsInf(r, 0) {
		return cfg, nil, fieldError("AuthFailures.Rate", fmt.Sprintf("Config.AuthFailures.Rate must be a finite number of failed authentications per second and peer "+
			"(negative turns the throttle off), got %g", r))
	}
	af := cfg.AuthFailures
	for _, l := range []struct {
		field    string
		negative bool
		value    any
	}{{"AuthFailures.Burst", af.Burst < 0, af.Burst}, {"AuthFailures.Logged", af.Logged < 0, af.Logged},
		{"AuthFailures.LogInterval", af.LogInterval < 0, af.LogInterval}, {"AuthFailures.MaxPeers", af.MaxPeers < 0, af.MaxPeers}} {
		if l.negative {
			return cfg, nil, fieldError(l.field, fmt.Sprintf("Config.%s must not be negative (0: the default), got %v", l.field, l.value))
		}
	}
	cfg.AuthFailures = cfg.AuthFailures.WithDefaults()
	if cfg.MaxHeaderBytes == 0 {
		cfg.MaxHeaderBytes = transport.DefaultMaxHeaderListBytes
	}
	if cfg.MaxHeaderBytes < 1024 {
		return cfg, nil, fieldError("MaxHeaderBytes", fmt.Sprintf("Config.MaxHeaderBytes must be at least 1024 (gRPC's own headers take a few hundred bytes), got %d", cfg.MaxHeaderBytes))
	}
	if cfg.MemoryLimit < 0 {
		return cfg, nil, fieldError("MemoryLimit", fmt.Sprintf("Config.MemoryLimit must be a number of bytes (0: the container's or the machine's), got %d", cfg.MemoryLimit))
	}
	if r := cfg.ReleaseMemory; r != 0 && r < curator.MinMemory {
		return cfg, nil, fieldError("ReleaseMemory", fmt.Sprintf("Config.ReleaseMemory must be at least %s (room to stream any release; 0: derived from the memory limit), got %d bytes",
			memory.MiB(curator.MinMemory), r))
	}
	if cfg.MemoryLimit > 0 && cfg.ReleaseMemory > cfg.MemoryLimit {
		return cfg, nil, fieldError("ReleaseMemory", fmt.Sprintf("Config.ReleaseMemory (%s) exceeds Config.MemoryLimit (%s), the memory the whole curator may use",
			memory.MiB(cfg.ReleaseMemory), memory.MiB(cfg.MemoryLimit)))
	}
	switch cfg.Ledger.Store() {
	case "sqlite":
	case "postgres":
		if cfg.Ledger.DSN == "" {
			return cfg, nil, fieldError("Ledger.DSN", "Config.Ledger.Kind postgres needs Config.Ledger.DSN")
		}
	default:
		return cfg, nil, fieldError("Ledger.Kind", fmt.Sprintf("Config.Ledger.Kind: unknown ledger kind %q (want sqlite or postgres)", cfg.Ledger.Kind))
	}
	return cfg, mech, nil
}

// PatientCaps fills in the whole-patient caps' defaults as server.Start does: a per-identity
// cap's δ defaults to the per-identity budget's; the dataset's cap defaults to the
// per-identity cap, part by part (its δ then to the per-identity budget's). Zero ε
// stays no cap.
func PatientCaps(budget, perIdentity, dataset ledger.Cost) (ledger.Cost, ledger.Cost) {
	if perIdentity.Epsilon > 0 && perIdentity.Delta == 0 {
		perIdentity.Delta = budget.Delta
	}
	if dataset.Epsilon == 0 {
		dataset.Epsilon = perIdentity.Epsilon
	}
	if dataset.Epsilon > 0 && dataset.Delta == 0 {
		dataset.Delta = perIdentity.Delta
		if dataset.Delta == 0 {
			dataset.Delta = budget.Delta
		}
	}
	return perIdentity, dataset
}

// LedgerLimits are the limits cfg records and enforces in the ledger: the budgets and
// the whole-patient caps with server.Start's defaults filled in.
func (cfg Config) LedgerLimits() ledger.Limits {
	c, _, err := cfg.Resolve()
	if err != nil {
		return cfg.limits()
	}
	return c.limits()
}

// limits are the ledger limits of cfg (after Resolve).
func (cfg Config) limits() ledger.Limits {
	return ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget,
		Patient: ledger.PatientLimits{PerIdentity: cfg.PatientBudget, Dataset: cfg.PatientDatasetBudget}}
}

// patientCapConflict refuses a whole-patient cap with settings whose every release of
// some kind has no finite whole-patient figure, so that the cap would refuse them all:
// exact answers, the lifted mechanism, a data-dependent scaling. mech is the projection
// mechanism cfg names, as Resolve parsed it.
func patientCapConflict(cfg Config, mech projection.Mechanism) error {
	if cfg.PatientBudget.Epsilon == 0 && cfg.PatientDatasetBudget.Epsilon == 0 {
		return nil
	}
	field := "PatientBudget.Epsilon"
	if cfg.PatientBudget.Epsilon == 0 {
		field = "PatientDatasetBudget.Epsilon"
	}
	var why string
	switch {
	case answer.IsExact(cmp.Or(cfg.Output.Mechanism, answer.Default)):
		why = fmt.Sprintf("Config.Output.Mechanism %s releases exact answers, which have no whole-patient bound", cfg.Output.Mechanism)
	case mech.NoWholeRecord() != "":
		why = fmt.Sprintf("Config.ProjectionMechanism %s has no guarantee at any distance", cfg.ProjectionMechanism)
	case !cfg.Data.Scaling.Mode.Private():
		why = fmt.Sprintf("Config.Data.Scaling.Mode %s scales with the data's own statistics, so no projection has a whole-patient bound", cfg.Data.Scaling.Mode)
	default:
		return nil
	}
	return fieldError(field, fmt.Sprintf("a whole-patient cap (Config.%s) refuses every release with no finite whole-patient figure, and %s: "+
		"every such release would be refused; drop the cap, or choose settings with a guarantee", field, why))
}
