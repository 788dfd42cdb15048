package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

func tlsClient(t *testing.T, addr string, cfg transport.ClientConfig) curatorv1.CuratorServiceClient {
	t.Helper()
	conn, err := transport.Dial(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return curatorv1.NewCuratorServiceClient(conn)
}

// TestMutualTLSAndTokens: the identity charged comes from the client certificate or the
// bearer token, never from what the client claims; strangers are refused.
func TestMutualTLSAndTokens(t *testing.T) {
	pki, other := t.TempDir(), t.TempDir()
	if err := devca.Create(pki, []string{"127.0.0.1", "localhost"}, []string{"hospital-vendor"}, 3600e9); err != nil {
		t.Fatal(err)
	}
	if err := devca.Create(other, []string{"127.0.0.1"}, []string{"hospital-vendor"}, 3600e9); err != nil {
		t.Fatal(err)
	}
	const token = "tok-7f3c9a1e5b2d4c6e8a0b1c2d3e4f5a6b"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# vendor behind the proxy\nproxy-vendor "+transport.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := diabetesConfig(t, t.TempDir())
	cfg.TLS.CertFile = filepath.Join(pki, devca.ServerFile)
	cfg.TLS.KeyFile = filepath.Join(pki, devca.ServerKeyFile)
	cfg.TLS.ClientCAFile = filepath.Join(pki, devca.CAFile)
	cfg.TokensFile = tokens
	cur := startCurator(t, cfg)
	ctx := context.Background()
	ca := filepath.Join(pki, devca.CAFile)
	cert, key := devca.ClientFiles("hospital-vendor")

	// No certificate, no token: refused even though it names an identity.
	noCert, err := transport.ClientTLS(ca, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tlsClient(t, cur.srv.Addr(), transport.ClientConfig{TLS: noCert, Identity: "hospital-vendor"}).GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("no certificate: %v, want Unauthenticated", err)
	}
	// A certificate from another CA: the handshake fails.
	foreign, err := transport.ClientTLS(ca, filepath.Join(other, cert), filepath.Join(other, key), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tlsClient(t, cur.srv.Addr(), transport.ClientConfig{TLS: foreign}).GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if code := status.Code(err); code != codes.Unavailable && code != codes.Unauthenticated {
		t.Errorf("certificate from another CA: %v, want the connection refused", err)
	}
	// A valid certificate: served and charged to its common name, whatever the header says.
	good, err := transport.ClientTLS(ca, filepath.Join(pki, cert), filepath.Join(pki, key), "")
	if err != nil {
		t.Fatal(err)
	}
	client := tlsClient(t, cur.srv.Addr(), transport.ClientConfig{TLS: good, Identity: "someone-else"})
	p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1.5, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Budget.GetIdentity(); got != "hospital-vendor" || p.Budget.GetEpsilonSpent() != 1.5 {
		t.Errorf("release charged to %q (ε spent %g), want hospital-vendor, 1.5", got, p.Budget.GetEpsilonSpent())
	}
	// A bearer token over TLS without a client certificate.
	tokClient := tlsClient(t, cur.srv.Addr(), transport.ClientConfig{TLS: noCert, Token: token})
	b, err := tokClient.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil || b.GetBudget().GetIdentity() != "proxy-vendor" {
		t.Errorf("token: %v, identity %q; want proxy-vendor", err, b.GetBudget().GetIdentity())
	}
	_, err = tlsClient(t, cur.srv.Addr(), transport.ClientConfig{TLS: noCert, Token: token + "x"}).GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("wrong token: %v, want Unauthenticated", err)
	}
	cur.stop(t)

	// Nothing secret in the log: no token, no key material; and every RPC line names an identity or a refusal.
	logs := cur.logs.Bytes()
	keyPEM, _ := os.ReadFile(filepath.Join(pki, key))
	for name, secret := range map[string][]byte{"token": []byte(token), "client key": keyPEM[40:80], "token hash": []byte(transport.HashToken(token))} {
		if bytes.Contains(logs, secret) {
			t.Errorf("the log contains the %s", name)
		}
	}
	if !bytes.Contains(logs, []byte(`"identity":"hospital-vendor"`)) || !bytes.Contains(logs, []byte(`"identity":"proxy-vendor"`)) {
		t.Errorf("log lines do not carry the established identities:\n%s", logs)
	}
}

func TestPlaintextRefusedOffLoopback(t *testing.T) {
	cfg := diabetesConfig(t, t.TempDir())
	cfg.Listen = "0.0.0.0:0"
	_, err := startCuratorErr(cfg)
	if err == nil || !strings.Contains(err.Error(), "plaintext") {
		t.Fatalf("plaintext on 0.0.0.0: %v, want a refusal naming plaintext", err)
	}
}
