// Package server is the curator daemon as a library: it loads the dataset, opens the
// privacy ledger, builds the curator and serves it over gRPC with the health and
// reflection services. cmd/curator and the integration tests start it the same way:
//
//	srv, err := server.Start(ctx, cfg)
//	defer srv.Shutdown(context.Background())
package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
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

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/rpc"
	"github.com/privbo/privbo/pkg/storage"
	"github.com/privbo/privbo/pkg/transport"
	"github.com/privbo/privbo/pkg/tuning"
	"github.com/privbo/privbo/pkg/worth"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

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

// memoryLimit is limit (Config.MemoryLimit) or, when it is 0, the memory available to
// the process (memory.Available), with where the figure comes from; 0 when it is not
// known.
func memoryLimit(limit int64) (int64, string) {
	var c config.Config // names the settings
	if limit > 0 {
		return limit, c.Flag(&c.MemoryLimit)
	}
	if l, ok := memory.Available(); ok {
		return l.Bytes, l.Source
	}
	return 0, ""
}

// RuntimeMemoryLimit is the Go runtime's soft memory limit for a curator that may use
// limit bytes (Config.MemoryLimit; 0: what is available) (runtime/debug.SetMemoryLimit):
// RuntimeMemoryShare of its memory limit, 0 when that is not known. cmd/curator sets it
// unless GOMEMLIMIT is set; it is the process's, so the library never sets it itself.
func RuntimeMemoryLimit(limit int64) int64 {
	lim, _ := memoryLimit(limit)
	return int64(float64(lim) * RuntimeMemoryShare)
}

// Server is a running curator daemon.
type Server struct {
	cfg    config.Config
	log    *zap.Logger
	grpc   *grpc.Server
	health *health.Server
	lis    net.Listener
	ledger *ledger.Ledger
	// releases keeps the released matrices (the curator's Config.Releases).
	releases storage.Releases
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
	consoleSrv *http.Server
	consoleLis net.Listener

	serveErr chan error
	stopOnce sync.Once
	stopped  chan struct{}
}

// Start loads everything, starts serving in the background and returns. It fails fast
// with an error a person can act on (bad file, bad column, unreachable ledger, port in
// use).
func Start(ctx context.Context, cfg config.Config) (*Server, error) {
	return start(ctx, cfg, nil)
}

// start is Start serving lis, when not nil (tests), instead of listening on cfg.Listen;
// cfg.Listen still decides what the security checks treat as loopback.
func start(ctx context.Context, cfg config.Config, lis net.Listener) (*Server, error) {
	cfg, mech, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	tlsCfg, auth, err := cfg.Security().Credentials()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
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
	for _, w := range config.Warnings(cfg) {
		log.Warn(w)
	}
	store, err := storage.OpenLedger(ctx, cfg.Ledger, cfg.StateDir, cfg.LedgerLimits())
	if err != nil {
		return nil, err
	}
	// undo closes, on a failed start, what the start opened so far, last first.
	undo := []func() error{store.Close}
	fail := func(err error) (*Server, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return nil, err
	}
	releases, err := storage.OpenReleases(ctx, cfg.Ledger, cfg.StateDir)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, releases.Close)
	// The limits in force are part of the ledger: every curator sharing it enforces
	// them (read in each charge's transaction), and 'curator ledger' reports against
	// them. A start with other limits changes them only when told to.
	limitsStart, err := store.RecordLimits(ctx, cfg.DatasetID, cfg.ChangeLimits)
	if err != nil {
		if de := (*ledger.LimitsDifferError)(nil); errors.As(err, &de) {
			return fail(cfg.Refuse(&cfg.ChangeLimits, fmt.Sprintf("the ledger's limits in force for dataset %s (%s, since %s) differ from this curator's (%s): "+
				"curators sharing a ledger enforce one set of limits, so start with the limits in force, or set "+cfg.Flag(&cfg.ChangeLimits)+" to make these "+
				"the limits in force (every curator sharing the ledger enforces them from its next charge; the change is kept in the ledger's history)",
				cfg.DatasetID, ledger.LimitsText(de.InForce.Limits), de.InForce.Recorded.Format(time.RFC3339), ledger.LimitsText(de.Configured))))
		}
		return fail(fmt.Errorf("server: recording the budget limits in the ledger: %w", err))
	}
	if p := limitsStart.Previous; p != nil {
		log.Warn("WARNING: the ledger's limits in force changed with this start ("+cfg.Flag(&cfg.ChangeLimits)+"); spending above a lowered limit is marked OVER LIMIT by curator ledger",
			zap.String("dataset_id", cfg.DatasetID), zap.String("previous", ledger.LimitsText(p.Limits)), zap.Time("previous_since", p.Recorded),
			zap.String("now", ledger.LimitsText(limitsStart.InForce.Limits)))
	}
	ds, err := scaleDataset(ctx, store, &cfg, raw)
	if err != nil {
		return fail(err)
	}
	log.Info("dataset loaded", zap.String("dataset_id", cfg.DatasetID), zap.String("dataset", ds.Name), zap.Int("rows", ds.N), zap.Int("features", ds.D),
		zap.Strings("feature_columns", ds.Features), zap.String("target", ds.Target), zap.String("scaling", string(ds.Scaling.Mode)),
		zap.String("protected_unit", ds.Unit))

	// The garbage of reading and scaling the file goes back to the system before serving:
	// what stays is the dataset.
	debug.FreeOSMemory()

	if releases.Moved != nil {
		storage.AdoptReleases(ctx, log, store, cfg.DatasetID, releases)
	}
	storage.RemoveOrphans(ctx, log, store, cfg.Ledger, cfg.StateDir, releases)
	ccfg := cfg.Curator(ds, store)
	ccfg.Projection, ccfg.Releases, ccfg.ReservationOwner = mech, releases.Store, reservationOwner(cfg.StateDir)
	ccfg.Memory = releaseMemory(log, planMemory(cfg.MemoryLimit, cfg.ReleaseMemory, ds.N, ds.D))
	if cfg.SimulationHooks != nil {
		cfg.SimulationHooks(&ccfg)
	}
	cur, err := curator.New(ccfg)
	if err != nil {
		return fail(fmt.Errorf("server: %w", err))
	}
	// Budget left reserved by releases this curator was computing when it stopped;
	// the heartbeat bounds what it reserves from now on (watchReadiness renews it).
	if _, err := cur.RecoverReservations(ctx); err != nil {
		return fail(fmt.Errorf("server: %w", err))
	}
	if err := store.Heartbeat(ctx, cfg.DatasetID, ccfg.ReservationOwner, ledger.DefaultLivenessWindow); err != nil {
		return fail(fmt.Errorf("server: %w", err))
	}
	study, err := cur.StudyCapacity(ctx)
	if err != nil {
		return fail(fmt.Errorf("server: %w", err))
	}
	logStudy(log, study)
	var jm *jobs.Manager
	if cfg.Jobs.Enabled {
		runner, err := tuning.New(cfg.Jobs.Tuning(ds, log))
		if err != nil {
			return fail(fmt.Errorf("server: jobs: %w", err))
		}
		jc := jobs.Config{Dataset: cfg.DatasetID, Ledger: store, Runner: runner, Logger: log, MaxRunning: cfg.Jobs.MaxRunning, Lease: cfg.Jobs.Lease, Reservation: cur.ReservationHold()}
		if jm, err = openJobs(ctx, cfg.Ledger, cfg.StateDir, jc); err != nil {
			return fail(err)
		}
		undo = append(undo, jm.Close)
	}
	if lis == nil {
		if lis, err = net.Listen("tcp", cfg.Listen); err != nil {
			return fail(fmt.Errorf("server: listen on %q: %w", cfg.Listen, err))
		}
	}
	s := &Server{cfg: cfg, log: log, lis: lis, ledger: store, releases: releases, curator: cur, ds: ds, memory: ccfg.Memory, jobs: jm, study: study,
		limitsStart: limitsStart, serveErr: make(chan error, 1), stopped: make(chan struct{})}
	s.patient = s.patientStatement()
	for _, line := range s.patient {
		log.Info(line)
	}
	if err := s.serve(tlsCfg, auth); err != nil {
		lis.Close()
		return fail(err)
	}
	return s, nil
}

// serve registers the curator's services on a new gRPC server with the transport's
// options, tlsCfg and auth, and starts serving s.lis, the metrics listener when one is
// configured, and the readiness and authentication-failure watchers.
func (s *Server) serve(tlsCfg *tls.Config, auth transport.Auth) error {
	cfg, log, lis := s.cfg, s.log, s.lis
	failures := transport.NewAuthFailures(cfg.AuthFailures, log)
	tc := transport.ServerConfig{Logger: log, TLS: tlsCfg, Auth: auth, Limits: cfg.Limits, AuthFailures: failures, MaxHeaderListBytes: cfg.MaxHeaderBytes}
	var rpcMetrics *grpcprom.ServerMetrics
	if cfg.MetricsListen != "" {
		s.metrics, rpcMetrics = s.newMetrics(cfg.DatasetID)
		tc.Unary, tc.Stream = rpcMetrics.UnaryServerInterceptor(), rpcMetrics.StreamServerInterceptor()
	}
	// Stop waits for running handlers too, so nothing runs once the ledger is closed.
	s.grpc = grpc.NewServer(append(transport.ServerOptions(tc), grpc.WaitForHandlers(true))...)
	curatorv1.RegisterCuratorServiceServer(s.grpc, rpc.New(s.curator, s.jobs, s.ledger.Limits(), cfg.Streams, log))
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.setServing(true)
	if cfg.ConsoleListen != "" {
		if err := s.serveConsole(tlsCfg); err != nil {
			return err
		}
	}
	if cfg.MetricsListen != "" {
		if err := s.serveMetrics(); err != nil {
			s.closeConsole()
			return err
		}
	}
	go func() { s.serveErr <- s.grpc.Serve(lis) }()
	go s.watchReadiness()
	go s.flushAuthFailures(failures)
	log.Info("curator serving", zap.String("addr", lis.Addr().String()), zap.String("ledger", cfg.Ledger.Kind),
		zap.Float64("budget_epsilon", cfg.Budget.Epsilon), zap.Float64("budget_delta", cfg.Budget.Delta),
		zap.Float64("dataset_budget_epsilon", cfg.DatasetBudget.Epsilon), zap.Float64("dataset_budget_delta", cfg.DatasetBudget.Delta),
		zap.Bool("tls", tlsCfg != nil), zap.Bool("client_certificates", auth.ClientCerts), zap.Int("tokens", len(auth.Tokens)))
	if auth.TrustsIdentityHeader() {
		log.Warn("identities are taken from the "+transport.IdentityHeader+" header: every caller that reaches this address can name any identity and spend its budget",
			zap.String("addr", lis.Addr().String()), zap.Bool("loopback", transport.IsLoopback(cfg.Listen)))
	}
	return nil
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

func planMemory(limit, release int64, n, d int) memoryPlan {
	var c config.Config // names the settings
	p := memoryPlan{data: DatasetMemory(n, d), release: release, how: c.Flag(&c.ReleaseMemory)}
	p.limit, p.source = memoryLimit(limit)
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

// releaseMemory is the memory budget of the curator's releases of plan p, logged with
// how it was found; nil (no limit) when neither it nor the memory available is known.
func releaseMemory(log *zap.Logger, p memoryPlan) *memory.Budget {
	var c config.Config // names the settings
	if p.release == 0 {
		log.Warn("the memory available to the curator is unknown and " + c.Flag(&c.ReleaseMemory) + " is not set: releases are admitted without a memory limit")
		return nil
	}
	if p.floor {
		log.Warn(fmt.Sprintf("WARNING: the dataset (%s) leaves less than %s of the memory limit (%s, %s) for releases; the curator admits %s of releases at once, "+
			"which refuses all but small releases: raise the container's memory limit (or "+c.Flag(&c.MemoryLimit)+")",
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
// in the dataset cap (or none per identity), "" otherwise: at most 300 characters, the
// default study's size being in the start-up's statement of it.
func StudyWarning(s curator.StudyCapacity) string {
	var c config.Config // names the settings
	if s.Dataset >= 2 && s.PerIdentity >= 1 {
		return ""
	}
	return fmt.Sprintf("WARNING: the dataset cap holds %s and one identity's budget %s, so not every modeler naming no ε, δ completes one. "+
		"Raise %s (a weaker bound for all modelers) or %s, or shrink the default study (%s, %s).",
		curator.Studies(s.Dataset), curator.Studies(s.PerIdentity), c.Flag(&c.DatasetBudget.Epsilon), c.Flag(&c.Budget.Epsilon), c.Flag(&c.DefaultStudy.Epsilon), c.Flag(&c.Output.Epsilon))
}

// DefaultStudy returns the default study and how many such studies the budgets held
// at start (curator.Curator.StudyCapacity).
func (s *Server) DefaultStudy() curator.StudyCapacity { return s.study }

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
// curator that cannot charge cannot release anything. While the ledger answers, it
// also tends the curator's reservations (tendReservations), before a return to
// SERVING is announced.
func (s *Server) watchReadiness() {
	tick := time.NewTicker(LedgerCheckInterval)
	defer tick.Stop()
	ready := true
	beat := time.Now() // Start's heartbeat
	for {
		select {
		case <-s.stopped:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), LedgerCheckTimeout)
		err := s.ledger.Ping(ctx)
		if err == nil {
			// Failed cancels hold back a return to SERVING, not a curator serving.
			if terr := s.tendReservations(ctx, &beat); terr != nil && !ready {
				err = terr
			} else if terr != nil {
				s.log.Warn("cancelling again reservations whose cancel failed; retried at the next ledger check", zap.Error(terr))
			}
		}
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

// tendReservations cancels again the reservations whose cancel failed in an outage
// (ledger.Ledger.RetryCancels): until they succeed a ledger back from an outage is not
// ready, so at a return to SERVING their budget is available again. It also renews this curator's
// heartbeat every third of ledger.DefaultLivenessWindow, which keeps its reservations
// counting.
func (s *Server) tendReservations(ctx context.Context, beat *time.Time) error {
	n, err := s.ledger.RetryCancels(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("reservations whose cancel failed, or whose reserve got no answer, cancelled again", zap.Int("reservations", n))
	}
	if time.Since(*beat) < ledger.DefaultLivenessWindow/3 {
		return nil
	}
	if err := s.ledger.Heartbeat(ctx, s.cfg.DatasetID, s.curator.ReservationHold().Owner, ledger.DefaultLivenessWindow); err != nil {
		s.log.Warn("renewing this curator's heartbeat in the ledger failed; retried at the next ledger check", zap.Error(err))
		return nil
	}
	*beat = time.Now()
	return nil
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

// CheckResult is what CheckReport found: a one-line summary, and the warnings about the
// data (the forecast of a private scaling estimate) that Start would log besides
// config.Warnings(cfg).
type CheckResult struct {
	Summary  string
	Warnings []string
}

// CheckReport validates cfg as Start would — settings, TLS material, tokens, the
// dataset — without listening, opening the ledger or writing anything, and returns a
// one-line summary and the warnings Start would log about the data.
func CheckReport(cfg config.Config) (CheckResult, error) {
	cfg, _, err := cfg.Resolve()
	if err != nil {
		return CheckResult{}, err
	}
	tlsCfg, auth, err := cfg.Security().Credentials()
	if err != nil {
		return CheckResult{}, fmt.Errorf("server: %w", err)
	}
	raw, err := dataset.LoadRaw(cfg.DataPath, cfg.Data)
	if err != nil {
		return CheckResult{}, fmt.Errorf("server: %w", err)
	}
	// The private estimate is made (and charged) only by Start; here the scaling is
	// checked with placeholder bounds, which release nothing, and the estimate's
	// forecast is made from public quantities, as Start makes it.
	p := curator.PlanScaling(raw, cfg.Data.Scaling, cfg.Output, cfg.PrivateScalingShare, cfg.Budget, cfg.DatasetBudget)
	var warnings []string
	scaling := string(cfg.Data.Scaling.Mode)
	if p.Needed() {
		var f dataset.BoundsForecast
		if f, warnings, err = cfg.CheckScaling(raw, p); err != nil {
			return CheckResult{}, err
		}
		scaling += fmt.Sprintf(" (private estimate of %s with %s, charged once at the first start to the dataset cap; forecast %s)", p.What(), p.Privacy(), f.Quality)
	}
	sc := cfg.Data.Scaling
	if p.Features {
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
		if _, err := tuning.New(cfg.Jobs.Tuning(ds, zap.NewNop())); err != nil {
			return CheckResult{}, fmt.Errorf("server: jobs: %w", err)
		}
	}
	rows := fmt.Sprintf("%d rows", ds.N)
	if raw.MissingTarget > 0 {
		rows += fmt.Sprintf(" (%d more with a missing target: dropped)", raw.MissingTarget)
	}
	return CheckResult{Summary: fmt.Sprintf("dataset %s (id %s): %s × %d features, target %s; scaling %s; answers %s; ledger %s; %s; listen %s (tls %v, client certificates %v, %d tokens)",
		ds.Name, cfg.DatasetID, rows, ds.D, ds.Target, scaling, cfg.Output.Mechanism, cfg.Ledger.Kind, planMemory(cfg.MemoryLimit, cfg.ReleaseMemory, ds.N, ds.D).summary(),
		cfg.Listen, tlsCfg != nil, auth.ClientCerts, len(auth.Tokens)),
		Warnings: warnings}, nil
}

// openJobs opens the job store of lc (storage.OpenJobs), adopting the jobs of
// stateDir's file when the store is shared, and starts the manager of jc over it.
func openJobs(ctx context.Context, lc storage.Ledger, stateDir string, jc jobs.Config) (*jobs.Manager, error) {
	st, err := storage.OpenJobs(ctx, lc, stateDir, jc.Dataset)
	if err != nil {
		return nil, err
	}
	if st.Shared() {
		storage.AdoptJobs(ctx, jc.Logger, st, jc.Ledger, stateDir)
	}
	jc.Store = st
	m, err := jobs.NewManager(jc)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("server: jobs: %w", err)
	}
	return m, nil
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
		s.closeConsole()
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
		// The range came from the private estimate: the answers' guarantee states its part.
		cfg.Output.RangeEstimate = p
	}
	if err := cfg.Output.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return ds, nil
}
