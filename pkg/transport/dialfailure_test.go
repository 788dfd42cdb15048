package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/devca"
)

// TestDiagnoseDialFailures dials real loopback servers, one with mutual TLS and one in
// plaintext, the ways a person gets wrong, and checks that the first call's error names
// the cause (not gRPC's "broken pipe" or "server preface"), still reads as UNAVAILABLE,
// and that a right dial succeeds.
func TestDiagnoseDialFailures(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, other} {
		if err := devca.Create(d, []string{"127.0.0.1"}, []string{"acme"}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	f := filepath.Join
	stls, err := ServerTLS(f(dir, devca.ServerFile), f(dir, devca.ServerKeyFile), f(dir, devca.CAFile), false)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(c ServerConfig) string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(ServerOptions(c)...)
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		return lis.Addr().String()
	}
	tlsAddr, plainAddr := serve(ServerConfig{TLS: stls}), serve(ServerConfig{})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	client := func(ca, cert, key string) ClientConfig {
		c, err := ClientTLS(ca, cert, key, "")
		if err != nil {
			t.Fatal(err)
		}
		return ClientConfig{TLS: c}
	}
	ca, acme, acmeKey := f(dir, devca.CAFile), f(dir, "acme.pem"), f(dir, "acme-key.pem")
	for _, tc := range []struct {
		name, addr string
		cfg        ClientConfig
		want       DialFailure
	}{
		{"plaintext to TLS", tlsAddr, ClientConfig{}, ServerWantsTLS},
		{"no client certificate", tlsAddr, client(ca, "", ""), ClientCertMissing},
		{"another CA's client certificate", tlsAddr, client(ca, f(other, "acme.pem"), f(other, "acme-key.pem")), ClientCertRefused},
		{"another CA trusted", tlsAddr, client(f(other, devca.CAFile), acme, acmeKey), ServerNotTrusted},
		{"TLS to plaintext", plainAddr, client(ca, "", ""), ServerWantsPlaintext},
		{"nothing listening", closedAddr, ClientConfig{}, NothingListens},
		{"right", tlsAddr, client(ca, acme, acmeKey), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := Dial(tc.addr, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var de *DialError
			if !errors.As(err, &de) || de.Failure != tc.want || de.Addr != tc.addr {
				t.Fatalf("Check: %v, want a DialError %q at %s", err, tc.want, tc.addr)
			}
			if status.Code(err) != codes.Unavailable || !strings.HasPrefix(err.Error(), string(tc.want)) {
				t.Errorf("Check: %v (code %v), want UNAVAILABLE saying %q first", err, status.Code(err), tc.want)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if n := len([]rune(line)); n > 300 {
					t.Errorf("a line of %d characters: %s", n, line)
				}
			}
		})
	}
}

// TestTarget: a bare host is dialled at DefaultPort, and says so; anything with a port
// or a resolver scheme is left as it is.
func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		added    bool
	}{
		{"localhost", "localhost:443", true},
		{"10.0.0.1", "10.0.0.1:443", true},
		{"[::1]", "[::1]:443", true},
		{"localhost:7070", "localhost:7070", false},
		{"[::1]:7070", "[::1]:7070", false},
		{"dns:///curator:7070", "dns:///curator:7070", false},
		{"unix:/run/privbo.sock", "unix:/run/privbo.sock", false},
	} {
		if got, added := Target(tc.in); got != tc.want || added != tc.added {
			t.Errorf("Target(%q) = %q, %v, want %q, %v", tc.in, got, added, tc.want, tc.added)
		}
	}
}

// TestDiagnoseLeavesCuratorStatuses: an UNAVAILABLE the curator sent (with details, such
// as its LEDGER_UNAVAILABLE ErrorInfo), one whose cause is not known and any other code
// are returned as they are, however their text reads.
func TestDiagnoseLeavesCuratorStatuses(t *testing.T) {
	sent, err := status.New(codes.Unavailable, "ledger: dial tcp 127.0.0.1:5432: connect: connection refused").
		WithDetails(&errdetails.ErrorInfo{Reason: "LEDGER_UNAVAILABLE", Domain: "privbo.curator.v1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []error{sent.Err(), status.Error(codes.Unavailable, "transport is closing"),
		status.Error(codes.ResourceExhausted, "connection refused"), errors.New("connection refused")} {
		if got := Diagnose(in, "127.0.0.1:7070", ClientConfig{}); got != in {
			t.Errorf("Diagnose(%v) = %v, want it as it was", in, got)
		}
	}
}

// TestDiagnoseResetByPeer: when the server closes a refused TLS 1.3 connection before the
// client reads its alert, the client sees "connection reset by peer" instead of the
// alert's text (it depends on timing, and happened under load); the advice must be the
// same as for the alert.
func TestDiagnoseResetByPeer(t *testing.T) {
	reset := status.Error(codes.Unavailable, "connection error: desc = \"transport: authentication handshake failed: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer\"")
	for _, tc := range []struct {
		name string
		cfg  ClientConfig
		want DialFailure
	}{
		{"TLS without a certificate", ClientConfig{TLS: &tls.Config{}}, ClientCertMissing},
		{"TLS with a refused certificate", ClientConfig{TLS: &tls.Config{Certificates: []tls.Certificate{{}}}}, ClientCertRefused},
	} {
		var de *DialError
		if err := Diagnose(reset, "127.0.0.1:2", tc.cfg); !errors.As(err, &de) || de.Failure != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A reset later in a session (a curator restart, an idle NAT) is no certificate problem.
	later := status.Error(codes.Unavailable, "connection error: desc = \"read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer\"")
	var de *DialError
	if err := Diagnose(later, "127.0.0.1:2", ClientConfig{TLS: &tls.Config{}}); errors.As(err, &de) {
		t.Errorf("a reset after the handshake was diagnosed as %q", de.Failure)
	}
}
