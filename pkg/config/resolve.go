package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"go.uber.org/zap"

	"github.com/privbo/privbo/internal/setting"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/rpc"
	"github.com/privbo/privbo/pkg/storage"
	"github.com/privbo/privbo/pkg/transport"
	"github.com/privbo/privbo/pkg/worth"
)

// Resolve validates cfg, fills in its defaults and returns with it the projection
// mechanism cfg.ProjectionMechanism names, parsed once, here: server.Start passes the
// value on to the curator (curator.Config.Projection) instead of having the name
// parsed again. What needs files (TLS material, tokens, the dataset) is read and
// checked by server.CheckReport and server.Start.
func (cfg Config) Resolve() (Config, projection.Mechanism, error) {
	cfg.Logger = cmp.Or(cfg.Logger, zap.NewNop())
	// Every setting's range, as the command line checks it; a zero field is unset.
	if err := cfg.Bind().Check(); err != nil {
		var se *setting.Error
		errors.As(err, &se)
		return cfg, nil, &FieldError{Field: se.Name, Msg: err.Error()}
	}
	cfg.ShutdownTimeout = cmp.Or(cfg.ShutdownTimeout, DefaultShutdownTimeout)
	if cfg.StateDir == "" {
		return cfg, nil, cfg.Refuse(&cfg.StateDir, cfg.Flag(&cfg.StateDir)+" is required: the directory for what must survive a restart (ledger, released matrices)")
	}
	if cfg.DatasetID == "" {
		return cfg, nil, cfg.Refuse(&cfg.DatasetID, cfg.Flag(&cfg.DatasetID)+" is required: budgets are kept per dataset id, "+
			"so that renaming or moving the data file never gives the same records a fresh budget; declare a stable id "+
			"(an existing deployment: the dataset name its ledger already uses, see 'curator ledger')")
	}
	if err := (ledger.Account{Dataset: cfg.DatasetID, Identity: curator.CuratorIdentity}).Validate(); err != nil {
		return cfg, nil, &FieldError{Field: cfg.Bind().Name(&cfg.DatasetID), Msg: cfg.Flag(&cfg.DatasetID), Err: err}
	}
	if cfg.Budget.Epsilon == 0 {
		return cfg, nil, cfg.Refuse(&cfg.Budget.Epsilon, fmt.Sprintf("a privacy budget is required: "+cfg.Flag(&cfg.Budget.Epsilon)+", the ε each modeler identity may spend "+
			"(and "+cfg.Flag(&cfg.Budget.Delta)+", for instance %g)", DefaultBudgetDelta))
	}
	// Each part of the dataset cap defaults to the identity budget's on its own, so
	// that setting only DatasetBudget.Epsilon does not leave a δ cap of zero.
	cfg.DatasetBudget.Epsilon = cmp.Or(cfg.DatasetBudget.Epsilon, cfg.Budget.Epsilon)
	cfg.DatasetBudget.Delta = cmp.Or(cfg.DatasetBudget.Delta, cfg.Budget.Delta)
	mech, err := projection.ParseMechanism(cmp.Or(cfg.ProjectionMechanism, projection.MechanismGaussian))
	if err != nil {
		return cfg, nil, cfg.Refuse(&cfg.ProjectionMechanism, fmt.Sprintf(cfg.Flag(&cfg.ProjectionMechanism)+": unknown projection mechanism %q (want %s)",
			cfg.ProjectionMechanism, strings.Join(projection.MechanismNames(), " or ")))
	}
	cfg.PatientBudget, cfg.PatientDatasetBudget = PatientCaps(cfg.Budget, cfg.PatientBudget, cfg.PatientDatasetBudget)
	if err := cfg.LedgerLimits().Validate(); err != nil {
		return cfg, nil, fmt.Errorf("server: budget: %w", err)
	}
	if err := patientCapConflict(cfg, mech); err != nil {
		return cfg, nil, err
	}
	cfg.Output.Mechanism = cmp.Or(cfg.Output.Mechanism, answer.Default)
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
	cfg.Data.Scaling.Mode = cmp.Or(cfg.Data.Scaling.Mode, dataset.ScalePrivate)
	cfg.PrivateScalingShare = cmp.Or(cfg.PrivateScalingShare, DefaultPrivateScalingShare)
	cfg.ExactAnswersMaxRows = cmp.Or(cfg.ExactAnswersMaxRows, DefaultExactAnswersMaxRows)
	if answer.IsExact(cfg.Output.Mechanism) && cfg.Evaluation.Mode == curator.EvaluateProgram && !cfg.AllowExactProgramAnswers {
		return cfg, nil, cfg.Refuse(&cfg.AllowExactProgramAnswers, cfg.Flag(&cfg.Evaluation.Mode)+" program with "+cfg.Flag(&cfg.Output.Mechanism)+" none would release exact functions "+
			"of each queried record's features, which the projection is meant to protect; choose "+cfg.Flag(&cfg.Output.Mechanism)+" laplace or gaussian, "+
			"or set "+cfg.Flag(&cfg.AllowExactProgramAnswers)+" to accept it explicitly")
	}
	cfg.AuthFailures = cfg.AuthFailures.WithDefaults()
	cfg.MaxHeaderBytes = cmp.Or(cfg.MaxHeaderBytes, transport.DefaultMaxHeaderListBytes)
	cfg.Streams.PerIdentity = cmp.Or(cfg.Streams.PerIdentity, rpc.DefaultStreamsPerIdentity)
	cfg.Streams.IdleTimeout = cmp.Or(cfg.Streams.IdleTimeout, rpc.DefaultStreamIdleTimeout)
	if cfg.MemoryLimit > 0 && cfg.ReleaseMemory > cfg.MemoryLimit {
		return cfg, nil, cfg.Refuse(&cfg.ReleaseMemory, fmt.Sprintf(cfg.Flag(&cfg.ReleaseMemory)+" (%s) exceeds "+cfg.Flag(&cfg.MemoryLimit)+" (%s), the memory the whole curator may use",
			memory.MiB(cfg.ReleaseMemory), memory.MiB(cfg.MemoryLimit)))
	}
	cfg.Ledger.Kind = cmp.Or(cfg.Ledger.Kind, storage.DefaultKind)
	switch cfg.Ledger.Kind {
	case "sqlite":
	case "postgres":
		if cfg.Ledger.DSN == "" {
			return cfg, nil, cfg.Refuse(&cfg.Ledger.DSN, cfg.Flag(&cfg.Ledger.Kind)+" postgres needs "+cfg.Flag(&cfg.Ledger.DSN))
		}
	default:
		return cfg, nil, cfg.Refuse(&cfg.Ledger.Kind, fmt.Sprintf(cfg.Flag(&cfg.Ledger.Kind)+": unknown ledger kind %q (want sqlite or postgres)", cfg.Ledger.Kind))
	}
	if err := checkConsole(cfg); err != nil {
		return cfg, nil, err
	}
	if err := checkSecurity(cfg); err != nil {
		return cfg, nil, err
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
	dataset.Epsilon = cmp.Or(dataset.Epsilon, perIdentity.Epsilon)
	if dataset.Epsilon > 0 && dataset.Delta == 0 {
		dataset.Delta = cmp.Or(perIdentity.Delta, budget.Delta)
	}
	return perIdentity, dataset
}

// LedgerLimits are the limits cfg, resolved, records and enforces in the ledger: the
// budgets and the whole-patient caps.
func (cfg Config) LedgerLimits() ledger.Limits {
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
	field := &cfg.PatientBudget.Epsilon
	if cfg.PatientBudget.Epsilon == 0 {
		field = &cfg.PatientDatasetBudget.Epsilon
	}
	var why string
	switch {
	case answer.IsExact(cmp.Or(cfg.Output.Mechanism, answer.Default)):
		why = fmt.Sprintf(cfg.Flag(&cfg.Output.Mechanism)+" %s releases exact answers, which have no whole-patient bound", cfg.Output.Mechanism)
	case mech.NoWholeRecord() != "":
		why = fmt.Sprintf(cfg.Flag(&cfg.ProjectionMechanism)+" %s has no guarantee at any distance", cfg.ProjectionMechanism)
	case !cfg.Data.Scaling.Mode.Private():
		why = fmt.Sprintf(cfg.Flag(&cfg.Data.Scaling.Mode)+" %s scales with the data's own statistics, so no projection has a whole-patient bound", cfg.Data.Scaling.Mode)
	default:
		return nil
	}
	return cfg.Refuse(field, fmt.Sprintf("a whole-patient cap (%s) refuses every release with no finite whole-patient figure, and %s: "+
		"every such release would be refused; drop the cap, or choose settings with a guarantee", cfg.Flag(field), why))
}

// Warnings are what an operator must be told before serving cfg: a data-dependent
// scaling named explicitly, and exact, unprotected query answers. server.Start logs each,
// once; check-config prints them.
func Warnings(cfg Config) []string {
	var w []string
	f := cfg.Flag
	// The dataset's δ cap defaults to the identity's, so a zero identity δ is the
	// only way to a zero δ limit.
	if cfg.Budget.Epsilon > 0 && cfg.Budget.Delta == 0 {
		w = append(w, fmt.Sprintf("WARNING: %s is 0, so every release that needs δ > 0 is refused, the default Gaussian projection among them; only pure ε-DP releases (laplace answers) can be made. "+
			"Set %s above 0, for instance %g.", f(&cfg.Budget.Delta), f(&cfg.Budget.Delta), DefaultBudgetDelta))
	}
	if cfg.TrustIdentityHeaderFromNetwork && cfg.TLS.ClientCAFile == "" && cfg.TokensFile == "" && !transport.IsLoopback(cfg.Listen) {
		w = append(w, fmt.Sprintf("WARNING: %s: anyone who reaches %s can name any identity in the %s header and spend its budget. "+
			"Use client certificates (%s) or bearer tokens (%s) unless a proxy in front authenticates callers.",
			f(&cfg.TrustIdentityHeaderFromNetwork), cfg.Listen, transport.IdentityHeader, f(&cfg.TLS.ClientCAFile), f(&cfg.TokensFile)))
	}
	if m := cfg.Data.Scaling.Mode; m != "" && !m.Private() {
		w = append(w, fmt.Sprintf("WARNING: %s %s scales with the data's own statistics, so the (ε, δ) guarantee of every release DOES NOT HOLD. "+
			"Use public bounds (%s) or the default private scaling unless the data are public.", f(&cfg.Data.Scaling.Mode), m, f(&cfg.Data.Scaling.Schema)))
	}
	if cfg.Jobs.Enabled && !cfg.Jobs.TrainingConsented && (cfg.PatientBudget.Epsilon > 0 || cfg.PatientDatasetBudget.Epsilon > 0) {
		w = append(w, fmt.Sprintf("WARNING: with a whole-patient cap (%s) every Kusner job will be refused, since it trains with no mechanism; DP-HyPO jobs are accepted. "+
			"%s declares the training part's patients consented, if they are.", f(&cfg.PatientBudget.Epsilon), f(&cfg.Jobs.TrainingConsented)))
	}
	if !answer.IsExact(cfg.Output.Mechanism) {
		if fc, ok := answersForecast(cfg.Output); ok && fc.Class == worth.NearRandom {
			w = append(w, "WARNING: "+fc.String()+" ("+f(&cfg.Output.Epsilon)+"; or a public range nearer the target's values, "+f(&cfg.Output.Lower)+" and "+f(&cfg.Output.Upper)+")")
		}
		return w
	}
	limit := cmp.Or(cfg.ExactAnswersMaxRows, DefaultExactAnswersMaxRows)
	w = append(w, fmt.Sprintf("WARNING: %s none: query answers are EXACT and UNPROTECTED (ε = ∞) and cost no budget; identities holding a projection can read the exact target of up to %d rows (%s). "+
		"Use laplace or gaussian unless the outputs are not sensitive.", f(&cfg.Output.Mechanism), limit, f(&cfg.ExactAnswersMaxRows)))
	if cfg.Evaluation.Mode == curator.EvaluateProgram {
		w = append(w, fmt.Sprintf("WARNING: %s program with exact answers (%s): each answer is an exact function of one record's features, which the projection's (ε, δ) then does not protect.",
			f(&cfg.Evaluation.Mode), f(&cfg.AllowExactProgramAnswers)))
	}
	return w
}

// answersForecast is what the answers o releases are worth (worth.Study) before their
// range is known: the noise sd of a range of width one, which is the ratio of sd to
// width whatever the range, since the noise is calibrated to the width.
func answersForecast(o curator.OutputPrivacy) (worth.Forecast, bool) {
	eps := cmp.Or(o.Epsilon, curator.DefaultOutputEpsilon)
	m, err := answer.New(o.Mechanism, answer.Params{Epsilon: eps, Delta: o.Delta, Lower: 0, Upper: 1})
	if err != nil {
		return worth.Forecast{}, false
	}
	return worth.Ratio(m.NoiseSD(), eps), true
}

// checkSecurity refuses TLS material that cannot serve (client certificates without
// TLS, half a key pair), plaintext on addresses other than loopback unless explicitly
// allowed, and, there, identities taken from the privbo-identity header — neither
// client certificates nor bearer tokens authenticate the callers
// (transport.Auth.TrustsIdentityHeader), with plaintext or TLS alike — unless
// explicitly trusted. transport loads the material (transport.ServerSecurity.Credentials).
func checkSecurity(cfg Config) error {
	t, loopback := cfg.TLS, transport.IsLoopback(cfg.Listen)
	plaintext := t.CertFile == "" && t.KeyFile == ""
	switch {
	case plaintext && t.ClientCAFile != "":
		return cfg.Refuse(&cfg.TLS.ClientCAFile, "client certificates ("+cfg.Flag(&cfg.TLS.ClientCAFile)+") need TLS: set "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile))
	case plaintext && !loopback && !cfg.AllowPlaintext:
		return cfg.Refuse(&cfg.AllowPlaintext, fmt.Sprintf("refusing to serve plaintext on %s ("+cfg.Flag(&cfg.Listen)+"), which is not a loopback address: set "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile)+", "+
			"or "+cfg.Flag(&cfg.AllowPlaintext)+" only behind a TLS-terminating proxy", cfg.Listen))
	case (t.CertFile == "") != (t.KeyFile == ""):
		missing := &cfg.TLS.KeyFile
		if t.CertFile == "" {
			missing = &cfg.TLS.CertFile
		}
		return cfg.Refuse(missing, "TLS needs both the certificate and its private key: set "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile))
	}
	if t.ClientCAFile != "" || cfg.TokensFile != "" || loopback || cfg.TrustIdentityHeaderFromNetwork {
		return nil
	}
	return cfg.Refuse(&cfg.TrustIdentityHeaderFromNetwork, fmt.Sprintf("refusing to serve on %s ("+cfg.Flag(&cfg.Listen)+"), which is not a loopback address, without authenticating callers: "+
		"each would name its own identity in the %s header, so anyone who can reach the address could spend any identity's budget. "+
		"Give client certificates ("+cfg.Flag(&cfg.TLS.ClientCAFile)+", with "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile)+") or bearer tokens ("+cfg.Flag(&cfg.TokensFile)+"); "+
		"or set "+cfg.Flag(&cfg.TrustIdentityHeaderFromNetwork)+" only if everything that can reach %s authenticates its callers and sets the header itself", cfg.Listen, transport.IdentityHeader, cfg.Listen))
}

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
		// One fact a line, as the coarse warning's: the refusal, the forecast, the remedies.
		return f, nil, cfg.Refuse(&cfg.PrivateScalingShare, fmt.Sprintf("the private estimate of %s would be poor, so it is not made: it would spend %s of the dataset's budget and locate little of the data.\n"+
			"Forecast: %s.\n%s",
			p.What(), p.Privacy(), f, strings.Join(remedies(cfg, raw, p, f), "\n")))
	case dataset.BoundsCoarse:
		// One fact a warning, each at most 300 characters but the schema lines to fill in.
		return f, append([]string{
			fmt.Sprintf("WARNING: the private estimate of %s will be coarse (made once, at the first start): %d records, %d columns at %s: each noisy count has sd %.3g records (%.2g%% of the rows).",
				p.What(), f.N, f.Columns, f.Privacy, f.NoiseSD, 100*f.NoiseShare),
			"Expect intervals up to about 4× a column's 1st–99th percentile range and up to a tenth of its rows clamped: the scaled features keep less signal, and the answers' range is wider than the target's.",
		}, remedies(cfg, raw, p, f)...), nil
	}
	return f, nil, nil
}

// remedies says how to do better than forecast f: public bounds in a schema (the lines
// to write) or a larger share of the budget, one sentence each.
func remedies(cfg Config, raw *dataset.Raw, p curator.ScalingPlan, f dataset.BoundsForecast) []string {
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
	msg := fmt.Sprintf("Public bounds cost no privacy and fit better: give each column's public range (what its values can be, not read from the data) in %s, these lines:\n  column,lower,upper\n  %s",
		where, strings.Join(lines, "\n  "))
	var need []string
	if f.Quality == dataset.BoundsPoor {
		need = append(need, spend(cfg, "a coarse", f.EpsilonFor(dataset.BoundsCoarse)))
	}
	need = append(need, spend(cfg, "a good", f.EpsilonFor(dataset.BoundsGood)))
	return []string{msg, "Or spend more on the estimate: " + strings.Join(need, "; ") + "."}
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
		file := cmp.Or(sc.Schema.File, "(built in code)")
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
