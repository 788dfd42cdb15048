// Package logging builds the zap loggers of privbo's binaries: JSON lines on stderr with
// ISO-8601 times, or a console encoder for people.
package logging

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger at level ("debug", "info", "warn", "error") in format ("json" or
// "console") writing to stderr.
func New(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("logging: %w", err)
	}
	var cfg zap.Config
	switch format {
	case "json", "":
		cfg = zap.NewProductionConfig()
	case "console":
		cfg = zap.NewDevelopmentConfig()
	default:
		return nil, fmt.Errorf("logging: unknown format %q (want json or console)", format)
	}
	// No stack of the logging call at error level: that call is always the RPC
	// interceptor or a handler's error path, whose stack says nothing about the
	// failure; a recovered panic logs the panic's own stack (package transport).
	cfg.DisableStacktrace = true
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	cfg.Sampling = nil
	return cfg.Build()
}
