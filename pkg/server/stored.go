package server

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storedCollector reports, at every scrape, what the releases of the dataset store for
// replay (the dataset's total, identity "", and each identity's, recorded and
// reserved) and the stored-bytes quotas in force.
type storedCollector struct {
	s                                *Server
	dataset                          string
	stored, count, quotaID, quotaSet *prometheus.Desc
}

func newStoredCollector(s *Server, dataset string) *storedCollector {
	return &storedCollector{s: s, dataset: dataset,
		stored: prometheus.NewDesc("privbo_stored_bytes", "Bytes the releases keep for replay, recorded and reserved by releases being computed; "+
			"identity=\"\" is the dataset's total.", []string{"dataset", "identity"}, nil),
		count:    prometheus.NewDesc("privbo_stored_releases", "Releases that keep bytes for replay; identity=\"\" is the dataset's total.", []string{"dataset", "identity"}, nil),
		quotaID:  prometheus.NewDesc("privbo_stored_bytes_quota_identity", "The stored-bytes quota of each identity.", []string{"dataset"}, nil),
		quotaSet: prometheus.NewDesc("privbo_stored_bytes_quota_dataset", "The stored-bytes quota of the dataset, all identities together.", []string{"dataset"}, nil),
	}
}

func (c *storedCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.stored, c.count, c.quotaID, c.quotaSet} {
		ch <- d
	}
}

func (c *storedCollector) Collect(ch chan<- prometheus.Metric) {
	q := c.s.curator.StoredQuota()
	ch <- prometheus.MustNewConstMetric(c.quotaID, prometheus.GaugeValue, float64(q.PerIdentity), c.dataset)
	ch <- prometheus.MustNewConstMetric(c.quotaSet, prometheus.GaugeValue, float64(q.Dataset), c.dataset)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := c.s.ledger.Stored(ctx, c.dataset)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.stored, fmt.Errorf("server: reading the stored bytes: %w", err))
		return
	}
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(c.stored, prometheus.GaugeValue, float64(r.Bytes+r.Reserved), c.dataset, r.Identity)
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(r.Releases), c.dataset, r.Identity)
	}
}
