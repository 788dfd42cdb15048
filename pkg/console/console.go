// Package console serves the privacy officer's read-only page of a curator: the
// whole-patient total of each identity and of the dataset against its caps, each
// neighbour relation's spent and left budget, the history of the limits in force,
// the spend over time as an inline SVG chart, the latest releases, the jobs, and each
// identity's true outcomes (what `curator results` prints). The page is rendered on
// the server with html/template, with no script (its Content-Security-Policy allows
// none).
//
// It shows data values, so it is the curator operator's alone: package config refuses
// a console off loopback without TLS and client certificates, and Handler, given
// Operators, serves only requests whose verified client certificate names one of them.
// It releases nothing and costs no privacy budget.
package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
)

// Ledger is what the console reads of the privacy ledger.
type Ledger interface {
	Report(ctx context.Context, dataset string, limits ledger.Limits) (ledger.Report, error)
	RecordedLimits(ctx context.Context, dataset string) (ledger.RecordedLimits, bool, error)
	LimitsHistory(ctx context.Context, dataset string) ([]ledger.RecordedLimits, error)
	curator.Records
}

// Jobs lists an identity's jobs, newest first.
type Jobs interface {
	List(ctx context.Context, identity string) ([]jobs.Job, error)
}

// Config is what the console reads and whom it serves.
type Config struct {
	Dataset string
	Ledger  Ledger
	// Limits are this curator's, reported against when the ledger has none recorded.
	Limits ledger.Limits
	// Jobs is nil when the curator runs no jobs.
	Jobs Jobs
	// Outcomes are the rows' true outcomes when the curator evaluates rows from its
	// data file's target; nil: the curator's recorded evaluations.
	Outcomes []float64
	// Operators, when set, are the identities (client certificates' common names)
	// served; the listener must then verify client certificates (TLS).
	Operators []string
}

// Handler serves the page at / (GET and HEAD only).
func Handler(cfg Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/":
			http.NotFound(w, r)
			return
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			http.Error(w, "The console is read-only: use GET.", http.StatusMethodNotAllowed)
			return
		case !cfg.operator(r):
			http.Error(w, "This page is for the curator's operators: present a client certificate whose identity is in the curator's operator list.", http.StatusForbidden)
			return
		}
		p, err := cfg.read(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		w.Header().Set("Cache-Control", "no-store")
		if err := pageTmpl.Execute(w, p); err != nil {
			http.Error(w, "console: rendering the page: "+err.Error(), http.StatusInternalServerError)
		}
	})
}

// operator reports whether r may read the page: any request when no operators are
// named (a loopback console), else one whose verified client certificate names one.
func (cfg Config) operator(r *http.Request) bool {
	if len(cfg.Operators) == 0 {
		return true
	}
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return false
	}
	return slices.Contains(cfg.Operators, r.TLS.VerifiedChains[0][0].Subject.CommonName)
}

// read gathers the page's figures from the ledger and the job store.
func (cfg Config) read(ctx context.Context) (*page, error) {
	limits := cfg.Limits
	rec, ok, err := cfg.Ledger.RecordedLimits(ctx, cfg.Dataset)
	if err != nil {
		return nil, fmt.Errorf("console: reading the limits in force: %w", err)
	}
	if ok {
		limits = rec.Limits
	}
	rep, err := cfg.Ledger.Report(ctx, cfg.Dataset, limits)
	if err != nil {
		return nil, fmt.Errorf("console: reading the ledger's totals: %w", err)
	}
	history, err := cfg.Ledger.LimitsHistory(ctx, cfg.Dataset)
	if err != nil {
		return nil, fmt.Errorf("console: reading the limits history: %w", err)
	}
	entries, err := cfg.Ledger.Entries(ctx, cfg.Dataset)
	if err != nil {
		return nil, fmt.Errorf("console: reading the ledger's records: %w", err)
	}
	p := &page{Dataset: cfg.Dataset, Generated: time.Now().UTC().Format("2006-01-02 15:04:05 UTC"), Limits: limitRows(limits, history)}
	p.patient(rep)
	p.relations(rep)
	p.releases(entries)
	p.Chart = spendChart(entries, limits.Patient.Dataset.Epsilon)
	p.Jobs = table{Head: []string{"job", "identity", "kind", "state", "ε", "created (UTC)", "error"}, Note: "This curator runs no jobs."}
	if cfg.Jobs != nil {
		p.Jobs.Note = ""
		for _, r := range rep.Patient.Identities {
			js, err := cfg.Jobs.List(ctx, r.Identity)
			if err != nil {
				return nil, fmt.Errorf("console: listing the jobs: %w", err)
			}
			p.jobs(js)
		}
		if len(p.Jobs.Rows) == 0 {
			p.Jobs.Note = "No job yet."
		}
	}
	if err := p.studies(ctx, cfg); err != nil {
		return nil, err
	}
	return p, nil
}
