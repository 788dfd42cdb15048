package config

import (
	"fmt"

	"github.com/privbo/privbo/pkg/transport"
)

// checkSecurity refuses TLS material that cannot serve (client certificates without
// TLS, half a key pair), plaintext on addresses other than loopback unless explicitly
// allowed, and, there, identities taken from the privbo-identity header — neither
// client certificates nor bearer tokens authenticate the callers
// (transport.Auth.TrustsIdentityHeader), with plaintext or TLS alike — unless
// explicitly trusted. transport loads the material (transport.ServerSecurity.Credentials).
func checkSecurity(cfg Config) error {
	t, loopback := cfg.TLS, transport.IsLoopback(cfg.Listen)
	plaintext := t.CertFile == "" && t.KeyFile == ""
	switch {
	case plaintext && t.ClientCAFile != "":
		return cfg.Refuse(&cfg.TLS.ClientCAFile, "client certificates ("+cfg.Flag(&cfg.TLS.ClientCAFile)+") need TLS: set "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile))
	case plaintext && !loopback && !cfg.AllowPlaintext:
		return cfg.Refuse(&cfg.AllowPlaintext, fmt.Sprintf("refusing to serve plaintext on %s ("+cfg.Flag(&cfg.Listen)+"), which is not a loopback address: set "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile)+", "+
			"or "+cfg.Flag(&cfg.AllowPlaintext)+" only behind a TLS-terminating proxy", cfg.Listen))
	case (t.CertFile == "") != (t.KeyFile == ""):
		missing := &cfg.TLS.KeyFile
		if t.CertFile == "" {
			missing = &cfg.TLS.CertFile
		}
		return cfg.Refuse(missing, "TLS needs both the certificate and its private key: set "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile))
	}
	if t.ClientCAFile != "" || cfg.TokensFile != "" || loopback || cfg.TrustIdentityHeaderFromNetwork {
		return nil
	}
	return cfg.Refuse(&cfg.TrustIdentityHeaderFromNetwork, fmt.Sprintf("refusing to serve on %s ("+cfg.Flag(&cfg.Listen)+"), which is not a loopback address, without authenticating callers: "+
		"each would name its own identity in the %s header, so anyone who can reach the address could spend any identity's budget. "+
		"Give client certificates ("+cfg.Flag(&cfg.TLS.ClientCAFile)+", with "+cfg.Flag(&cfg.TLS.CertFile)+" and "+cfg.Flag(&cfg.TLS.KeyFile)+") or bearer tokens ("+cfg.Flag(&cfg.TokensFile)+"); "+
		"or set "+cfg.Flag(&cfg.TrustIdentityHeaderFromNetwork)+" only if everything that can reach %s authenticates its callers and sets the header itself", cfg.Listen, transport.IdentityHeader, cfg.Listen))
}
