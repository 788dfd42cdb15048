package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/console"
	"github.com/privbo/privbo/pkg/curator"
)

// serveConsole starts the operator's console on cfg.ConsoleListen (config.Config
// checked its security): over TLS with required client certificates when operators
// are named, tlsCfg being the curator's own; plain HTTP on loopback otherwise.
func (s *Server) serveConsole(tlsCfg *tls.Config) error {
	cfg := s.cfg
	lis, err := net.Listen("tcp", cfg.ConsoleListen)
	if err != nil {
		return fmt.Errorf("server: console listener on %q: %w", cfg.ConsoleListen, err)
	}
	if len(cfg.ConsoleOperators) > 0 {
		tc := tlsCfg.Clone()
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		lis = tls.NewListener(lis, tc)
	}
	cc := console.Config{Dataset: cfg.DatasetID, Ledger: s.ledger, Limits: s.ledger.Limits(), Operators: cfg.ConsoleOperators}
	if s.jobs != nil {
		cc.Jobs = s.jobs
	}
	if m := cfg.Evaluation.Mode; m == "" || m == curator.EvaluateColumn {
		cc.Outcomes = s.ds.Y
	}
	s.consoleLis = lis
	s.consoleSrv = &http.Server{Handler: console.Handler(cc), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.consoleSrv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("console listener stopped", zap.Error(err))
		}
	}()
	s.log.Info("operator console serving", zap.String("addr", lis.Addr().String()), zap.Bool("tls", len(cfg.ConsoleOperators) > 0))
	return nil
}

// ConsoleAddr is the console's address ("" when it is off).
func (s *Server) ConsoleAddr() string {
	if s.consoleLis == nil {
		return ""
	}
	return s.consoleLis.Addr().String()
}

func (s *Server) closeConsole() {
	if s.consoleSrv != nil {
		s.consoleSrv.Close()
	}
}
