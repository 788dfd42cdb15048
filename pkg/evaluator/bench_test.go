package evaluator

import (
	"context"
	"testing"
	"time"
)

// BenchmarkEvaluate measures one run of a trivial shell script: the
// per-evaluation overhead of starting a process.
func BenchmarkEvaluate(b *testing.B) {
	dir := b.TempDir()
	p, err := New(Config{Command: []string{"sh", "-c", `read -r line; echo '{"score": 1}'`}, Dir: dir, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := p.Evaluate(context.Background(), input); err != nil {
			b.Fatal(err)
		}
	}
}
