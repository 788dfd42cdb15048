package transport

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultPort is the port gRPC dials when an address names none.
const DefaultPort = "443"

// Target returns addr with DefaultPort added when it is a bare host name or address
// (no port, no resolver scheme), and whether it was added.
func Target(addr string) (string, bool) {
	if strings.Contains(addr, "://") || strings.HasPrefix(addr, "unix:") {
		return addr, false
	}
	var ae *net.AddrError
	if _, _, err := net.SplitHostPort(addr); errors.As(err, &ae) && ae.Err == "missing port in address" {
		return net.JoinHostPort(strings.Trim(addr, "[]"), DefaultPort), true
	}
	return addr, false
}

// DialFailure is why a client could not talk to a curator at all, as far as the error
// of a call and what the client sent tell it, in words.
type DialFailure string

// The failures Diagnose tells apart.
const (
	NothingListens       DialFailure = "nothing accepts connections at that address"
	ServerWantsTLS       DialFailure = "the curator speaks TLS and this client dialled plaintext"
	ServerWantsPlaintext DialFailure = "the curator serves plaintext and this client dialled TLS"
	ServerNotTrusted     DialFailure = "the curator's certificate is not signed by the CA this client trusts, or is not issued for the name dialled"
	ClientCertMissing    DialFailure = "the curator requires a client certificate and this client sent none"
	ClientCertRefused    DialFailure = "the curator refused this client's certificate (not signed by a CA it trusts, expired, or not for client use)"
)

// DialError is an UNAVAILABLE call with its likely cause; it unwraps to the call's error,
// so status.Code still reads it.
type DialError struct {
	Failure DialFailure
	Addr    string // the address dialled, with the port used
	Err     error
}

// Error is the cause, then on a line of its own gRPC's words, cut to 200 characters
// (Unwrap has them whole).
func (e *DialError) Error() string {
	detail := []rune(status.Convert(e.Err).Message())
	if len(detail) > 200 {
		detail = append(detail[:199], '…')
	}
	return fmt.Sprintf("%s (%s).\n  gRPC says: %s", e.Failure, e.Addr, string(detail))
}

func (e *DialError) Unwrap() error { return e.Err }

// Diagnose returns err, when it is an UNAVAILABLE of the connection (not one the curator
// sent, which carries details such as its ErrorInfo) with a failure that the error's text
// and what the client sent (cfg) point to, as a *DialError; other errors as they are. The
// text is gRPC's and the TLS stack's: a refused client certificate shows as "certificate
// required", "bad certificate" or, when the server closes first, "broken pipe" or,
// during the handshake, "connection reset by peer" (which depends on timing); a reset
// later in a session is not read as a certificate problem.
func Diagnose(err error, addr string, cfg ClientConfig) error {
	if status.Code(err) != codes.Unavailable {
		return err
	}
	var de *DialError
	if errors.As(err, &de) {
		return err
	}
	st := status.Convert(err)
	if len(st.Details()) > 0 {
		return err
	}
	msg := st.Message()
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(msg, x) {
				return true
			}
		}
		return false
	}
	var f DialFailure
	switch {
	case has("connection refused"):
		f = NothingListens
	case cfg.TLS == nil && has("error reading server preface"):
		f = ServerWantsTLS
	case cfg.TLS == nil:
	case has("first record does not look like a TLS handshake"):
		f = ServerWantsPlaintext
	case has("x509:", "failed to verify certificate"):
		f = ServerNotTrusted
	case has("certificate required", "bad certificate", "unknown certificate authority", "expired certificate",
		"broken pipe", "error reading server preface"),
		has("authentication handshake failed") && has("connection reset by peer"):
		f = ClientCertRefused
		if len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetClientCertificate == nil {
			f = ClientCertMissing
		}
	}
	if f == "" {
		return err
	}
	target, _ := Target(addr)
	return &DialError{Failure: f, Addr: target, Err: err}
}
