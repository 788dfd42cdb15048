package transport

import "crypto/tls"

// ServerSecurity names what secures a server: its TLS certificate and key (none:
// plaintext), the CA of its callers' certificates (mutual TLS) and its bearer-token file
// (LoadTokens). Which of them may serve where is the configuration's to check.
type ServerSecurity struct{ CertFile, KeyFile, ClientCAFile, TokensFile string }

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
