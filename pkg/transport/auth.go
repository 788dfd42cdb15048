package transport

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Auth says how the server establishes a caller's identity, which is what the ledger
// charges. In order:
//
//  1. A client certificate verified against the configured CA (mutual TLS): the
//     identity is the certificate's subject common name.
//  2. A bearer token ("authorization: Bearer …") whose SHA-256 is in Tokens: the
//     identity the token file gives it. Tokens are stored only as hashes.
//  3. Only when neither certificates nor tokens are configured (development on
//     loopback): the identity the client names in the privbo-identity header.
//
// When certificates or tokens are configured, a request with neither is refused
// (Unauthenticated), and the privbo-identity header is ignored.
type Auth struct {
	// ClientCerts is true when the server verifies client certificates.
	ClientCerts bool
	// Tokens maps hex SHA-256 of a bearer token to its identity.
	Tokens map[string]string
}

func (a Auth) required() bool { return a.ClientCerts || len(a.Tokens) > 0 }

// HashToken returns the hex SHA-256 of a bearer token, the form a token file stores.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// LoadTokens reads a token file: one "IDENTITY SHA256HEX" per line; blank lines and
// lines starting with '#' are ignored.
func LoadTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transport: token file: %w", err)
	}
	defer f.Close()
	return ParseTokens(f, path)
}

// ParseTokens reads a token file's contents from r; path names it in errors.
func ParseTokens(r io.Reader, path string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("transport: %s:%d: want \"IDENTITY SHA256HEX\"", path, line)
		}
		id, sum := fields[0], strings.ToLower(fields[1])
		if err := ValidateIdentity(id); err != nil {
			return nil, fmt.Errorf("transport: %s:%d: %w", path, line, err)
		}
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("transport: %s:%d: the token hash must be 64 hex digits (see 'curator hash-token')", path, line)
		}
		if _, dup := out[sum]; dup {
			return nil, fmt.Errorf("transport: %s:%d: the same token hash appears twice", path, line)
		}
		out[sum] = id
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("transport: token file: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("transport: token file %s lists no tokens", path)
	}
	return out, nil
}

// errUnauthenticated carries a message for the client.
type errUnauthenticated struct{ msg string }

func (e errUnauthenticated) Error() string { return e.msg }

// identify returns the caller's identity under a.
func (a Auth) identify(ctx context.Context) (string, error) {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
			return certIdentity(ti.State.VerifiedChains[0][0])
		}
	}
	// ValueFromIncomingContext reads one header without copying the whole metadata map
	// (FromIncomingContext copies it on every call).
	if auth := metadata.ValueFromIncomingContext(ctx, "authorization"); len(auth) > 0 && len(a.Tokens) > 0 {
		if len(auth) != 1 || !strings.HasPrefix(auth[0], "Bearer ") {
			return "", errUnauthenticated{"send exactly one \"authorization: Bearer TOKEN\" header"}
		}
		sum := HashToken(strings.TrimPrefix(auth[0], "Bearer "))
		found := ""
		for h, id := range a.Tokens { // compare against every entry in constant time
			if subtle.ConstantTimeCompare([]byte(h), []byte(sum)) == 1 {
				found = id
			}
		}
		if found == "" {
			return "", errUnauthenticated{"unknown bearer token"}
		}
		return found, nil
	}
	if a.required() {
		return "", errUnauthenticated{"this curator requires a client certificate from its CA or a bearer token"}
	}
	id, err := identityFromMetadata(ctx)
	if err != nil {
		return "", errUnauthenticated{err.Error()}
	}
	return id, nil
}

func certIdentity(c *x509.Certificate) (string, error) {
	id := c.Subject.CommonName
	if err := ValidateIdentity(id); err != nil {
		return "", errUnauthenticated{fmt.Sprintf("client certificate common name is not a usable identity: %v", err)}
	}
	return id, nil
}

// TrustsIdentityHeader reports whether a takes the caller's identity from the
// privbo-identity header it sends, which any caller can set to anything: when neither
// client certificates nor tokens are configured.
func (a Auth) TrustsIdentityHeader() bool { return !a.required() }
