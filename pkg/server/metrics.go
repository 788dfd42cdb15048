package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
)

// latencyBuckets are the upper bounds (seconds) of grpc_server_handling_seconds: finer
// than the client library's defaults below 5 ms, where cached queries answer.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newMetrics builds the server's own registry (never the global default one, so that
// several servers in one process, as in tests, each report their own): the standard
// gRPC server metrics of go-grpc-middleware (grpc_server_started_total,
// grpc_server_handled_total, grpc_server_handling_seconds, grpc_server_msg_*_total,
// labelled grpc_type, grpc_service, grpc_method and, when handled, grpc_code; a
// method's series appear with its first call, so a scrape carries no zeros of methods
// and codes never seen), privbo's
// budget and job gauges (budgetCollector), and the Go runtime and process metrics.
func (s *Server) newMetrics(dataset string) (*prometheus.Registry, *grpcprom.ServerMetrics) {
	reg := prometheus.NewRegistry()
	rpc := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(latencyBuckets)))
	reg.MustRegister(rpc, newBudgetCollector(s, dataset),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(s.storedQuotaGauges(dataset)...)
	if m := s.memory; m != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "privbo_release_memory_limit_bytes",
				Help: "Memory the curator admits for its releases at once (" + s.cfg.Flag(&s.cfg.ReleaseMemory) + ")."},
				func() float64 { return float64(m.Capacity()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "privbo_release_memory_held_bytes",
				Help: "Memory held by the releases being computed, stored and streamed."},
				func() float64 { return float64(m.Held()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "privbo_release_memory_waiting",
				Help: "Releases and streams waiting for memory."},
				func() float64 { return float64(m.Waiting()) }))
	}
	return reg, rpc
}

// budgetCollector reports privbo's gauges, read at every scrape from one ledger report
// (Ledger.Report under the limits in force): the whole-patient totals and caps, each
// relation's spent, reserved and remaining budget, the limits, and the jobs by state.
// Label values are identities, relations, scopes and states — never data. An identity
// has series only once it has a charge or a live reservation; reserved series only
// while a reservation is live.
type budgetCollector struct {
	s                              *Server
	dataset                        string
	patientEps, patientDelta       *prometheus.Desc
	patientCapEps, patientCapDelta *prometheus.Desc
	spentEps, spentDelta           *prometheus.Desc
	remEps, remDelta               *prometheus.Desc
	resEps, resDelta               *prometheus.Desc
	limitEps, limitDelta           *prometheus.Desc
	jobs                           *prometheus.Desc
	stored                         storedDescs
}

func newBudgetCollector(s *Server, dataset string) *budgetCollector {
	budget := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"dataset", "identity", "relation"}, nil)
	}
	patient := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"dataset", "identity"}, nil)
	}
	scoped := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"dataset", "scope"}, nil)
	}
	return &budgetCollector{s: s, dataset: dataset,
		patientEps: patient("privbo_whole_patient_epsilon", "What one patient can lose, ε: every release's (ε, δ) for replacing one patient's record "+
			"by any other, added over every relation; identity=\"\" is the dataset's total over all identities and the curator's own estimates. +Inf when a release has no finite figure."),
		patientDelta:    patient("privbo_whole_patient_delta", "What one patient can lose, δ (see privbo_whole_patient_epsilon)."),
		patientCapEps:   scoped("privbo_whole_patient_cap_epsilon", "The whole-patient cap in force, ε, by scope (identity or dataset); absent without a cap."),
		patientCapDelta: scoped("privbo_whole_patient_cap_delta", "The whole-patient cap in force, δ, by scope (identity or dataset); absent without a cap."),
		spentEps: budget("privbo_budget_spent_epsilon", "Privacy budget ε spent, by identity and neighbour relation; "+
			"identity=\"\" is the dataset's total over all identities, which the dataset cap bounds."),
		spentDelta: budget("privbo_budget_spent_delta", "Privacy budget δ spent (see privbo_budget_spent_epsilon)."),
		remEps: budget("privbo_budget_remaining_epsilon", "Privacy budget ε a charge can still spend, by identity and neighbour relation: "+
			"the smaller of the identity's limit and the dataset cap, less what is spent and reserved, as a charge finds it; identity=\"\" is the dataset cap's remainder."),
		remDelta: budget("privbo_budget_remaining_delta", "Privacy budget δ a charge can still spend (see privbo_budget_remaining_epsilon)."),
		resEps: budget("privbo_budget_reserved_epsilon", "Privacy budget ε reserved by releases being computed, by identity and neighbour relation: "+
			"spent when they are committed, given back if they fail or expire; absent while nothing is reserved."),
		resDelta:   budget("privbo_budget_reserved_delta", "Privacy budget δ reserved by releases being computed (see privbo_budget_reserved_epsilon)."),
		limitEps:   scoped("privbo_budget_limit_epsilon", "The budget limit in force, ε, of each relation, by scope: identity (each identity's) or dataset (all identities together)."),
		limitDelta: scoped("privbo_budget_limit_delta", "The budget limit in force, δ, of each relation, by scope (see privbo_budget_limit_epsilon)."),
		jobs:       prometheus.NewDesc("privbo_jobs", "Jobs of the dataset by state (with a PostgreSQL ledger, every replica's: the same on each).", []string{"state"}, nil),
		stored:     newStoredDescs(),
	}
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.patientEps, c.patientDelta, c.patientCapEps, c.patientCapDelta, c.spentEps, c.spentDelta,
		c.remEps, c.remDelta, c.resEps, c.resDelta, c.limitEps, c.limitDelta, c.jobs,
		c.stored.bytes, c.stored.count} {
		ch <- d
	}
}

// Collect sends the gauges. A ledger or job store that cannot be read is reported as
// an invalid metric: the handler logs it and serves the other metrics, which matter
// most while the ledger is unreachable.
func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if rep, err := c.s.budgetReport(ctx, c.dataset); err != nil {
		ch <- prometheus.NewInvalidMetric(c.spentEps, fmt.Errorf("server: reading the ledger's report: %w", err))
	} else {
		c.collectPatient(ch, rep)
		c.collectRelations(ch, rep)
		c.collectStored(ch, rep.Stored)
	}
	if c.s.jobs == nil {
		return
	}
	counts, err := c.s.jobs.CountByState(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.jobs, fmt.Errorf("server: counting jobs: %w", err))
		return
	}
	for _, st := range []jobs.State{jobs.Queued, jobs.Running, jobs.Succeeded, jobs.Failed, jobs.Cancelled} {
		ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}

// budgetReport is the ledger's report of dataset under the limits in force (the
// ledger's recorded ones, else this curator's).
func (s *Server) budgetReport(ctx context.Context, dataset string) (ledger.Report, error) {
	limits := s.ledger.Limits()
	rec, ok, err := s.ledger.RecordedLimits(ctx, dataset)
	if err != nil {
		return ledger.Report{}, err
	}
	if ok {
		limits = rec.Limits
	}
	return s.ledger.Report(ctx, dataset, limits)
}

// collectPatient sends the whole-patient gauges: the dataset's total and each modeler
// identity's, and the caps in force.
func (c *budgetCollector) collectPatient(ch chan<- prometheus.Metric, rep ledger.Report) {
	for _, r := range append([]ledger.PatientRow{rep.Patient.Dataset}, rep.Patient.Identities...) {
		if ledger.IsReserved(r.Identity) || r.Identity != "" && r.Total.Charges+r.Reserved.Charges == 0 {
			continue
		}
		cost := r.Total.Cost()
		ch <- prometheus.MustNewConstMetric(c.patientEps, prometheus.GaugeValue, cost.Epsilon, c.dataset, r.Identity)
		if r.Total.Bounded() {
			ch <- prometheus.MustNewConstMetric(c.patientDelta, prometheus.GaugeValue, cost.Delta, c.dataset, r.Identity)
		}
	}
	c.scoped(ch, c.patientCapEps, c.patientCapDelta, rep.Limits.Patient.PerIdentity, rep.Limits.Patient.Dataset)
}

// collectRelations sends, per relation, the dataset's and each modeler identity's
// spent, remaining and (while any) reserved budget, and the limits in force.
func (c *budgetCollector) collectRelations(ch chan<- prometheus.Metric, rep ledger.Report) {
	gauge := func(d *prometheus.Desc, v float64, labels []string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, rr := range rep.Relations {
		for _, r := range append([]ledger.ReportRow{rr.Dataset}, rr.Identities...) {
			if ledger.IsReserved(r.Identity) {
				continue
			}
			labels := []string{c.dataset, r.Identity, string(rr.Relation)}
			spent, left := r.Spent.Cost(), r.Left.Cost()
			gauge(c.spentEps, spent.Epsilon, labels)
			gauge(c.spentDelta, spent.Delta, labels)
			gauge(c.remEps, left.Epsilon, labels)
			gauge(c.remDelta, left.Delta, labels)
			if r.Reservations > 0 {
				res := r.Reserved.Cost()
				gauge(c.resEps, res.Epsilon, labels)
				gauge(c.resDelta, res.Delta, labels)
			}
		}
	}
	c.scoped(ch, c.limitEps, c.limitDelta, rep.Limits.PerIdentity, rep.Limits.Dataset)
}

// scoped sends the identity's and the dataset's (ε, δ) of a limit or cap, each when
// its ε is set.
func (c *budgetCollector) scoped(ch chan<- prometheus.Metric, eps, delta *prometheus.Desc, identity, dataset ledger.Cost) {
	for _, s := range []struct {
		scope string
		cost  ledger.Cost
	}{{ledger.ScopeIdentity, identity}, {ledger.ScopeDataset, dataset}} {
		if s.cost.Epsilon > 0 {
			ch <- prometheus.MustNewConstMetric(eps, prometheus.GaugeValue, s.cost.Epsilon, c.dataset, s.scope)
			ch <- prometheus.MustNewConstMetric(delta, prometheus.GaugeValue, s.cost.Delta, c.dataset, s.scope)
		}
	}
}

// promLog passes the metrics handler's errors to the server's log.
type promLog struct{ log *zap.Logger }

func (l promLog) Println(v ...any) { l.log.Warn("metrics: " + fmt.Sprint(v...)) }

func (s *Server) serveMetrics() error {
	lis, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("server: metrics listener on %q: %w", s.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	// Errors while gathering (an unreachable ledger) are logged and counted in
	// promhttp_metric_handler_errors_total; the metrics gathered are still served.
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{
		ErrorLog: promLog{s.log}, ErrorHandling: promhttp.ContinueOnError, Registry: s.metrics}))
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
