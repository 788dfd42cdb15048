// Package server is the curator daemon as a library: it loads the dataset, opens the
// privacy ledger, builds the curator and serves it over gRPC with the health and
// reflection services. cmd/curator and the integration tests start it the same way:
//
//	srv, err := server.Start(ctx, cfg)
//	defer srv.Shutdown(context.Background())
package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/learner"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/transport"
	"github.com/privbo/privbo/pkg/tuning"
	"github.com/privbo/privbo/pkg/worth"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// Config is everything the curator daemon needs. Zero values take the documented
// defaults.
//
// The flag tag of a field is the name of the setting on cmd/curator's command line
// (--listen), in its configuration file (listen = ...) and in its environment
// (PRIVBO_CURATOR_LISTEN): `flag:"listen"`. A field of another package's struct type
// names the flags of the fields below it instead, since one such type serves several
// settings (ledger.Cost is Budget, DatasetBudget, ...):
//
//	Budget ledger.Cost `flag:"Epsilon=budget-epsilon,Delta=budget-delta"`
//
// The fields of this package's struct types (TLSConfig, LedgerConfig, JobsConfig)
// carry their own tags. A field no flag sets has no tag. The server itself
// never writes the flags: its errors and warnings name a setting Config.<path>
// ("Config.Output.Epsilon", and FieldError.Field the path), which a front end turns
// into its own name with FlagName.
type Config struct {
	// Listen is the TCP address to serve on, e.g. "127.0.0.1:7070" or "127.0.0.1:0".
	Listen string `flag:"listen"`
	// DataPath is the CSV file; Data says how to read and scale it.
	// A zero Data.Scaling.Mode means dataset.ScalePrivate here (bounds estimated with
	// differential privacy at first start, see PrivateScalingShare), not the dataset
	// package's standardise-nonprivate: the data-dependent modes give no guarantee and
	// must be named explicitly (Warnings).
	DataPath string          `flag:"data"`
	Data     dataset.Options `flag:"Target=target,Features=features,Exclude=exclude,MissingMarkers=missing-markers,Scaling.Mode=scaling,Scaling.Schema=schema"`
	// PrivateScalingShare is the fraction S of the per-identity budget ε spent, once,
	// on estimating privately what no public source gives: the feature bounds of
	// scaling mode private (Data.Scaling), and the target's range of private outputs
	// when neither Output.Lower/Upper nor the schema's target line gives it (with a
	// public scaling only if EstimateTargetRange). The estimate is one release
	// (dataset.EstimateBoundsWith) of ε_s = S × Budget.Epsilon and δ_s = S × the smaller
	// of Budget.Delta and DatasetBudget.Delta (pure ε-DP when that is 0), under record
	// replacement; it is charged to the ledger under the curator's identity, spends the
	// dataset cap shared by all identities, and is reused at every restart with the same
	// settings. Before charging it, Start forecasts its quality from public figures
	// (dataset.ForecastBounds): coarse is logged as a warning, poor refused. Default
	// DefaultPrivateScalingShare, and it must lie in (0, 1).
	PrivateScalingShare float64 `flag:"private-scaling-share"`
	// EstimateTargetRange lets the curator estimate the target's range privately (with
	// PrivateScalingShare of the budget) when the answers are private and the operator
	// gave a public scaling (a schema, fixed or none) but no range of the target: no
	// schema line for it and no Output.Lower/Upper. Without it such a configuration is
	// refused at start, naming the line to add. With the default private scaling (no
	// schema at all) the target's range is estimated with the feature bounds anyway.
	EstimateTargetRange bool `flag:"estimate-target-range"`
	// DatasetID is the operator-declared, stable identity of the dataset (required):
	// the ledger keeps every budget under it, so renaming or moving the file must not
	// give the same records a fresh budget. Keep it for as long as the records are
	// served; an existing deployment keeps its ledger by declaring the name its ledger
	// already uses (the file name without extension, or the former --name).
	DatasetID string `flag:"dataset-id"`
	// DatasetName is the display name shown to modelers; default: the file name
	// without extension.
	DatasetName string `flag:"name"`
	// StateDir keeps what must survive a restart (ledger, released matrices).
	StateDir string `flag:"state"`
	// Ledger selects the budget store.
	Ledger LedgerConfig
	// Budget is the per-identity limit; DatasetBudget caps all identities together
	// (default: equal to Budget). A δ of zero is allowed but refuses every release
	// that needs δ > 0, among them the default Gaussian projection (Warnings);
	// cmd/curator's --budget-delta defaults to DefaultBudgetDelta. Start records
	// both limits in the ledger (ledger.Ledger.RecordLimits).
	Budget        ledger.Cost `flag:"Epsilon=budget-epsilon,Delta=budget-delta"`
	DatasetBudget ledger.Cost `flag:"Epsilon=dataset-budget-epsilon,Delta=dataset-budget-delta"`
	// PatientBudget caps each identity's whole-patient total — every charge's (ε, δ)
	// converted to the replacement of one patient's record, added over every relation
	// (ledger.PatientLimits) — and PatientDatasetBudget that of all identities
	// together, the curator's own estimates included (each part defaults to
	// PatientBudget's; its δ to Budget.Delta). A zero ε is no cap, the default: at the
	// default unit a projection at ε = 1 costs a whole patient ε ≈ 134, so any cap a
	// hospital would sign (ε ≤ 10) refuses every default study, and a cap loose enough
	// to admit them would read as a guarantee it is not (docs/PRIVACY.md, "What one
	// patient can lose"). Start states what a whole patient can lose either way. A cap
	// refuses every release with no finite whole-patient figure, so it cannot be set
	// with exact answers, the lifted mechanism or a data-dependent scaling.
	PatientBudget        ledger.Cost `flag:"Epsilon=patient-budget-epsilon,Delta=patient-budget-delta"`
	PatientDatasetBudget ledger.Cost `flag:"Epsilon=patient-dataset-budget-epsilon,Delta=patient-dataset-budget-delta"`
	// ChangeLimits lets Start make this configuration's limits the limits in force
	// when they differ from those the ledger records: every curator sharing the
	// ledger enforces the limits in force, read in each charge's own transaction, so
	// a start with other limits is refused unless it changes them explicitly. The
	// change is kept in the ledger's history (curator ledger lists it).
	ChangeLimits bool `flag:"change-limits"`
	// NoiseSD, Output, MaxQueryIndices, MaxProjectionDim: see curator.Config. Output
	// defaults to the Laplace mechanism with ε = curator.DefaultOutputEpsilon. Its range
	// [Lower, Upper] is, in this order: the one given here, the schema's line for the
	// target, or a private estimate (PrivateScalingShare); Start fills it in. Mechanism
	// "none" (exact answers) must be chosen explicitly and is logged as a warning
	// (Warnings).
	NoiseSD float64               `flag:"noise-sd"`
	Output  curator.OutputPrivacy `flag:"Mechanism=output-privacy,Epsilon=output-epsilon,Delta=output-delta,Lower=output-lower,Upper=output-upper"`
	// DefaultStudy is the projection's (ε, δ) of the default study, what the curator
	// quotes to a modeler that names none (curator.Config.StudyEpsilon, StudyDelta):
	// zero parts take curator.DefaultStudyEpsilon and a δ share sized so that the δ
	// budgets hold as many default studies as the ε budgets (curator.Curator.DefaultStudy).
	// Start states how many default studies the budgets hold.
	DefaultStudy ledger.Cost `flag:"Epsilon=study-epsilon,Delta=study-delta"`
	// ExactAnswersMaxRows caps the distinct rows of the dataset answered exactly, to all
	// identities together (output privacy "none"); default DefaultExactAnswersMaxRows.
	// Exact answers also go only to identities that hold a projection release.
	ExactAnswersMaxRows int `flag:"exact-answers-max-rows"`
	// AllowExactProgramAnswers accepts output privacy "none" with program evaluation,
	// whose answers are exact functions of the records' features; refused otherwise.
	AllowExactProgramAnswers bool               `flag:"allow-exact-program-answers"`
	Evaluation               curator.Evaluation `flag:"Mode=evaluate,Command=evaluate-program,Timeout=evaluate-timeout"`
	MaxQueryIndices          int                `flag:"max-query-indices"`
	MaxProjectionDim         int                `flag:"max-projection-dim"`
	// ProjectionMechanism: see curator.Config (default: the Gaussian mechanism).
	ProjectionMechanism string `flag:"projection-mechanism"`
	// MemoryLimit is the memory, in bytes, the curator process may use: default the
	// memory limit of its cgroup (a container's limit: cgroup v2 memory.max, v1
	// memory.limit_in_bytes) or else the machine's physical memory (memory.Available).
	// ReleaseMemory's default is derived from it, and cmd/curator sets the Go runtime's
	// soft memory limit to RuntimeMemoryShare of it unless GOMEMLIMIT is set
	// (RuntimeMemoryLimit).
	MemoryLimit int64 `flag:"memory-limit"`
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
	ReleaseMemory int64 `flag:"release-memory"`
	// ShutdownTimeout bounds the graceful drain; default 10 s.
	ShutdownTimeout time.Duration `flag:"shutdown-timeout"`
	// TLS serves TLS when CertFile is set; ClientCAFile turns on mutual TLS.
	TLS TLSConfig
	// TokensFile lists accepted bearer tokens as "IDENTITY SHA256HEX" lines.
	TokensFile string `flag:"tokens"`
	// AllowPlaintext permits serving without TLS on a non-loopback address (only
	// behind a TLS-terminating proxy).
	AllowPlaintext bool `flag:"allow-plaintext"`
	// TrustIdentityHeaderFromNetwork permits serving on a non-loopback address
	// without authentication — neither client certificates (TLS.ClientCAFile) nor
	// bearer tokens (TokensFile) — where the identity charged is the one each caller
	// names in its privbo-identity header, so that anyone who can reach Listen can
	// spend any identity's budget. Only where something in front of the curator
	// authenticates every caller and sets the header; refused otherwise, and warned
	// about when set (Warnings).
	TrustIdentityHeaderFromNetwork bool `flag:"trust-identity-header-from-network"`
	// Limits bounds each identity's request rate and concurrency.
	Limits transport.Limits `flag:"Rate=rate-limit,Burst=rate-burst,Concurrent=max-in-flight"`
	// AuthFailures throttles each peer's failed authentications (before they are
	// authenticated, so Limits cannot) and samples their log lines; zero fields take
	// transport's defaults (DefaultAuthFailureRate, DefaultAuthFailureBurst,
	// DefaultAuthFailuresLogged per DefaultAuthFailureLogInterval,
	// DefaultAuthFailurePeers); a negative Rate turns the throttle off.
	AuthFailures transport.AuthFailureLimits `flag:"Rate=auth-failure-rate,Burst=auth-failure-burst,Logged=auth-failures-logged,LogInterval=auth-failure-log-interval,MaxPeers=auth-failure-peers"`
	// MaxHeaderBytes bounds a request's headers, read before authentication;
	// default transport.DefaultMaxHeaderListBytes (16 KiB).
	MaxHeaderBytes int `flag:"max-header-bytes"`
	// MetricsListen, when set, serves Prometheus metrics at /metrics on this address,
	// and plain-HTTP probes at /healthz (the gRPC health status) and /livez.
	MetricsListen string `flag:"metrics-listen"`
	// Jobs enables private tuning jobs on the dataset (its target must be a class label:
	// 0/1, or 0 … K−1 with K public, see tuning.Config.Classes).
	Jobs JobsConfig
	// Logger; default a no-op logger.
	Logger *zap.Logger
	// Warn, if set, also receives as plain text the warnings about the data that
	// Start logs after loading it, before anything is charged (today the forecast of
	// a coarse private scaling estimate, with the schema lines that would replace
	// it), for a command line to print; Warnings(cfg) gives the others beforehand.
	Warn func(msg string)
	// Curator hooks for simulations and tests (see curator.Config).
	SimulationHooks func(*curator.Config)

	// listener, when set (tests in this package), is served instead of listening on
	// Listen; Listen still decides what the security checks treat as loopback.
	listener net.Listener
}

// JobsConfig configures private tuning jobs (see package tuning).
type JobsConfig struct {
	Enabled bool `flag:"jobs"`
	// ValidationFraction and SplitSeed fix the sensitive validation part.
	ValidationFraction float64            `flag:"job-validation-fraction"`
	SplitSeed          uint64             `flag:"job-split-seed"`
	Evaluators         []tuning.Evaluator `flag:"evaluators"`
	// Kusner holds the operator's assumptions for Kusner jobs (see tuning.KusnerAssumptions).
	Kusner tuning.KusnerAssumptions `flag:"K1=kusner-k1,NoiseVariance=kusner-noise-variance,GammaT=kusner-gamma-t,A=kusner-a,Tau=kusner-tau"`
	// MaxGrid and MaxIterations bound a job's size; MaxRunning the jobs run at once.
	MaxGrid       int `flag:"max-job-grid"`
	MaxIterations int `flag:"max-job-iterations"`
	MaxRunning    int `flag:"max-running-jobs"`
	// BoundsEpsilon is the ε each DP-HyPO job with the built-in learner spends on
	// estimating its feature bounds privately (dataset.EstimateBounds), added to the
	// job's cost, when the dataset's schema does not give public bounds for every
	// feature. 0 refuses such jobs instead.
	BoundsEpsilon float64 `flag:"job-bounds-epsilon"`
	// Preprocessing of the built-in learner (tuning.Preprocessing); empty is the
	// default, public or privately estimated bounds.
	Preprocessing tuning.Preprocessing `flag:"job-preprocessing"`
	// Classes is the public number of classes of the target's labels 0 … K−1
	// (tuning.Config.Classes); 0 takes it from the schema, or 2.
	Classes int `flag:"job-classes"`
	// TrainingConsented is the operator's declaration that every patient of the jobs'
	// training part consented to their records being used without a privacy
	// guarantee (or that the part is public): Kusner jobs, which train on it with no
	// mechanism, then have a whole-patient figure, the validation part's (ε, δ), for
	// the patients it does protect. Without it their whole-patient figure is not
	// bounded, and a whole-patient cap refuses them (tuning.Config.TrainingConsented).
	TrainingConsented bool `flag:"job-training-consented"`
	// Lease is, with a PostgreSQL ledger (whose schema then holds the jobs, shared by
	// every replica), how long a replica's claim on a job lasts unless renewed: a
	// replica renews its jobs' leases every Lease/3 and takes over, as often, the jobs
	// whose lease expired, so a job whose replica died runs again on another within
	// about 4/3·Lease. Default jobs.DefaultLease (15 s). Unused with SQLite, where
	// jobs.db in StateDir holds the jobs of this curator alone.
	Lease time.Duration `flag:"job-lease"`
}

// TLSConfig names the curator's TLS material.
type TLSConfig struct {
	CertFile string `flag:"tls-cert"`
	KeyFile  string `flag:"tls-key"`
	// ClientCAFile: verify client certificates against this CA (mutual TLS).
	ClientCAFile string `flag:"client-ca"`
}

// LedgerConfig selects the ledger store.
type LedgerConfig struct {
	// Kind is "sqlite" (default; file StateDir/ledger.db) or "postgres".
	Kind string `flag:"ledger"`
	// DSN of PostgreSQL, for Kind "postgres".
	DSN string `flag:"ledger-dsn"`
	// Schema of the PostgreSQL tables; default "privbo".
	Schema string `flag:"ledger-schema"`
	// CallTimeout bounds each call on a PostgreSQL ledger (a charge, a balance, a
	// read of a release's chunk), connecting included: a call the database does not
	// answer within it fails at once, UNAVAILABLE to the client, instead of waiting
	// for the client's deadline. Default pgledger.DefaultCallTimeout (5 s); it must
	// exceed the slowest charge under load (a charge waits for the others on its
	// dataset). See pgledger.Options.CallTimeout.
	CallTimeout time.Duration `flag:"ledger-timeout"`
}

// DefaultLedgerCallTimeout is LedgerConfig.CallTimeout's default.
const DefaultLedgerCallTimeout = pgledger.DefaultCallTimeout

// pgOptions are the options of the PostgreSQL ledger and blob store of l.
func (l LedgerConfig) pgOptions() pgledger.Options {
	return pgledger.Options{Schema: l.Schema, CallTimeout: l.CallTimeout}
}

// DefaultBudgetDelta is the default per-identity δ budget of cmd/curator
// (--budget-delta): small against 1/n for datasets of up to about 10⁵ records,
// the usual requirement δ ≪ 1/n (Dwork and Roth 2014, §2.3), and nonzero, so
// that the default Gaussian projection can be released at all.
const DefaultBudgetDelta = 1e-6

// DefaultExactAnswersMaxRows is the default cap on distinct rows of the dataset answered
// exactly, to all identities together (Config.ExactAnswersMaxRows).
const DefaultExactAnswersMaxRows = 200

// Shares of Config.MemoryLimit. The Go runtime's soft limit (RuntimeMemoryShare) makes
// the garbage collector work harder as the heap nears it, leaving the rest to what the
// runtime does not manage (SQLite's pages, thread stacks, the binary). Releases, the
// dataset and the runtime's own use together stay within ReleaseMemoryShare, below the
// soft limit, so that collecting the garbage of finished releases keeps pace without
// the collector running all the time.
const (
	RuntimeMemoryShare = 0.9
	ReleaseMemoryShare = 0.75
	// RuntimeReserve is the memory counted, besides the dataset, for everything but
	// releases: the Go runtime, gRPC's buffers, the ledger's connections and caches.
	RuntimeReserve = 64 << 20
)

// DefaultReleaseMemory is Config.ReleaseMemory's default for a process that may use
// limit bytes and holds a dataset of datasetBytes: ReleaseMemoryShare of the limit less
// the dataset and RuntimeReserve, and at least curator.MinMemory.
func DefaultReleaseMemory(limit, datasetBytes int64) int64 {
	return max(int64(float64(limit)*ReleaseMemoryShare)-datasetBytes-RuntimeReserve, curator.MinMemory)
}

// DatasetMemory is the memory a served dataset of n rows and d features holds: its
// scaled features, its raw features (kept to evaluate rows) and its target.
func DatasetMemory(n, d int) int64 { return 8 * (2*int64(n)*int64(d) + int64(n)) }

// MemoryLimit is cfg.MemoryLimit or, when it is 0, the memory available to the process
// (memory.Available), with where the figure comes from; 0 when it is not known.
func (cfg Config) memoryLimit() (int64, string) {
	if cfg.MemoryLimit > 0 {
		return cfg.MemoryLimit, "Config.MemoryLimit"
	}
	if l, ok := memory.Available(); ok {
		return l.Bytes, l.Source
	}
	return 0, ""
}

// RuntimeMemoryLimit is the Go runtime's soft memory limit for a curator serving cfg
// (runtime/debug.SetMemoryLimit): RuntimeMemoryShare of its memory limit, 0 when that is
// not known. cmd/curator sets it unless GOMEMLIMIT is set; it is the process's, so the
// library never sets it itself.
func RuntimeMemoryLimit(cfg Config) int64 {
	lim, _ := cfg.memoryLimit()
	return int64(float64(lim) * RuntimeMemoryShare)
}

// Server is a running curator daemon.
type Server struct {
	cfg    Config
	log    *zap.Logger
	grpc   *grpc.Server
	health *health.Server
	lis    net.Listener
	ledger *ledger.Ledger
	// releases keeps the released matrices (the curator's Config.Releases).
	releases Releases
	curator  *curator.Curator
	ds       *dataset.Dataset
	// memory is the releases' memory budget (curator.Config.Memory); nil: no limit.
	memory *memory.Budget
	jobs   *jobs.Manager
	// study is the default study and how many fit, as stated at start.
	study curator.StudyCapacity
	// limitsStart is what the start found of the limits in force (RecordLimits);
	// patient states what a whole patient can lose (PatientStatement).
	limitsStart ledger.LimitsStart
	patient     []string

	metrics    *prometheus.Registry
	metricsSrv *http.Server
	metricsLis net.Listener

	serveErr chan error
	stopOnce sync.Once
	stopped  chan struct{}
}

// Start loads everything, starts serving in the background and returns. It fails fast
// with an error a person can act on (bad file, bad column, unreachable ledger, port in
// use).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, mech, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	tlsCfg, auth, err := security(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: state directory: %w", err)
	}
	raw, err := dataset.LoadRaw(cfg.DataPath, cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if raw.MissingTarget > 0 {
		log.Info("rows with a missing target dropped: they are no candidates", zap.Int("rows", raw.MissingTarget))
	}
	for _, w := range Warnings(cfg) {
		log.Warn(w)
	}
	store, err := OpenLedger(ctx, cfg.Ledger, cfg.StateDir, cfg.limits())
	if err != nil {
		return nil, err
	}
	releases, err := OpenReleases(ctx, cfg.Ledger, cfg.StateDir)
	if err != nil {
		store.Close()
		return nil, err
	}
	closeStores := func() {
		store.Close()
		releases.Close()
	}
	// The limits in force are part of the ledger: every curator sharing it enforces
	// them (read in each charge's transaction), and 'curator ledger' reports against
	// them. A start with other limits changes them only when told to.
	limitsStart, err := store.RecordLimits(ctx, cfg.DatasetID, cfg.ChangeLimits)
	if err != nil {
		closeStores()
		if de := (*ledger.LimitsDifferError)(nil); errors.As(err, &de) {
			return nil, fieldError("ChangeLimits", fmt.Sprintf("the ledger's limits in force for dataset %s (%s, since %s) differ from this curator's (%s): "+
				"curators sharing a ledger enforce one set of limits, so start with the limits in force, or set Config.ChangeLimits to make these "+
				"the limits in force (every curator sharing the ledger enforces them from its next charge; the change is kept in the ledger's history)",
				cfg.DatasetID, ledger.LimitsText(de.InForce.Limits), de.InForce.Recorded.Format(time.RFC3339), ledger.LimitsText(de.Configured)))
		}
		return nil, fmt.Errorf("server: recording the budget limits in the ledger: %w", err)
	}
	if p := limitsStart.Previous; p != nil {
		log.Warn("WARNING: the ledger's limits in force changed with this start (Config.ChangeLimits); spending above a lowered limit is marked OVER LIMIT by curator ledger",
			zap.String("dataset_id", cfg.DatasetID), zap.String("previous", ledger.LimitsText(p.Limits)), zap.Time("previous_since", p.Recorded),
			zap.String("now", ledger.LimitsText(limitsStart.InForce.Limits)))
	}
	ds, err := scaleDataset(ctx, store, &cfg, raw)
	if err != nil {
		closeStores()
		return nil, err
	}
	log.Info("dataset loaded", zap.String("dataset_id", cfg.DatasetID), zap.String("dataset", ds.Name), zap.Int("rows", ds.N), zap.Int("features", ds.D),
		zap.Strings("feature_columns", ds.Features), zap.String("target", ds.Target), zap.String("scaling", string(ds.Scaling.Mode)),
		zap.String("protected_unit", ds.Unit))

	// The garbage of reading and scaling the file goes back to the system before serving:
	// what stays is the dataset.
	debug.FreeOSMemory()

	if releases.Moved != nil {
		adoptReleases(ctx, log, store, cfg.DatasetID, releases)
	}
	removeOrphans(ctx, log, store, cfg.Ledger, cfg.StateDir, releases)
	ccfg := cfg.curatorConfig(ds, store)
	ccfg.Projection = mech
	ccfg.Releases = releases.Store
	ccfg.Memory = releaseMemory(log, cfg, ds)
	if cfg.SimulationHooks != nil {
		cfg.SimulationHooks(&ccfg)
	}
	cur, err := curator.New(ccfg)
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("server: %w", err)
	}
	// Budget left reserved by releases this curator was computing when it stopped.
	if _, err := cur.RecoverReservations(ctx); err != nil {
		closeStores()
		return nil, fmt.Errorf("server: %w", err)
	}
	study, err := cur.StudyCapacity(ctx)
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("server: %w", err)
	}
	logStudy(log, study)
	var jm *jobs.Manager
	if cfg.Jobs.Enabled {
		if jm, err = startJobs(ctx, cfg, ds, store, cur.ReservationHold(), log); err != nil {
			closeStores()
			return nil, err
		}
	}
	lis := cfg.listener
	if lis == nil {
		if lis, err = net.Listen("tcp", cfg.Listen); err != nil {
			if jm != nil {
				jm.Close()
			}
			closeStores()
			return nil, fmt.Errorf("server: listen on %q: %w", cfg.Listen, err)
		}
	}
	s := &Server{cfg: cfg, log: log, lis: lis, ledger: store, releases: releases, curator: cur, ds: ds, memory: ccfg.Memory, jobs: jm, study: study,
		limitsStart: limitsStart, serveErr: make(chan error, 1), stopped: make(chan struct{})}
	s.patient = s.patientStatement()
	for _, line := range s.patient {
		log.Info(line)
	}
	failures := transport.NewAuthFailures(cfg.AuthFailures, log)
	tc := transport.ServerConfig{Logger: log, TLS: tlsCfg, Auth: auth, Limits: cfg.Limits, AuthFailures: failures, MaxHeaderListBytes: cfg.MaxHeaderBytes}
	var rpcMetrics *grpcprom.ServerMetrics
	if cfg.MetricsListen != "" {
		s.metrics, rpcMetrics = s.newMetrics(cfg.DatasetID)
		tc.Unary, tc.Stream = rpcMetrics.UnaryServerInterceptor(), rpcMetrics.StreamServerInterceptor()
	}
	// Stop waits for running handlers too, so nothing runs once the ledger is closed.
	s.grpc = grpc.NewServer(append(transport.ServerOptions(tc), grpc.WaitForHandlers(true))...)
	curatorv1.RegisterCuratorServiceServer(s.grpc, &handlers{cur: cur, jobs: jm, log: log, limits: store.Limits()})
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	if rpcMetrics != nil {
		// Every method's series exist from the start, at zero, so that rates and
		// alerts on them are defined before the first call.
		rpcMetrics.InitializeMetrics(s.grpc)
	}
	s.setServing(true)
	if cfg.MetricsListen != "" {
		if err := s.serveMetrics(); err != nil {
			lis.Close()
			if jm != nil {
				jm.Close()
			}
			closeStores()
			return nil, err
		}
	}
	go func() { s.serveErr <- s.grpc.Serve(lis) }()
	go s.watchReadiness()
	go s.flushAuthFailures(failures)
	log.Info("curator serving", zap.String("addr", lis.Addr().String()), zap.String("ledger", cfg.Ledger.kind()),
		zap.Float64("budget_epsilon", cfg.Budget.Epsilon), zap.Float64("budget_delta", cfg.Budget.Delta),
		zap.Float64("dataset_budget_epsilon", cfg.DatasetBudget.Epsilon), zap.Float64("dataset_budget_delta", cfg.DatasetBudget.Delta),
		zap.Bool("tls", tlsCfg != nil), zap.Bool("client_certificates", auth.ClientCerts), zap.Int("tokens", len(auth.Tokens)))
	if auth.TrustsIdentityHeader() {
		log.Warn("identities are taken from the "+transport.IdentityHeader+" header: every caller that reaches this address can name any identity and spend its budget",
			zap.String("addr", lis.Addr().String()), zap.Bool("loopback", transport.IsLoopback(cfg.Listen)))
	}
	return s, nil
}

// memoryPlan is how much memory a curator serving n rows of d features gives its
// releases (Config.ReleaseMemory, resolved) and where the figures come from.
type memoryPlan struct {
	limit   int64  // Config.MemoryLimit, resolved; 0: unknown
	source  string // where limit comes from
	data    int64  // the dataset's memory (DatasetMemory)
	release int64  // the releases' budget; 0: no limit (neither it nor limit known)
	how     string // how release was found
	floor   bool   // the default fell below curator.MinMemory and was raised to it
}

func planMemory(cfg Config, n, d int) memoryPlan {
	p := memoryPlan{data: DatasetMemory(n, d), release: cfg.ReleaseMemory, how: "Config.ReleaseMemory"}
	p.limit, p.source = cfg.memoryLimit()
	if p.release == 0 && p.limit > 0 {
		p.release = DefaultReleaseMemory(p.limit, p.data)
		p.how = fmt.Sprintf("%.0f%% of the memory limit less the dataset and %s for the runtime", 100*ReleaseMemoryShare, memory.MiB(RuntimeReserve))
		p.floor = p.release == curator.MinMemory
	}
	return p
}

// summary states the plan in a few words (check-config).
func (p memoryPlan) summary() string {
	if p.release == 0 {
		return "memory limit unknown, releases not limited"
	}
	if p.limit == 0 {
		return fmt.Sprintf("memory limit unknown, releases %s at once", memory.MiB(p.release))
	}
	return fmt.Sprintf("memory limit %s (%s), releases %s at once", memory.MiB(p.limit), p.source, memory.MiB(p.release))
}

// releaseMemory is the memory budget of the curator's releases (Config.ReleaseMemory),
// logged with how it was found; nil (no limit) when neither it nor the memory available
// is known.
func releaseMemory(log *zap.Logger, cfg Config, ds *dataset.Dataset) *memory.Budget {
	p := planMemory(cfg, ds.N, ds.D)
	if p.release == 0 {
		log.Warn("the memory available to the curator is unknown and Config.ReleaseMemory is not set: releases are admitted without a memory limit")
		return nil
	}
	if p.floor {
		log.Warn(fmt.Sprintf("WARNING: the dataset (%s) leaves less than %s of the memory limit (%s, %s) for releases; the curator admits %s of releases at once, "+
			"which refuses all but small releases: raise the container's memory limit (or Config.MemoryLimit)",
			memory.MiB(p.data), memory.MiB(curator.MinMemory), memory.MiB(p.limit), p.source, memory.MiB(p.release)))
	}
	log.Info("release memory", zap.Int64("memory_limit_bytes", p.limit), zap.String("memory_limit_source", p.source),
		zap.Int64("dataset_bytes", p.data), zap.Int64("release_memory_bytes", p.release), zap.String("release_memory", p.how),
		zap.Int64("runtime_memory_limit_bytes", debug.SetMemoryLimit(-1)))
	return memory.NewBudget(p.release)
}

// flushAuthFailures logs the summaries of failed authentications whose interval has
// ended, until the server stops.
func (s *Server) flushAuthFailures(f *transport.AuthFailures) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.stopped:
			f.Flush()
			return
		case <-tick.C:
			f.Flush()
		}
	}
}

// logStudy states the default study and how many such studies the budgets hold, and
// warns when the dataset cap holds fewer than two: one vendor's first study would
// leave nothing for any other.
func logStudy(log *zap.Logger, s curator.StudyCapacity) {
	log.Info(s.Statement(),
		zap.Float64("study_epsilon", s.Projection.Epsilon), zap.Float64("study_delta", s.Projection.Delta),
		zap.Int("study_r", s.R), zap.Float64("study_projection_noise_sd", s.ProjectionNoiseSD),
		zap.Float64("answers_epsilon", s.Answers.Epsilon), zap.Float64("answers_delta", s.Answers.Delta),
		zap.Float64("answers_noise_sd", s.AnswersNoiseSD), zap.Float64("target_lower", s.Lower), zap.Float64("target_upper", s.Upper),
		zap.Int("default_studies_per_identity", s.PerIdentity), zap.Int("default_studies_dataset", s.Dataset),
		zap.Int("default_studies_left", s.DatasetLeft))
	if w := StudyWarning(s); w != "" {
		log.Warn(w)
	}
	if f := s.Worth(); f.Class != worth.NearRandom { // near-random is Warnings' warning
		log.Info(f.String())
	}
}

// StudyWarning is the warning due when the budgets hold fewer than two default studies
// in the dataset cap (or none per identity), "" otherwise.
func StudyWarning(s curator.StudyCapacity) string {
	if s.Dataset >= 2 && s.PerIdentity >= 1 {
		return ""
	}
	return fmt.Sprintf("WARNING: the dataset cap holds %d default studies and one identity's budget %d (a default study is a projection at ε=%g, δ=%g "+
		"and the answers at ε=%g, δ=%g), so modelers that name no ε, δ cannot all complete one. Raise Config.DatasetBudget.Epsilon (which weakens the bound on "+
		"what all modelers together learn) or Config.Budget.Epsilon, or make the default study smaller (Config.DefaultStudy.Epsilon, Config.Output.Epsilon)",
		s.Dataset, s.PerIdentity, s.Projection.Epsilon, s.Projection.Delta, s.Answers.Epsilon, s.Answers.Delta)
}

// DefaultStudy returns the default study and how many such studies the budgets held
// at start (curator.Curator.StudyCapacity).
func (s *Server) DefaultStudy() curator.StudyCapacity { return s.study }

// security builds the TLS configuration and the authentication policy, refusing
// plaintext on addresses other than loopback unless explicitly allowed, and taking
// identities from the privbo-identity header there unless explicitly trusted
// (trustedHeaderCheck).
func security(cfg Config) (*tls.Config, transport.Auth, error) {
	var auth transport.Auth
	if cfg.TokensFile != "" {
		tokens, err := transport.LoadTokens(cfg.TokensFile)
		if err != nil {
			return nil, auth, fmt.Errorf("server: %w", err)
		}
		auth.Tokens = tokens
	}
	t := cfg.TLS
	if t.CertFile == "" && t.KeyFile == "" {
		if t.ClientCAFile != "" {
			return nil, auth, fieldError("TLS.ClientCAFile", "client certificates (Config.TLS.ClientCAFile) need TLS: set Config.TLS.CertFile and Config.TLS.KeyFile")
		}
		if !transport.IsLoopback(cfg.Listen) && !cfg.AllowPlaintext {
			return nil, auth, fieldError("AllowPlaintext", fmt.Sprintf("refusing to serve plaintext on %s (Config.Listen), which is not a loopback address: set Config.TLS.CertFile and Config.TLS.KeyFile, "+
				"or Config.AllowPlaintext only behind a TLS-terminating proxy", cfg.Listen))
		}
		return nil, auth, trustedHeaderCheck(cfg, auth)
	}
	if t.CertFile == "" || t.KeyFile == "" {
		missing := "TLS.KeyFile"
		if t.CertFile == "" {
			missing = "TLS.CertFile"
		}
		return nil, auth, fieldError(missing, "TLS needs both the certificate and its private key: set Config.TLS.CertFile and Config.TLS.KeyFile")
	}
	tlsCfg, err := transport.ServerTLS(t.CertFile, t.KeyFile, t.ClientCAFile, len(auth.Tokens) > 0)
	if err != nil {
		return nil, auth, fmt.Errorf("server: %w", err)
	}
	auth.ClientCerts = t.ClientCAFile != ""
	return tlsCfg, auth, trustedHeaderCheck(cfg, auth)
}

// trustedHeaderCheck refuses to take identities from the privbo-identity header off
// loopback (with plaintext or with TLS but no client authentication alike) unless
// Config.TrustIdentityHeaderFromNetwork says to.
func trustedHeaderCheck(cfg Config, auth transport.Auth) error {
	if !auth.TrustsIdentityHeader() || transport.IsLoopback(cfg.Listen) || cfg.TrustIdentityHeaderFromNetwork {
		return nil
	}
	return fieldError("TrustIdentityHeaderFromNetwork", fmt.Sprintf("refusing to serve on %s (Config.Listen), which is not a loopback address, without authenticating callers: "+
		"each would name its own identity in the %s header, so anyone who can reach the address could spend any identity's budget. "+
		"Give client certificates (Config.TLS.ClientCAFile, with Config.TLS.CertFile and Config.TLS.KeyFile) or bearer tokens (Config.TokensFile); "+
		"or set Config.TrustIdentityHeaderFromNetwork only if everything that can reach %s authenticates its callers and sets the header itself", cfg.Listen, transport.IdentityHeader, cfg.Listen))
}

func (s *Server) setServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(curatorv1.CuratorService_ServiceDesc.ServiceName, st)
}

// How the health service follows the ledger: every LedgerCheckInterval the curator
// pings its ledger (ledger.Ledger.Ping: one trivial read, run again on a new connection if
// the one it used was lost), bounded by LedgerCheckTimeout. One failed ping turns the
// health status NOT_SERVING and one answered ping SERVING again, so an unreachable
// ledger shows within LedgerCheckInterval + LedgerCheckTimeout (1.5 s) and its return
// within LedgerCheckInterval plus a connection's set-up.
const (
	LedgerCheckInterval = 500 * time.Millisecond
	LedgerCheckTimeout  = time.Second
)

// watchReadiness keeps the health status in line with the ledger's reachability: a
// curator that cannot charge cannot release anything.
func (s *Server) watchReadiness() {
	tick := time.NewTicker(LedgerCheckInterval)
	defer tick.Stop()
	ready := true
	for {
		select {
		case <-s.stopped:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), LedgerCheckTimeout)
		err := s.ledger.Ping(ctx)
		cancel()
		select {
		case <-s.stopped:
			return
		default:
		}
		if ok := err == nil; ok != ready {
			ready = ok
			s.setServing(ok)
			if ok {
				s.log.Info("ledger reachable again; health SERVING")
			} else {
				s.log.Error("ledger unreachable; health NOT_SERVING", zap.Error(err))
			}
		}
	}
}

// withDefaults validates what can be checked without touching files and fills in
// defaults.
// DefaultShutdownTimeout bounds the graceful drain when Config.ShutdownTimeout is unset.
const DefaultShutdownTimeout = 10 * time.Second

// NewConfig returns a Config holding the default of every setting that has one, as
// the daemon's flags state them (cmd/curator takes its flag defaults from it, and a
// test there keeps the two equal). Start applies the same defaults to the zero fields
// of a Config built otherwise; settings whose default depends on others (the dataset
// cap, the scaling, the release memory) stay zero here and are resolved by Start.
func NewConfig() Config {
	return Config{
		Listen:              "127.0.0.1:7070",
		Ledger:              LedgerConfig{Kind: DefaultLedgerKind, Schema: pgledger.DefaultSchema, CallTimeout: DefaultLedgerCallTimeout},
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
		Jobs: JobsConfig{ValidationFraction: 0.3, SplitSeed: 1, MaxGrid: 5000, MaxIterations: 500, MaxRunning: 1, Lease: jobs.DefaultLease,
			Kusner: tuning.KusnerAssumptions{NoiseVariance: 0.01}},
	}
}

// withDefaults fills in cfg's defaults and validates it.
func (cfg Config) withDefaults() (Config, error) {
	cfg, _, err := cfg.resolve()
	return cfg, err
}

// resolve is withDefaults that also returns the projection mechanism
// cfg.ProjectionMechanism names, parsed once, here: Start passes the value on to the
// curator (curator.Config.Projection) instead of having the name parsed again.
func (cfg Config) resolve() (Config, projection.Mechanism, error) {
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
	// The target's range may come from the schema or a private estimate (Start, after
	// loading the data); until then validate with a placeholder range.
	probe := cfg.Output
	if !answer.IsExact(probe.Mechanism) && !outputRangeDeclared(probe) {
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
	switch cfg.Ledger.kind() {
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

// PatientCaps fills in the whole-patient caps' defaults as Start does: a per-identity
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
// the whole-patient caps with Start's defaults filled in.
func (cfg Config) LedgerLimits() ledger.Limits {
	c, err := cfg.withDefaults()
	if err != nil {
		return cfg.limits()
	}
	return c.limits()
}

// limits are the ledger limits of cfg (after withDefaults).
func (cfg Config) limits() ledger.Limits {
	return ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget,
		Patient: ledger.PatientLimits{PerIdentity: cfg.PatientBudget, Dataset: cfg.PatientDatasetBudget}}
}

// patientCapConflict refuses a whole-patient cap with settings whose every release of
// some kind has no finite whole-patient figure, so that the cap would refuse them all:
// exact answers, the lifted mechanism, a data-dependent scaling. mech is the projection
// mechanism cfg names, as resolve parsed it.
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

// curatorConfig is the curator's configuration of cfg (after withDefaults).
func (cfg Config) curatorConfig(ds *dataset.Dataset, store *ledger.Ledger) curator.Config {
	return curator.Config{
		Dataset: ds, DatasetID: cfg.DatasetID, Ledger: store, StateDir: cfg.StateDir, NoiseSD: cfg.NoiseSD, Output: cfg.Output, Evaluation: cfg.Evaluation,
		MaxQueryIndices: cfg.MaxQueryIndices, MaxProjectionDim: cfg.MaxProjectionDim, Logger: cfg.Logger,
		ProjectionMechanism: cfg.ProjectionMechanism,
		StudyEpsilon:        cfg.DefaultStudy.Epsilon, StudyDelta: cfg.DefaultStudy.Delta,
		ExactAnswers:             curator.ExactAnswerLimits{MaxRows: cfg.ExactAnswersMaxRows, RequireProjection: true},
		AllowExactProgramAnswers: cfg.AllowExactProgramAnswers,
		ReservationOwner:         reservationOwner(cfg.StateDir),
	}
}

// reservationOwner names a curator process in the ledger's reservations: its host and
// its state directory, which a restart keeps and replicas sharing a host do not share,
// so that a start frees only what this curator left reserved (RecoverReservations).
func reservationOwner(stateDir string) string {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	owner := curator.DefaultReservationOwner() + ":" + stateDir
	if len(owner) > 256 || !utf8.ValidString(owner) || strings.ContainsRune(owner, 0) {
		sum := sha256.Sum256([]byte(owner))
		owner = "sha256:" + hex.EncodeToString(sum[:])
	}
	return owner
}

// Warnings are what an operator must be told before serving cfg: a data-dependent
// scaling named explicitly, and exact, unprotected query answers. Start logs each; cmd/curator also prints them on standard error.
func Warnings(cfg Config) []string {
	var w []string
	// The dataset's δ cap defaults to the identity's, so a zero identity δ is the
	// only way to a zero δ limit.
	if cfg.Budget.Epsilon > 0 && cfg.Budget.Delta == 0 {
		w = append(w, fmt.Sprintf("WARNING: Config.Budget.Delta is 0: every release that needs δ > 0 is refused whatever has been spent, among them the Gaussian projection "+
			"(Config.ProjectionMechanism gaussian, the default) and gaussian answers; only pure ε-DP releases (laplace answers) can be made. "+
			"Set Config.Budget.Delta above 0 (for instance %g, the curator command's default)", DefaultBudgetDelta))
	}
	if cfg.TrustIdentityHeaderFromNetwork && cfg.TLS.ClientCAFile == "" && cfg.TokensFile == "" && !transport.IsLoopback(cfg.Listen) {
		w = append(w, fmt.Sprintf("WARNING: Config.TrustIdentityHeaderFromNetwork: the curator charges whatever identity each caller names in its %s header, "+
			"and %s (Config.Listen) is not a loopback address: anyone who can reach it can spend any identity's budget. "+
			"Use client certificates (Config.TLS.ClientCAFile) or bearer tokens (Config.TokensFile) unless everything in front of the curator authenticates callers and sets the header",
			transport.IdentityHeader, cfg.Listen))
	}
	if m := cfg.Data.Scaling.Mode; m != "" && !m.Private() {
		w = append(w, fmt.Sprintf("WARNING: Config.Data.Scaling.Mode %s scales the features with the data's own statistics, so one record's change moves every scaled row: "+
			"the (ε, δ) guarantee of the projection and of every release DOES NOT HOLD. Use public bounds (Config.Data.Scaling.Schema) or the default private scaling "+
			"unless the data are public", m))
	}
	if cfg.Jobs.Enabled && !cfg.Jobs.TrainingConsented && (cfg.PatientBudget.Epsilon > 0 || cfg.PatientDatasetBudget.Epsilon > 0) {
		w = append(w, "WARNING: a whole-patient cap (Config.PatientBudget.Epsilon) with tuning jobs (Config.Jobs.Enabled): every Kusner job will be refused, "+
			"since it trains on the training part with no mechanism and so has no whole-patient bound; DP-HyPO jobs are accepted. "+
			"Config.Jobs.TrainingConsented declares the training part's patients consented, if they are")
	}
	if !answer.IsExact(cfg.Output.Mechanism) {
		if f, ok := answersForecast(cfg.Output); ok && f.Class == worth.NearRandom {
			w = append(w, "WARNING: "+f.String()+" (Config.Output.Epsilon; or a public range nearer the target's values, Config.Output.Lower and Config.Output.Upper)")
		}
		return w
	}
	limit := cfg.ExactAnswersMaxRows
	if limit == 0 {
		limit = DefaultExactAnswersMaxRows
	}
	w = append(w, fmt.Sprintf("WARNING: Config.Output.Mechanism none: query answers are EXACT and UNPROTECTED (no differential privacy, ε = ∞) and cost no budget; "+
		"identities holding a projection release can read the exact target of up to %d rows of the dataset, all of them together (Config.ExactAnswersMaxRows). "+
		"Use Config.Output.Mechanism laplace or gaussian unless the outputs are truly not sensitive", limit))
	if cfg.Evaluation.Mode == curator.EvaluateProgram {
		w = append(w, "WARNING: Config.Evaluation.Mode program with exact answers (Config.AllowExactProgramAnswers): every answer is an exact function of one record's features, "+
			"so the features of queried records are not protected by the projection's (ε, δ)")
	}
	return w
}

// answersForecast is what the answers o releases are worth (worth.Study) before their
// range is known: the noise sd of a range of width one, which is the ratio of sd to
// width whatever the range, since the noise is calibrated to the width.
func answersForecast(o curator.OutputPrivacy) (worth.Forecast, bool) {
	eps := o.Epsilon
	if eps == 0 {
		eps = curator.DefaultOutputEpsilon
	}
	m, err := answer.New(o.Mechanism, answer.Params{Epsilon: eps, Delta: o.Delta, Lower: 0, Upper: 1})
	if err != nil {
		return worth.Forecast{}, false
	}
	return worth.Ratio(m.NoiseSD(), eps), true
}

// Check validates cfg as Start would — settings, TLS material, tokens, the dataset —
// without listening, opening the ledger or writing anything. It returns a one-line
// summary; CheckReport also returns the warnings Start would log.
func Check(cfg Config) (string, error) {
	r, err := CheckReport(cfg)
	return r.Summary, err
}

// CheckResult is what CheckReport found: a one-line summary, and the warnings about the
// data (the forecast of a private scaling estimate) that Start would log besides
// Warnings(cfg).
type CheckResult struct {
	Summary  string
	Warnings []string
}

// CheckReport is Check with the data's warnings.
func CheckReport(cfg Config) (CheckResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return CheckResult{}, err
	}
	tlsCfg, auth, err := security(cfg)
	if err != nil {
		return CheckResult{}, err
	}
	raw, err := dataset.LoadRaw(cfg.DataPath, cfg.Data)
	if err != nil {
		return CheckResult{}, fmt.Errorf("server: %w", err)
	}
	// The private estimate is made (and charged) only by Start; here the scaling is
	// checked with placeholder bounds, which release nothing, and the estimate's
	// forecast is made from public quantities, as Start makes it.
	p := planScaling(cfg, raw)
	var warnings []string
	if p.needed() {
		if warnings, err = checkPlan(cfg, raw, p); err != nil {
			return CheckResult{}, err
		}
	}
	sc := cfg.Data.Scaling
	if p.features {
		b := make([]dataset.Bounds, raw.D)
		for j := range b {
			b[j] = dataset.Bounds{Lower: -1, Upper: 1}
		}
		sc.Schema = dataset.SchemaFromBounds("(placeholder for the private estimate)", raw.Features, b)
	}
	ds, err := raw.Scale(sc)
	if err != nil {
		return CheckResult{}, fmt.Errorf("server: %w", err)
	}
	if err := curator.CheckSettings(cfg.NoiseSD, cfg.Evaluation); err != nil {
		return CheckResult{}, fmt.Errorf("server: %w", err)
	}
	if cfg.Jobs.Enabled {
		if _, err := jobsRunner(cfg, ds, zap.NewNop()); err != nil {
			return CheckResult{}, err
		}
	}
	scaling := string(sc.Mode)
	if p.needed() {
		f, err := dataset.ForecastBounds(raw.N, p.columns(raw), p.privacy())
		if err != nil {
			return CheckResult{}, fmt.Errorf("server: %w", err)
		}
		scaling += fmt.Sprintf(" (private estimate of %s with %s, charged once at the first start to the dataset cap; forecast %s)", p.what(), p.privacy(), f.Quality)
	}
	rows := fmt.Sprintf("%d rows", ds.N)
	if raw.MissingTarget > 0 {
		rows += fmt.Sprintf(" (%d more with a missing target: dropped)", raw.MissingTarget)
	}
	return CheckResult{Summary: fmt.Sprintf("dataset %s (id %s): %s × %d features, target %s; scaling %s; answers %s; ledger %s; %s; listen %s (tls %v, client certificates %v, %d tokens)",
		ds.Name, cfg.DatasetID, rows, ds.D, ds.Target, scaling, cfg.Output.Mechanism, cfg.Ledger.kind(), planMemory(cfg, ds.N, ds.D).summary(),
		cfg.Listen, tlsCfg != nil, auth.ClientCerts, len(auth.Tokens)),
		Warnings: warnings}, nil
}

// DefaultLedgerKind is the ledger store of a Config that names none: SQLite, in StateDir.
const DefaultLedgerKind = "sqlite"

func (l LedgerConfig) kind() string {
	if l.Kind == "" {
		return DefaultLedgerKind
	}
	return l.Kind
}

// OpenLedger opens the configured ledger store (the SQLite file lives in stateDir).
func OpenLedger(ctx context.Context, lc LedgerConfig, stateDir string, limits ledger.Limits) (*ledger.Ledger, error) {
	var (
		store *ledger.Ledger
		err   error
	)
	switch lc.kind() {
	case "sqlite":
		store, err = ledger.OpenSQLite(filepath.Join(stateDir, "ledger.db"), limits)
	case "postgres":
		store, err = pgledger.Open(ctx, lc.DSN, lc.pgOptions(), limits)
	default:
		return nil, fmt.Errorf("server: unknown ledger kind %q (want sqlite or postgres)", lc.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("server: opening the privacy ledger: %w", err)
	}
	return store, nil
}

// Releases is where a curator keeps its released matrices.
type Releases struct {
	// Store is the curator's Config.Releases; nil keeps them as files in
	// StateDir/releases (blob.Dir, the curator's default).
	Store blob.Store
	// Moved, when set, is the store the releases are moving into, from Files: Start
	// copies into it what the ledger records and it lacks (curator.AdoptReleases).
	Moved, Files blob.Store
	close        func() error
}

// Close releases the store's database handle, if it has one.
func (r Releases) Close() error {
	if r.close == nil {
		return nil
	}
	return r.close()
}

// adoptReleases copies the releases of the state directory that the ledger records into
// the store they moved to, so that the other replicas can replay them too. A release
// that cannot be copied is logged and still replayed from the state directory by this
// replica.
func adoptReleases(ctx context.Context, log *zap.Logger, store *ledger.Ledger, dataset string, r Releases) {
	got, err := curator.AdoptReleases(ctx, store, dataset, r.Moved, r.Files)
	if got.Copied > 0 || got.Missing > 0 {
		log.Info("releases copied from the state directory into the PostgreSQL ledger's database",
			zap.Int("copied", got.Copied), zap.Int("in_neither", got.Missing))
	}
	if err != nil {
		log.Error("some releases of the state directory could not be copied into PostgreSQL; this replica still replays them from its state directory",
			zap.Error(err))
	}
}

// removeOrphans removes, at start, the release matrices no ledger record names that are
// older than curator.OrphanGrace (curator.RemoveOrphans), from the state directory and,
// with PostgreSQL, the ledger's schema: what a curator killed between storing a matrix
// and charging it left behind. A failure is logged and the curator serves anyway.
func removeOrphans(ctx context.Context, log *zap.Logger, store *ledger.Ledger, lc LedgerConfig, stateDir string, r Releases) {
	var stores []curator.ReleaseStore
	if r.Moved != nil {
		schema := lc.Schema
		if schema == "" {
			schema = pgledger.DefaultSchema
		}
		stores = append(stores, curator.ReleaseStore{Where: "postgres schema " + schema, Store: r.Moved})
	}
	dir := curator.ReleasesDir(stateDir)
	files := r.Files
	if files == nil {
		d, err := blob.OpenDir(dir)
		if err != nil {
			log.Error("orphaned release matrices not removed", zap.Error(err))
			return
		}
		files = d
	}
	stores = append(stores, curator.ReleaseStore{Where: dir, Store: files})
	removed, err := curator.RemoveOrphans(ctx, store, curator.OrphanGrace, log, stores...)
	if len(removed) > 0 {
		var bytes int64
		for _, o := range removed {
			bytes += o.Size
		}
		log.Info("removed orphaned release matrices: stored more than the grace window ago and charged by no ledger record",
			zap.Int("matrices", len(removed)), zap.Int64("bytes", bytes), zap.Duration("grace", curator.OrphanGrace))
	}
	if err != nil {
		log.Error("orphaned release matrices not (all) removed; the curator serves anyway", zap.Error(err))
	}
}

// OpenReleases opens where the curator keeps its released matrices, by ledger kind.
// With SQLite they stay files in stateDir/releases (Store nil): the ledger is a file of
// the same directory, so a curator and its releases live on one disk. With PostgreSQL
// they are blobs in the ledger's schema (pgledger.Blobs), so that every replica sharing
// the ledger replays every release. Releases a curator stored as files before it used
// PostgreSQL blobs are copied into PostgreSQL when it starts (Start, with
// curator.AdoptReleases), and read from stateDir/releases (blob.Fallback) until then.
func OpenReleases(ctx context.Context, lc LedgerConfig, stateDir string) (Releases, error) {
	if lc.kind() != "postgres" {
		return Releases{}, nil
	}
	blobs, err := pgledger.OpenBlobs(ctx, lc.DSN, lc.pgOptions())
	if err != nil {
		return Releases{}, fmt.Errorf("server: opening the release store: %w", err)
	}
	files, err := blob.OpenDir(curator.ReleasesDir(stateDir))
	if err != nil {
		blobs.Close()
		return Releases{}, fmt.Errorf("server: opening the release store: %w", err)
	}
	return Releases{Store: blob.Fallback(blobs, files), Moved: blobs, Files: files, close: blobs.Close}, nil
}

// OpenJobs opens where the curator keeps its tuning jobs, by ledger kind. With SQLite
// they are in stateDir/jobs.db, this curator's alone. With PostgreSQL they are tables
// in the ledger's schema (jobs.OpenPostgres), keyed by dataset, so that every replica
// sharing the ledger serves, cancels and takes over every job of the dataset.
func OpenJobs(ctx context.Context, lc LedgerConfig, stateDir, dataset string) (*jobs.Store, error) {
	if lc.kind() != "postgres" {
		st, err := jobs.OpenSQLite(filepath.Join(stateDir, "jobs.db"))
		if err != nil {
			return nil, fmt.Errorf("server: opening the job store: %w", err)
		}
		return st, nil
	}
	e, d, err := pgledger.OpenEngine(ctx, lc.DSN, lc.pgOptions())
	if err != nil {
		return nil, fmt.Errorf("server: opening the job store: %w", err)
	}
	st, err := jobs.OpenPostgres(ctx, e, d, dataset)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("server: opening the job store: %w", err)
	}
	return st, nil
}

// adoptJobs copies the jobs of stateDir/jobs.db, if there is one, into the shared job
// store (jobs.Adopt), so that a curator moving to PostgreSQL keeps answering for the jobs
// it accepted before. A failure is logged; those jobs then stay in the file only.
func adoptJobs(ctx context.Context, log *zap.Logger, to *jobs.Store, led *ledger.Ledger, stateDir string) {
	path := filepath.Join(stateDir, "jobs.db")
	if _, err := os.Stat(path); err != nil {
		return
	}
	from, err := jobs.OpenSQLite(path)
	if err != nil {
		log.Error("the jobs of the state directory could not be read to copy them into PostgreSQL", zap.String("path", path), zap.Error(err))
		return
	}
	defer from.Close()
	got, err := jobs.Adopt(ctx, to, from, led)
	if got.Jobs > 0 || got.Skipped > 0 {
		log.Info("jobs copied from the state directory into the PostgreSQL ledger's schema", zap.Int("copied", got.Jobs),
			zap.Int("interrupted", got.Interrupted), zap.Int("not_charged_to_this_dataset", got.Skipped))
	}
	if err != nil {
		log.Error("some jobs of the state directory could not be copied into PostgreSQL; retries of them on this replica will not find them", zap.Error(err))
	}
}

func startJobs(ctx context.Context, cfg Config, ds *dataset.Dataset, store *ledger.Ledger, hold ledger.Hold, log *zap.Logger) (*jobs.Manager, error) {
	j := cfg.Jobs
	runner, err := jobsRunner(cfg, ds, log)
	if err != nil {
		return nil, err
	}
	st, err := OpenJobs(ctx, cfg.Ledger, cfg.StateDir, cfg.DatasetID)
	if err != nil {
		return nil, err
	}
	if st.Shared() {
		adoptJobs(ctx, log, st, store, cfg.StateDir)
	}
	m, err := jobs.NewManager(jobs.Config{Store: st, Dataset: cfg.DatasetID, Ledger: store, Runner: runner, Logger: log,
		MaxRunning: j.MaxRunning, Lease: j.Lease, Reservation: hold})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("server: jobs: %w", err)
	}
	return m, nil
}

// jobsRunner builds the tuning-job runner of cfg over ds.
func jobsRunner(cfg Config, ds *dataset.Dataset, log *zap.Logger) (*tuning.Runner, error) {
	j := cfg.Jobs
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
		tc.EstimateBounds = func(x []float64, n, d int, epsilon float64) ([]learner.Bounds, error) {
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
	}
	runner, err := tuning.New(tc)
	if err != nil {
		return nil, fmt.Errorf("server: jobs: %w", err)
	}
	return runner, nil
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

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Curator returns the domain service (for in-process tools such as simulations).
func (s *Server) Curator() *curator.Curator { return s.curator }

// ReleaseMemory is the memory budget of the releases in force (Config.ReleaseMemory,
// resolved), 0 when there is none.
func (s *Server) ReleaseMemory() int64 { return s.memory.Capacity() }

// Dataset returns the served dataset, scaled (for in-process tools and tests; it
// holds the sensitive records: never send or log it).
func (s *Server) Dataset() *dataset.Dataset { return s.ds }

// OutputPrivacy returns the release of query answers in force, with the target's range
// resolved (flags, schema or the private estimate).
func (s *Server) OutputPrivacy() curator.OutputPrivacy { return s.cfg.Output }

// Done reports a serving error, or nil after Shutdown.
func (s *Server) Done() <-chan error { return s.serveErr }

// Shutdown drains the server: health goes NOT_SERVING, in-flight RPCs get until the
// shutdown timeout (or ctx) to finish, then remaining connections are closed and the
// ledger is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stopped)
		s.health.Shutdown()
		if s.jobs != nil {
			// Running jobs stop: with SQLite they are marked interrupted (their charge
			// stays spent), with PostgreSQL handed over to another replica; either way
			// their watchers' streams end. Reads keep working while the RPCs drain below.
			s.jobs.Interrupt()
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
		defer cancel()
		done := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.log.Warn("graceful shutdown timed out; closing remaining connections")
			s.grpc.Stop()
			<-done
		}
		if s.metricsSrv != nil {
			s.metricsSrv.Close()
		}
		if s.jobs != nil {
			if err := s.jobs.Close(); err != nil {
				s.log.Error("closing the job store", zap.Error(err))
			}
		}
		if rerr := s.releases.Close(); rerr != nil {
			s.log.Error("closing the release store", zap.Error(rerr))
		}
		err = s.ledger.Close()
		s.log.Info("curator stopped")
	})
	return err
}
