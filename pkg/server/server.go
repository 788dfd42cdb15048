// Package server is the curator daemon as a library: it loads the dataset, opens the
// privacy ledger, builds the curator and serves it over gRPC with the health and
// reflection services. cmd/curator and the integration tests start it the same way:
//
//	srv, err := server.Start(ctx, cfg)
//	defer srv.Shutdown(context.Background())
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// Config is everything the curator daemon needs. Zero values take the documented
// defaults.
type Config struct {
	// Listen is the TCP address to serve on, e.g. "127.0.0.1:7070" or "127.0.0.1:0".
	Listen string
	// DataPath is the CSV file; Data says how to read and scale it.
	DataPath string
	Data     dataset.Options
	// DatasetName names the dataset in the ledger and to modelers; default: the file
	// name without extension.
	DatasetName string
	// StateDir keeps what must survive a restart (ledger, released matrices).
	StateDir string
	// Ledger selects the budget store.
	Ledger LedgerConfig
	// Budget is the per-identity limit; DatasetBudget caps all identities together
	// (default: equal to Budget).
	Budget, DatasetBudget ledger.Cost
	// NoiseSD, Output, MaxQueryIndices, MaxProjectionDim: see curator.Config.
	NoiseSD          float64
	Output           curator.OutputPrivacy
	MaxQueryIndices  int
	MaxProjectionDim int
	// ShutdownTimeout bounds the graceful drain; default 10 s.
	ShutdownTimeout time.Duration
	// Logger; default a no-op logger.
	Logger *zap.Logger
	// Curator hooks for simulations and tests (see curator.Config).
	SimulationHooks func(*curator.Config)
}

// LedgerConfig selects the ledger store.
type LedgerConfig struct {
	// Kind is "sqlite" (default; file StateDir/ledger.db) or "postgres".
	Kind string
	// DSN of PostgreSQL, for Kind "postgres".
	DSN string
	// Schema of the PostgreSQL tables; default "privbo".
	Schema string
}

// Server is a running curator daemon.
type Server struct {
	cfg     Config
	log     *zap.Logger
	grpc    *grpc.Server
	health  *health.Server
	lis     net.Listener
	ledger  ledger.Store
	curator *curator.Curator

	serveErr chan error
	stopOnce sync.Once
}

// Start loads everything, starts serving in the background and returns. It fails fast
// with an error a person can act on (bad file, bad column, unreachable ledger, port in
// use).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.StateDir == "" {
		return nil, errors.New("server: a state directory is required (--state)")
	}
	if cfg.Budget == (ledger.Cost{}) {
		return nil, errors.New("server: a privacy budget is required (--budget-epsilon, --budget-delta)")
	}
	if cfg.DatasetBudget == (ledger.Cost{}) {
		cfg.DatasetBudget = cfg.Budget
	}
	log := cfg.Logger
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: state directory: %w", err)
	}
	ds, err := dataset.LoadCSV(cfg.DataPath, cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.DatasetName != "" {
		ds.Name = cfg.DatasetName
	}
	log.Info("dataset loaded", zap.String("dataset", ds.Name), zap.Int("rows", ds.N), zap.Int("features", ds.D),
		zap.Strings("feature_columns", ds.Features), zap.String("target", ds.Target), zap.String("protected_unit", ds.Unit))

	store, err := OpenLedger(ctx, cfg.Ledger, cfg.StateDir, ledger.Limits{PerIdentity: cfg.Budget, Dataset: cfg.DatasetBudget})
	if err != nil {
		return nil, err
	}
	ccfg := curator.Config{
		Dataset: ds, Ledger: store, StateDir: cfg.StateDir, NoiseSD: cfg.NoiseSD, Output: cfg.Output,
		MaxQueryIndices: cfg.MaxQueryIndices, MaxProjectionDim: cfg.MaxProjectionDim, Logger: log,
	}
	if cfg.SimulationHooks != nil {
		cfg.SimulationHooks(&ccfg)
	}
	cur, err := curator.New(ccfg)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("server: listen on %q: %w", cfg.Listen, err)
	}
	s := &Server{cfg: cfg, log: log, lis: lis, ledger: store, curator: cur, serveErr: make(chan error, 1)}
	s.grpc = grpc.NewServer(transport.ServerOptions(transport.ServerConfig{Logger: log})...)
	curatorv1.RegisterCuratorServiceServer(s.grpc, &handlers{cur: cur, log: log})
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(curatorv1.CuratorService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	go func() { s.serveErr <- s.grpc.Serve(lis) }()
	log.Info("curator serving", zap.String("addr", lis.Addr().String()), zap.String("ledger", cfg.Ledger.kind()),
		zap.Float64("budget_epsilon", cfg.Budget.Epsilon), zap.Float64("budget_delta", cfg.Budget.Delta),
		zap.Float64("dataset_budget_epsilon", cfg.DatasetBudget.Epsilon), zap.Float64("dataset_budget_delta", cfg.DatasetBudget.Delta))
	return s, nil
}

func (l LedgerConfig) kind() string {
	if l.Kind == "" {
		return "sqlite"
	}
	return l.Kind
}

// OpenLedger opens the configured ledger store (the SQLite file lives in stateDir).
func OpenLedger(ctx context.Context, lc LedgerConfig, stateDir string, limits ledger.Limits) (ledger.Store, error) {
	var (
		store ledger.Store
		err   error
	)
	switch lc.kind() {
	case "sqlite":
		store, err = ledger.OpenSQLite(filepath.Join(stateDir, "ledger.db"), limits)
	case "postgres":
		store, err = ledger.OpenPostgres(ctx, lc.DSN, ledger.PostgresOptions{Schema: lc.Schema}, limits)
	default:
		return nil, fmt.Errorf("server: unknown ledger kind %q (want sqlite or postgres)", lc.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("server: opening the privacy ledger: %w", err)
	}
	return store, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Curator returns the domain service (for in-process tools such as simulations).
func (s *Server) Curator() *curator.Curator { return s.curator }

// Done reports a serving error, or nil after Shutdown.
func (s *Server) Done() <-chan error { return s.serveErr }

// Shutdown drains the server: health goes NOT_SERVING, in-flight RPCs get until the
// shutdown timeout (or ctx) to finish, then remaining connections are closed and the
// ledger is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		s.health.Shutdown()
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
		err = s.ledger.Close()
		s.log.Info("curator stopped")
	})
	return err
}
