package ledgertest

import (
	"testing"

	"github.com/privbo/privbo/pkg/ledger/pgledger"
)

// BenchmarkAnswersPostgres: concurrent fresh query answers (docs/EXPERIMENTS.md,
// "Fresh answers per second on both engines").
func BenchmarkAnswersPostgres(b *testing.B) {
	conn := requirePostgres(b)
	s, err := pgledger.Open(ctx, testDSN(), pgledger.Options{Schema: randomSchema(b, conn), CallTimeout: testCallTimeout}, StdLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	BenchAnswers(b, s)
}
