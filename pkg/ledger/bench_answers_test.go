package ledger_test

import (
	"path/filepath"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/ledgertest"
)

// BenchmarkAnswersSQLite: concurrent fresh query answers (docs/EXPERIMENTS.md,
// "Fresh answers per second on both engines").
func BenchmarkAnswersSQLite(b *testing.B) {
	s, err := ledger.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"), ledgertest.StdLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ledgertest.BenchAnswers(b, s)
}
