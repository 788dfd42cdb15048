package testlog

import (
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
)

// TestBufferConcurrent writes from many goroutines while reading (run with -race) and
// checks that every line arrives whole.
func TestBufferConcurrent(t *testing.T) {
	log, buf := New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 50 {
				log.Debug("line", zap.Int("g", g), zap.Int("k", k))
				_ = buf.Bytes()
			}
		})
	}
	wg.Wait()
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 8*50 {
		t.Fatalf("%d lines, want %d", len(lines), 8*50)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"level":"debug"`) || !strings.HasSuffix(l, "}") || !strings.Contains(l, `"msg":"line"`) {
			t.Fatalf("line %q is not one whole JSON debug record", l)
		}
	}
	if string(buf.Bytes()) != buf.String() {
		t.Error("Bytes and String differ")
	}
}
