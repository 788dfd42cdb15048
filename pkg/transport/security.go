package transport

import "crypto/tls"

// ServerSecurity names the material that secures a server: its TLS certificate and
// key (none: plaintext), the CA whose client certificates identify callers (mutual
// TLS) and the bearer-token file (LoadTokens). Which combinations may serve where is
// the configuration's to check; ServerSecurity only loads them.
type ServerSecurity struct {
	CertFile, KeyFile string
	ClientCAFile      string
	TokensFile        string
}

// Credentials loads s: the TLS configuration (nil: plaintext) and the authentication
// policy of the callers.
func (s ServerSecurity) Credentials() (*tls.Config, Auth, error) {
	var auth Auth
	if s.TokensFile != "" {
		tokens, err := LoadTokens(s.TokensFile)
		if err != nil {
			return nil, auth, err
		}
		auth.Tokens = tokens
	}
	if s.CertFile == "" && s.KeyFile == "" {
		return nil, auth, nil
	}
	tlsCfg, err := ServerTLS(s.CertFile, s.KeyFile, s.ClientCAFile, len(auth.Tokens) > 0)
	if err != nil {
		return nil, auth, err
	}
	auth.ClientCerts = s.ClientCAFile != ""
	return tlsCfg, auth, nil
}
