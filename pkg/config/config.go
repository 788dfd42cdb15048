// Package config is the curator daemon's configuration: the settings, their defaults
// (NewConfig), their declaration (Config.Bind: name, help, range) and the one validation
// that resolves them (Config.Resolve), with the warnings an operator must read before
// serving them. cmd/curator registers its flags from Bind; pkg/server starts a curator
// from a resolved Config.
package config

import (
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/learner"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/rpc"
	"github.com/privbo/privbo/pkg/storage"
	"github.com/privbo/privbo/pkg/transport"
	"github.com/privbo/privbo/pkg/tuning"
)

// Config is everything the curator daemon needs. Zero values take the documented
// defaults. Each setting's name (its flag, configuration-file key and environment
// variable), help and range are declared once, in Bind; the refusals and warnings name
// a setting by its flag (Config.Flag).
type Config struct {
	// Listen is the TCP address to serve on, e.g. "127.0.0.1:7070" or "127.0.0.1:0".
	Listen string
	// DataPath is the CSV or .parquet file; Data says how to read and scale it.
	// A zero Data.Scaling.Mode means dataset.ScalePrivate here (bounds estimated with
	// differential privacy at first start, see PrivateScalingShare), not the dataset
	// package's standardise-nonprivate: the data-dependent modes give no guarantee and
	// must be named explicitly (Warnings).
	DataPath string
	Data     dataset.Options
	// PrivateScalingShare is the fraction S of the per-identity budget ε spent, once,
	// on estimating privately what no public source gives: the feature bounds of
	// scaling mode private (Data.Scaling), and the target's range of private outputs
	// when neither Output.Lower/Upper nor the schema's target line gives it (with a
	// public scaling only if EstimateTargetRange). The estimate is one release
	// (dataset.EstimateBoundsWith) of ε_s = S × Budget.Epsilon and δ_s = S × the smaller
	// of Budget.Delta and DatasetBudget.Delta (pure ε-DP when that is 0), under record
	// replacement; it is charged to the ledger under the curator's identity, spends the
	// dataset cap shared by all identities, and is reused at every restart with the same
	// settings. Before charging it, server.Start forecasts its quality from public figures
	// (dataset.ForecastBounds): coarse is logged as a warning, poor refused. Default
	// DefaultPrivateScalingShare, and it must lie in (0, 1).
	PrivateScalingShare float64
	// EstimateTargetRange lets the curator estimate the target's range privately (with
	// PrivateScalingShare of the budget) when the answers are private and the operator
	// gave a public scaling (a schema, fixed or none) but no range of the target: no
	// schema line for it and no Output.Lower/Upper. Without it such a configuration is
	// refused at start, naming the line to add. With the default private scaling (no
	// schema at all) the target's range is estimated with the feature bounds anyway.
	EstimateTargetRange bool
	// DatasetID is the operator-declared, stable identity of the dataset (required):
	// the ledger keeps every budget under it, so renaming or moving the file must not
	// give the same records a fresh budget. Keep it for as long as the records are
	// served; an existing deployment keeps its ledger by declaring the name its ledger
	// already uses (the file name without extension, or the former --name).
	DatasetID string
	// DatasetName is the display name shown to modelers; default: the file name
	// without extension.
	DatasetName string
	// StateDir keeps what must survive a restart (ledger, released matrices).
	StateDir string
	// Ledger selects the budget store.
	Ledger LedgerConfig
	// Budget is the per-identity limit; DatasetBudget caps all identities together
	// (default: equal to Budget). A δ of zero is allowed but refuses every release
	// that needs δ > 0, among them the default Gaussian projection (Warnings);
	// cmd/curator's --budget-delta defaults to DefaultBudgetDelta. server.Start records
	// both limits in the ledger (ledger.Ledger.RecordLimits).
	Budget        ledger.Cost
	DatasetBudget ledger.Cost
	// PatientBudget caps each identity's whole-patient total — every charge's (ε, δ)
	// converted to the replacement of one patient's record, added over every relation
	// (ledger.PatientLimits) — and PatientDatasetBudget that of all identities
	// together, the curator's own estimates included (each part defaults to
	// PatientBudget's; its δ to Budget.Delta). A zero ε is no cap, the default: at the
	// default unit a projection at ε = 1 costs a whole patient ε ≈ 134, so any cap a
	// hospital would sign (ε ≤ 10) refuses every default study, and a cap loose enough
	// to admit them would read as a guarantee it is not (docs/PRIVACY.md, "What one
	// patient can lose"). server.Start states what a whole patient can lose either way. A cap
	// refuses every release with no finite whole-patient figure, so it cannot be set
	// with exact answers, the lifted mechanism or a data-dependent scaling.
	PatientBudget        ledger.Cost
	PatientDatasetBudget ledger.Cost
	// ChangeLimits lets server.Start make this configuration's limits the limits in force
	// when they differ from those the ledger records: every curator sharing the
	// ledger enforces the limits in force, read in each charge's own transaction, so
	// a start with other limits is refused unless it changes them explicitly. The
	// change is kept in the ledger's history (curator ledger lists it).
	ChangeLimits bool
	// NoiseSD, Output, MaxQueryIndices, MaxProjectionDim: see curator.Config. Output
	// defaults to the Laplace mechanism with ε = curator.DefaultOutputEpsilon. Its range
	// [Lower, Upper] is, in this order: the one given here, the schema's line for the
	// target, or a private estimate (PrivateScalingShare); server.Start fills it in. Mechanism
	// "none" (exact answers) must be chosen explicitly and is logged as a warning
	// (Warnings).
	NoiseSD float64
	Output  curator.OutputPrivacy
	// DefaultStudy is the projection's (ε, δ) of the default study, what the curator
	// quotes to a modeler that names none (curator.Config.StudyEpsilon, StudyDelta):
	// zero parts take curator.DefaultStudyEpsilon and a δ share sized so that the δ
	// budgets hold as many default studies as the ε budgets (curator.Curator.DefaultStudy).
	// server.Start states how many default studies the budgets hold.
	DefaultStudy ledger.Cost
	// ExactAnswersMaxRows caps the distinct rows of the dataset answered exactly, to all
	// identities together (output privacy "none"); default DefaultExactAnswersMaxRows.
	// Exact answers also go only to identities that hold a projection release.
	ExactAnswersMaxRows int
	// AllowExactProgramAnswers accepts output privacy "none" with program evaluation,
	// whose answers are exact functions of the records' features; refused otherwise.
	AllowExactProgramAnswers bool
	Evaluation               curator.Evaluation
	MaxQueryIndices          int
	MaxProjectionDim         int
	// ProjectionMechanism: see curator.Config (default: the Gaussian mechanism).
	ProjectionMechanism string
	// MemoryLimit is the memory, in bytes, the curator process may use: default the
	// memory limit of its cgroup (a container's limit: cgroup v2 memory.max, v1
	// memory.limit_in_bytes) or else the machine's physical memory (memory.Available).
	// ReleaseMemory's default is derived from it, and cmd/curator sets the Go runtime's
	// soft memory limit to RuntimeMemoryShare of it unless GOMEMLIMIT is set
	// (RuntimeMemoryLimit).
	MemoryLimit int64
	// ReleaseMemory is the memory, in bytes, the curator's releases may hold together
	// while they are computed, stored and streamed — a budget like ε (curator.Config.Memory):
	// a new release is admitted only when the memory it needs, known before it is
	// computed from n, d, r, the mechanism and the store, fits beside the releases in
	// progress, and waits its turn otherwise (for as long as its request's deadline
	// allows); one that needs more than ReleaseMemory is refused at once,
	// RESOURCE_EXHAUSTED with reason MEMORY_LIMIT and the largest r that fits. Default:
	// ReleaseMemoryShare of MemoryLimit less the dataset's memory and RuntimeReserve
	// (DefaultReleaseMemory), at least curator.MinMemory. Large releases are computed a
	// window of rows at a time, so it rarely refuses.
	ReleaseMemory int64
	// StoredBytesPerIdentity and StoredBytesPerDataset bound the bytes the releases
	// keep for replay (a projection's n×r matrix), per identity and for the dataset
	// (curator.Config.Stored): a new release that would pass either is refused when it
	// is reserved. Default (0): sized from the table (curator.DefaultStoredQuota).
	StoredBytesPerIdentity, StoredBytesPerDataset int64
	// ShutdownTimeout bounds the graceful drain; default 10 s.
	ShutdownTimeout time.Duration
	// TLS serves TLS when CertFile is set; ClientCAFile turns on mutual TLS.
	TLS TLSConfig
	// TokensFile lists accepted bearer tokens as "IDENTITY SHA256HEX" lines.
	TokensFile string
	// AllowPlaintext permits serving without TLS on a non-loopback address (only
	// behind a TLS-terminating proxy).
	AllowPlaintext bool
	// TrustIdentityHeaderFromNetwork permits serving on a non-loopback address
	// without authentication — neither client certificates (TLS.ClientCAFile) nor
	// bearer tokens (TokensFile) — where the identity charged is the one each caller
	// names in its privbo-identity header, so that anyone who can reach Listen can
	// spend any identity's budget. Only where something in front of the curator
	// authenticates every caller and sets the header; refused otherwise, and warned
	// about when set (Warnings).
	TrustIdentityHeaderFromNetwork bool
	// Limits bounds each identity's request rate and concurrency.
	Limits transport.Limits
	// Streams bounds each identity's release streams: how many it may have open at
	// once, and how long one may wait for its client to read; zero fields take
	// rpc.DefaultStreamsPerIdentity and rpc.DefaultStreamIdleTimeout.
	Streams rpc.Streams
	// AuthFailures throttles each peer's failed authentications (before they are
	// authenticated, so Limits cannot) and samples their log lines; zero fields take
	// transport's defaults (DefaultAuthFailureRate, DefaultAuthFailureBurst,
	// DefaultAuthFailuresLogged per DefaultAuthFailureLogInterval,
	// DefaultAuthFailurePeers); a negative Rate turns the throttle off.
	AuthFailures transport.AuthFailureLimits
	// MaxHeaderBytes bounds a request's headers, read before authentication;
	// default transport.DefaultMaxHeaderListBytes (16 KiB).
	MaxHeaderBytes int
	// MetricsListen, when set, serves Prometheus metrics at /metrics on this address,
	// and plain-HTTP probes at /healthz (the gRPC health status) and /livez.
	MetricsListen string
	// ConsoleListen, when set, serves the privacy officer's read-only console (package
	// console) at / on this address: plain HTTP on a loopback address; elsewhere only
	// over TLS (TLS.CertFile, TLS.KeyFile) to a client certificate of TLS.ClientCAFile
	// whose identity is in ConsoleOperators, and a start is refused without them.
	ConsoleListen string
	// ConsoleOperators are the identities (client certificates' common names) the
	// console serves; with them the console requires TLS even on loopback.
	ConsoleOperators []string
	// Jobs enables private tuning jobs on the dataset (its target must be a class label:
	// 0/1, or 0 … K−1 with K public, see tuning.Config.Classes).
	Jobs JobsConfig
	// Logger; default a no-op logger.
	Logger *zap.Logger
	// Curator hooks for simulations and tests (see curator.Config).
	SimulationHooks func(*curator.Config)
}

// JobsConfig configures private tuning jobs (see package tuning).
type JobsConfig struct {
	Enabled bool
	// ValidationFraction and SplitSeed fix the sensitive validation part.
	ValidationFraction float64
	SplitSeed          uint64
	Evaluators         []tuning.Evaluator
	// Kusner holds the operator's assumptions for Kusner jobs (see tuning.KusnerAssumptions).
	Kusner tuning.KusnerAssumptions
	// MaxGrid and MaxIterations bound a job's size; MaxRunning the jobs run at once.
	MaxGrid       int
	MaxIterations int
	MaxRunning    int
	// BoundsEpsilon is the ε each DP-HyPO job with the built-in learner spends on
	// estimating its feature bounds privately (dataset.EstimateBounds), added to the
	// job's cost, when the dataset's schema does not give public bounds for every
	// feature. 0 refuses such jobs instead.
	BoundsEpsilon float64
	// Preprocessing of the built-in learner (tuning.Preprocessing); empty is the
	// default, public or privately estimated bounds.
	Preprocessing tuning.Preprocessing
	// Classes is the public number of classes of the target's labels 0 … K−1
	// (tuning.Config.Classes); 0 takes it from the schema, or 2.
	Classes int
	// TrainingConsented is the operator's declaration that every patient of the jobs'
	// training part consented to their records being used without a privacy
	// guarantee (or that the part is public): Kusner jobs, which train on it with no
	// mechanism, then have a whole-patient figure, the validation part's (ε, δ), for
	// the patients it does protect. Without it their whole-patient figure is not
	// bounded, and a whole-patient cap refuses them (tuning.Config.TrainingConsented).
	TrainingConsented bool
	// Lease is, with a PostgreSQL ledger (whose schema then holds the jobs, shared by
	// every replica), how long a replica's claim on a job lasts unless renewed: a
	// replica renews its jobs' leases every Lease/3 and takes over, as often, the jobs
	// whose lease expired, so a job whose replica died runs again on another within
	// about 4/3·Lease. Default jobs.DefaultLease (15 s). Unused with SQLite, where
	// jobs.db in StateDir holds the jobs of this curator alone.
	Lease time.Duration
}

// Curator is the curator's configuration of cfg (after Resolve) over ds, charging
// led; the caller adds what it opens or parses (Projection, Releases, Memory).
func (cfg Config) Curator(ds *dataset.Dataset, led curator.Ledger) curator.Config {
	return curator.Config{
		Dataset: ds, DatasetID: cfg.DatasetID, Ledger: led, StateDir: cfg.StateDir, NoiseSD: cfg.NoiseSD, Output: cfg.Output, Evaluation: cfg.Evaluation,
		MaxQueryIndices: cfg.MaxQueryIndices, MaxProjectionDim: cfg.MaxProjectionDim, Logger: cfg.Logger, ProjectionMechanism: cfg.ProjectionMechanism,
		StudyEpsilon: cfg.DefaultStudy.Epsilon, StudyDelta: cfg.DefaultStudy.Delta, AllowExactProgramAnswers: cfg.AllowExactProgramAnswers,
		ExactAnswers: curator.ExactAnswerLimits{MaxRows: cfg.ExactAnswersMaxRows, RequireProjection: true},
		Stored:       ledger.StoredQuota{PerIdentity: cfg.StoredBytesPerIdentity, Dataset: cfg.StoredBytesPerDataset},
	}
}

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

// TLSConfig names the curator's TLS material.
type TLSConfig struct {
	CertFile string
	KeyFile  string
	// ClientCAFile: verify client certificates against this CA (mutual TLS).
	ClientCAFile string
}

// Security is what secures the listener, as Resolve checked it against Listen.
func (cfg Config) Security() transport.ServerSecurity {
	return transport.ServerSecurity{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, ClientCAFile: cfg.TLS.ClientCAFile, TokensFile: cfg.TokensFile}
}

// LedgerConfig selects the ledger store: storage's own options (storage.Ledger).
type LedgerConfig = storage.Ledger

// DefaultBudgetDelta is the default per-identity δ budget of cmd/curator
// (--budget-delta): small against 1/n for datasets of up to about 10⁵ records,
// the usual requirement δ ≪ 1/n (Dwork and Roth 2014, §2.3), and nonzero, so
// that the default Gaussian projection can be released at all.
const DefaultBudgetDelta = 1e-6

// DefaultExactAnswersMaxRows is the default cap on distinct rows of the dataset answered
// exactly, to all identities together (Config.ExactAnswersMaxRows).
const DefaultExactAnswersMaxRows = 200

// DefaultPrivateScalingShare is the default Config.PrivateScalingShare: the fraction
// of the per-identity budget ε spent, once, on the private scaling estimate.
const DefaultPrivateScalingShare = 0.1

// DefaultShutdownTimeout bounds the graceful drain when Config.ShutdownTimeout is unset.
const DefaultShutdownTimeout = 10 * time.Second

// NewConfig returns a Config holding the default of every setting that has one, as
// the daemon's flags state them (cmd/curator takes its flag defaults from it, and a
// test there keeps the two equal). server.Start applies the same defaults to the zero fields
// of a Config built otherwise; settings whose default depends on others (the dataset
// cap, the scaling, the release memory) stay zero here and are resolved by server.Start.
func NewConfig() Config {
	return Config{
		Listen:              "127.0.0.1:7070",
		Ledger:              LedgerConfig{Kind: storage.DefaultKind, Schema: pgledger.DefaultSchema, CallTimeout: pgledger.DefaultCallTimeout},
		Budget:              ledger.Cost{Delta: DefaultBudgetDelta}, // ε has no default: the operator states it
		PrivateScalingShare: DefaultPrivateScalingShare,
		Evaluation:          curator.Evaluation{Mode: curator.EvaluateColumn, Timeout: curator.DefaultEvaluationTimeout},
		Output:              curator.OutputPrivacy{Mechanism: answer.Default, Epsilon: curator.DefaultOutputEpsilon},
		ExactAnswersMaxRows: DefaultExactAnswersMaxRows,
		MaxQueryIndices:     curator.DefaultMaxQueryIndices,
		MaxProjectionDim:    curator.DefaultMaxProjectionDim,
		ProjectionMechanism: projection.MechanismGaussian,
		ShutdownTimeout:     DefaultShutdownTimeout,
		AuthFailures: transport.AuthFailureLimits{Rate: transport.DefaultAuthFailureRate, Burst: transport.DefaultAuthFailureBurst,
			Logged: transport.DefaultAuthFailuresLogged, LogInterval: transport.DefaultAuthFailureLogInterval, MaxPeers: transport.DefaultAuthFailurePeers},
		MaxHeaderBytes: transport.DefaultMaxHeaderListBytes,
		Streams:        rpc.Streams{PerIdentity: rpc.DefaultStreamsPerIdentity, IdleTimeout: rpc.DefaultStreamIdleTimeout},
		Jobs: JobsConfig{ValidationFraction: 0.3, SplitSeed: 1, MaxGrid: 5000, MaxIterations: 500, MaxRunning: 1, Lease: jobs.DefaultLease,
			Kusner: tuning.KusnerAssumptions{NoiseVariance: 0.01}},
	}
}
