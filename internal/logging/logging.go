// Package logging builds the zap loggers of privbo's binaries: JSON lines on stderr with
// ISO-8601 times, or text lines for people.
package logging

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Format is the format of log lines for format ("text", "json", or "" for text when
// standard error is a terminal and json otherwise; "console" is text's older name).
func Format(format string) (string, error) {
	switch format {
	case "text", "console":
		return "text", nil
	case "json":
		return "json", nil
	case "":
		if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "text", nil
		}
		return "json", nil
	}
	return "", fmt.Errorf("logging: unknown format %q (want text or json)", format)
}

// New returns a logger at level ("debug", "info", "warn", "error") in format (Format)
// writing to stderr: each event once, in one format.
func New(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("logging: %w", err)
	}
	if format, err = Format(format); err != nil {
		return nil, err
	}
	cfg := zap.NewProductionConfig()
	if format == "text" {
		cfg.Encoding = "console"
		cfg.DisableCaller = true
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
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
