package ledgertest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// BenchLimits never bind: the benchmarks measure the check-and-charge
// transaction itself.
var BenchLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1e12, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 1e12, Delta: 0.5}}

// BenchCharge runs b.N charges with distinct keys, sequentially or from
// GOMAXPROCS goroutines (b.RunParallel), and reports charges per second.
func BenchCharge(b *testing.B, s *ledger.Ledger) {
	result := make([]byte, 256)
	var next atomic.Int64
	var datasets atomic.Int64
	charge := func(dataset string) {
		i := next.Add(1)
		c := ledger.Charge{Account: ledger.Account{Dataset: dataset, Identity: fmt.Sprint("id", i%16)}, Key: fmt.Sprint("k", i), Kind: "query", Relation: ledger.RelationRecord,
			Cost: ledger.Cost{Epsilon: 1e-6, Delta: 1e-12}, Result: result}
		if _, err := s.Charge(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			charge("bench")
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
	})
	// One dataset: its charges are serialised by design.
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4) // 4×GOMAXPROCS goroutines: waiting on fsync, not CPU
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				charge("bench")
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
	})
	// One dataset per goroutine: PostgreSQL runs them concurrently; SQLite
	// still has one writer per file.
	b.Run("parallel-datasets", func(b *testing.B) {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			dataset := fmt.Sprint("bench", datasets.Add(1))
			for pb.Next() {
				charge(dataset)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
	})
}

// BenchChargeIdentities measures one charge (sequential, one identity) on a
// dataset that already holds n other identities, each with a record under every
// relation and a whole-patient total, filled in transactions of 500 charges
// (ChargeAll). A charge reads and writes the totals of its own identity and of
// the dataset only, so its cost must not grow with n.
func BenchChargeIdentities(b *testing.B, s *ledger.Ledger, n int) {
	const batch = 500
	var cs []ledger.Charge
	flush := func() {
		if len(cs) == 0 {
			return
		}
		if _, err := s.ChargeAll(ctx, cs); err != nil {
			b.Fatal(err)
		}
		cs = cs[:0]
	}
	for i := range n {
		for _, rel := range ledger.Relations {
			cs = append(cs, ledger.Charge{Account: ledger.Account{Dataset: "bench", Identity: fmt.Sprint("other", i)}, Key: string(rel),
				Kind: "fill", Relation: rel, Cost: ledger.Cost{Epsilon: 1e-6, Delta: 1e-12}, Patient: &ledger.PatientCost{Epsilon: 1e-5, Delta: 1e-12}})
		}
		if len(cs) >= batch {
			flush()
		}
	}
	flush()
	result := make([]byte, 256)
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		c := ledger.Charge{Account: ledger.Account{Dataset: "bench", Identity: "acme"}, Key: fmt.Sprint("k", i), Kind: "query", Relation: ledger.RelationRecord,
			Cost: ledger.Cost{Epsilon: 1e-6, Delta: 1e-12}, Result: result}
		if _, err := s.Charge(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
}
