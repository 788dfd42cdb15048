package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/privbo/privbo/pkg/ledger"
)

// storedDescs are the series of what the releases of the dataset store for replay (the
// dataset's total, identity "", and each identity's, recorded and reserved). The budget
// collector sends them from the same ledger report as the budgets
// (ledger.Report.Stored), so that a scrape reads the ledger once.
type storedDescs struct {
	bytes, count *prometheus.Desc
}

func newStoredDescs() storedDescs {
	return storedDescs{
		bytes: prometheus.NewDesc("privbo_stored_bytes", "Bytes the releases keep for replay, recorded and reserved by releases being computed; "+
			"identity=\"\" is the dataset's total.", []string{"dataset", "identity"}, nil),
		count: prometheus.NewDesc("privbo_stored_releases", "Releases that keep bytes for replay; identity=\"\" is the dataset's total.", []string{"dataset", "identity"}, nil),
	}
}

// collectStored sends the stored-bytes gauges of rows, the report's.
func (c *budgetCollector) collectStored(ch chan<- prometheus.Metric, rows []ledger.StoredRow) {
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(c.stored.bytes, prometheus.GaugeValue, float64(r.Bytes+r.Reserved), c.dataset, r.Identity)
		ch <- prometheus.MustNewConstMetric(c.stored.count, prometheus.GaugeValue, float64(r.Releases), c.dataset, r.Identity)
	}
}

// storedQuotaGauges are the stored-bytes quotas in force: settings of this curator,
// fixed while it runs.
func (s *Server) storedQuotaGauges(dataset string) []prometheus.Collector {
	q := s.curator.StoredQuota()
	gauge := func(name, help string, v int64) prometheus.Collector {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"dataset": dataset}})
		g.Set(float64(v))
		return g
	}
	return []prometheus.Collector{
		gauge("privbo_stored_bytes_quota_identity", "The stored-bytes quota of each identity.", q.PerIdentity),
		gauge("privbo_stored_bytes_quota_dataset", "The stored-bytes quota of the dataset, all identities together.", q.Dataset),
	}
}
