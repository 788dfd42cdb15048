package ledgertest

import (
	"path/filepath"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// BenchmarkAnswersSQLite: concurrent fresh query answers (docs/EXPERIMENTS.md,
// "Fresh answers per second on both engines").
func BenchmarkAnswersSQLite(b *testing.B) {
	s, err := ledger.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"), StdLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	BenchAnswers(b, s)
}
