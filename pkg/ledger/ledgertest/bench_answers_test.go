package ledgertest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// BenchAnswers measures concurrent fresh query answers as a serving curator
// records them: zero-cost records of kind "query" with an 8-byte result, from 16
// identities whose answers are paid (one charge each, made first), on one dataset
// with recorded limits and one live reservation (a release being computed), from
// 4×GOMAXPROCS goroutines. It reports answers per second.
func BenchAnswers(b *testing.B, s *ledger.Ledger) {
	const dataset, identities = "bench", 16
	if _, err := s.RecordLimits(ctx, dataset, false); err != nil {
		b.Fatal(err)
	}
	for i := range identities {
		a := ledger.Account{Dataset: dataset, Identity: fmt.Sprint("id", i)}
		if _, err := s.Charge(ctx, ledger.Charge{Account: a, Key: "query-answers", Kind: "query-answers",
			Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: 0.01, Delta: 1e-7}}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Reserve(ctx, []ledger.Charge{{Account: ledger.Account{Dataset: dataset, Identity: "computing"}, Key: "projection",
		Kind: "projection", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 0.1, Delta: 1e-6}}}, ledger.Hold{}); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	result := make([]byte, 8)
	b.SetParallelism(4) // waiting on the database, not the CPU
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			c := ledger.Charge{Account: ledger.Account{Dataset: dataset, Identity: fmt.Sprint("id", i%identities)},
				Key: fmt.Sprint("query/", i), Kind: "query", Relation: ledger.RelationRecord, Result: result}
			if _, err := s.Charge(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "answers/s")
}
