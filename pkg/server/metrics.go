package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/privbo/privbo/internal/metrics"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
)

var latencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func (s *Server) newMetrics(dataset string) *metrics.Registry {
	r := metrics.NewRegistry()
	r.Counter("privbo_rpc_requests_total", "RPCs handled, by method and status code.")
	r.Histogram("privbo_rpc_duration_seconds", "RPC latency in seconds, by method.", latencyBounds)
	gauge := func(name, help string, value func(spentEps, spentDelta, remEps, remDelta float64) float64) {
		r.GaugeFunc(name, help, func() []metrics.Sample {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			accts, err := s.ledger.Accounts(ctx, dataset)
			if err != nil {
				return nil
			}
			var out []metrics.Sample
			for _, b := range accts {
				if ledger.IsReserved(b.Identity) {
					continue
				}
				out = append(out, metrics.Sample{Labels: []string{"dataset", dataset, "identity", b.Identity, "relation", string(b.Relation)},
					Value: value(b.Spent.Epsilon, b.Spent.Delta, b.Remaining.Epsilon, b.Remaining.Delta)})
			}
			return out
		})
	}
	gauge("privbo_budget_spent_epsilon", "Privacy budget ε spent, by identity and neighbour relation.", func(se, _, _, _ float64) float64 { return se })
	gauge("privbo_budget_spent_delta", "Privacy budget δ spent, by identity and neighbour relation.", func(_, sd, _, _ float64) float64 { return sd })
	gauge("privbo_budget_remaining_epsilon", "Privacy budget ε remaining, by identity and neighbour relation.", func(_, _, re, _ float64) float64 { return re })
	gauge("privbo_budget_remaining_delta", "Privacy budget δ remaining, by identity and neighbour relation.", func(_, _, _, rd float64) float64 { return rd })
	r.GaugeFunc("privbo_jobs", "Jobs by state.", func() []metrics.Sample {
		if s.jobs == nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		counts, err := s.jobs.CountByState(ctx)
		if err != nil {
			return nil
		}
		var out []metrics.Sample
		for _, st := range []jobs.State{jobs.Queued, jobs.Running, jobs.Succeeded, jobs.Failed, jobs.Cancelled} {
			out = append(out, metrics.Sample{Labels: []string{"state", string(st)}, Value: float64(counts[st])})
		}
		return out
	})
	return r
}

func (s *Server) observeRPC(method string, code codes.Code, d time.Duration) {
	s.metrics.Add("privbo_rpc_requests_total", 1, "method", method, "code", code.String())
	s.metrics.Observe("privbo_rpc_duration_seconds", d.Seconds(), "method", method)
}

func (s *Server) serveMetrics() error {
	lis, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("server: metrics listener on %q: %w", s.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics.Handler())
	// Plain-HTTP probes for orchestrators whose probes cannot present a client
	// certificate to the mutual-TLS gRPC port: /healthz mirrors the gRPC health
	// status (NOT_SERVING while the ledger is unreachable or while draining: take
	// the curator out of rotation), /livez only says the process answers.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		resp, err := s.health.Check(r.Context(), &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			http.Error(w, "NOT_SERVING", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "SERVING")
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.metricsLis = lis
	s.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.metricsSrv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener stopped", zap.Error(err))
		}
	}()
	return nil
}

// MetricsAddr is the metrics listener's address ("" when metrics are off).
func (s *Server) MetricsAddr() string {
	if s.metricsLis == nil {
		return ""
	}
	return s.metricsLis.Addr().String()
}
