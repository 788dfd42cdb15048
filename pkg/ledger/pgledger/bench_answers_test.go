package pgledger

import (
	"testing"

	"github.com/privbo/privbo/pkg/ledger/ledgertest"
)

// BenchmarkAnswersPostgres: concurrent fresh query answers (docs/EXPERIMENTS.md,
// "Fresh answers per second on both engines").
func BenchmarkAnswersPostgres(b *testing.B) {
	conn := requirePostgres(b)
	s, err := Open(ctx, testDSN(), Options{Schema: randomSchema(b, conn), CallTimeout: testCallTimeout}, ledgertest.StdLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ledgertest.BenchAnswers(b, s)
}
