package config

import (
	"strings"

	"github.com/privbo/privbo/pkg/transport"
)

// identities is a comma-separated list of identities as a flag value.
type identities []string

func (l *identities) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *identities) Set(s string) error {
	*l = nil
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			if err := transport.ValidateIdentity(id); err != nil {
				return err
			}
			*l = append(*l, id)
		}
	}
	return nil
}

// checkConsole refuses a console that would show true outcomes to anyone but the
// operators: off loopback, and wherever operators are named, it needs TLS
// (the curator's certificate and key) and client certificates from the curator's CA,
// and serves only those whose identity is in ConsoleOperators.
func checkConsole(cfg Config) error {
	if cfg.ConsoleListen == "" {
		if len(cfg.ConsoleOperators) > 0 {
			return cfg.Refuse(&cfg.ConsoleOperators, "console operators are named but no console is served: set "+cfg.Flag(&cfg.ConsoleListen)+" too, or leave "+cfg.Flag(&cfg.ConsoleOperators)+" unset")
		}
		return nil
	}
	if transport.IsLoopback(cfg.ConsoleListen) && len(cfg.ConsoleOperators) == 0 {
		return nil
	}
	if cfg.TLS.CertFile == "" || cfg.TLS.ClientCAFile == "" || len(cfg.ConsoleOperators) == 0 {
		return cfg.Refuse(&cfg.ConsoleListen, "refusing to serve the console on "+cfg.ConsoleListen+" without TLS and an operator's client certificate: it shows true outcomes. "+
			"Serve it on a loopback address without "+cfg.Flag(&cfg.ConsoleOperators)+", or set "+cfg.Flag(&cfg.TLS.CertFile)+", "+cfg.Flag(&cfg.TLS.KeyFile)+", "+cfg.Flag(&cfg.TLS.ClientCAFile)+
			" and "+cfg.Flag(&cfg.ConsoleOperators)+" (the operators' certificates' identities)")
	}
	return nil
}
