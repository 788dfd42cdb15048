// Package testlog is a log sink for tests: a buffer that a logger writes to from many
// goroutines while the test reads it, and a JSON logger at debug level writing into one,
// so that a test can scan what a component logged (for instance that no data row, seed
// or projection reaches the operator's log).
package testlog

import (
	"bytes"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Buffer collects what is written to it; it is safe for concurrent use and is a
// zapcore.WriteSyncer.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Sync does nothing: the buffer holds everything written.
func (b *Buffer) Sync() error { return nil }

// Bytes returns a copy of everything written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// New returns a logger writing JSON lines at debug level (the production encoder, as
// cmd/curator's) into a new Buffer, and the buffer.
func New() (*zap.Logger, *Buffer) {
	b := &Buffer{}
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), b, zapcore.DebugLevel)), b
}
