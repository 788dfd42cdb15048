package server

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/testlog"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/transport"
)

// nonLoopbackAddrs are addresses to listen on that are not loopback: the wildcard
// address and, when this machine has one, an address of one of its interfaces.
func nonLoopbackAddrs(t *testing.T) []string {
	addrs := []string{"0.0.0.0:0", "[::]:0", ":0"}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Logf("no interface addresses: %v", err)
		return addrs
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return append(addrs, net.JoinHostPort(n.IP.String(), "0"))
		}
	}
	return addrs
}

// TestIdentityHeaderOffLoopback: off loopback, Start refuses to take identities from
// the privbo-identity header — with plaintext (even when plaintext is allowed) and with
// TLS that authenticates no client alike — unless TrustIdentityHeaderFromNetwork says
// to, and then warns; with tokens or client certificates it starts; on loopback it
// starts and logs a warning that it trusts the header.
func TestIdentityHeaderOffLoopback(t *testing.T) {
	pki := t.TempDir()
	if err := devca.Create(pki, []string{"127.0.0.1", "localhost"}, []string{"acme"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("acme "+transport.HashToken("right-token-0123")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func(listen string) config.Config {
		return config.Config{Listen: listen, DataPath: smallData(t), Data: dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}}, StateDir: t.TempDir(),
			Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}, DatasetID: "small", Output: curator.OutputPrivacy{Lower: 0, Upper: 5}}
	}
	tls := config.TLSConfig{CertFile: filepath.Join(pki, "server.pem"), KeyFile: filepath.Join(pki, "server-key.pem")}
	for _, addr := range nonLoopbackAddrs(t) {
		for _, tc := range []struct {
			name string
			edit func(*config.Config)
		}{
			{"plaintext allowed", func(c *config.Config) { c.AllowPlaintext = true }},
			{"TLS without client authentication", func(c *config.Config) { c.TLS = tls }},
		} {
			cfg := base(addr)
			tc.edit(&cfg)
			srv, err := Start(context.Background(), cfg)
			if err == nil {
				srv.Shutdown(context.Background())
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Field != "trust-identity-header-from-network" || !strings.Contains(err.Error(), "privbo-identity header") ||
				!strings.Contains(err.Error(), "anyone who can reach the address could spend any identity's budget") {
				t.Errorf("%s on %s: Start = %v, want a refusal on --trust-identity-header-from-network naming the header", tc.name, addr, err)
			}
			if _, err := CheckReport(cfg); !errors.As(err, &fe) || fe.Field != "trust-identity-header-from-network" {
				t.Errorf("%s on %s: Check = %v, want the same refusal", tc.name, addr, err)
			}
		}
	}

	// Started only when authentication is configured or the risk is named.
	addr := nonLoopbackAddrs(t)[len(nonLoopbackAddrs(t))-1]
	for _, tc := range []struct {
		name        string
		edit        func(*config.Config)
		trustWarned bool
	}{
		{"tokens behind a proxy", func(c *config.Config) { c.AllowPlaintext, c.TokensFile = true, tokens }, false},
		{"mutual TLS", func(c *config.Config) { c.TLS, c.TLS.ClientCAFile = tls, filepath.Join(pki, "ca.pem") }, false},
		{"header trusted explicitly", func(c *config.Config) { c.AllowPlaintext, c.TrustIdentityHeaderFromNetwork = true, true }, true},
	} {
		cfg := base(addr)
		tc.edit(&cfg)
		log, buf := testlog.New()
		cfg.Logger = log
		srv, err := Start(context.Background(), cfg)
		if err != nil {
			t.Errorf("%s on %s: %v", tc.name, addr, err)
			continue
		}
		srv.Shutdown(context.Background())
		warned := strings.Contains(strings.Join(config.Warnings(cfg), "\n"), "WARNING: --trust-identity-header-from-network")
		logged := strings.Contains(buf.String(), "identities are taken from the privbo-identity header")
		if warned != tc.trustWarned || logged != tc.trustWarned {
			t.Errorf("%s: warned %v, logged %v; want %v", tc.name, warned, logged, tc.trustWarned)
		}
	}

	// On loopback the header is trusted without the setting, and the log says so.
	cfg := base("127.0.0.1:0")
	log, buf := testlog.New()
	cfg.Logger = log
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown(context.Background())
	warned := false
	for _, line := range strings.Split(buf.String(), "\n") {
		warned = warned || strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "identities are taken from the privbo-identity header") &&
			strings.Contains(line, `"loopback":true`)
	}
	if !warned {
		t.Errorf("loopback without authentication: no warning that the header is trusted:\n%s", buf)
	}
	if w := strings.Join(config.Warnings(cfg), "\n"); strings.Contains(w, "TrustIdentityHeaderFromNetwork") {
		t.Errorf("Warnings(loopback) = %q, want no warning about the network", w)
	}
}
