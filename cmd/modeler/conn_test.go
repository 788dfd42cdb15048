package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// TestStudyConnectionAbsolute checks that a study stores its TLS and token files as
// absolute paths, so that it can be resumed from another directory.
func TestStudyConnectionAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c := connFlags{addr: "curator:7070", identity: "acme", ca: "certs/ca.pem", cert: "./client.pem", key: "/etc/privbo/client.key",
		serverName: "curator.example"}
	got, err := c.studyConnection()
	if err != nil {
		t.Fatal(err)
	}
	want := study.Connection{Curator: "curator:7070", Identity: "acme", CA: filepath.Join(wd, "certs", "ca.pem"),
		Cert: filepath.Join(wd, "client.pem"), Key: "/etc/privbo/client.key", ServerName: "curator.example"}
	if got != want {
		t.Errorf("studyConnection() = %+v, want %+v", got, want)
	}
}

// TestConnectionErrorsNameFlags: the library errors about the connection reach the
// person with the flags to fix.
func TestConnectionErrorsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "list", "--cert", "client.pem"}, "needs both --cert and --key"},
		{[]string{"job", "list", "--ca", "/nonexistent/ca.pem"}, "TLS files (--ca, --cert, --key)"},
	} {
		err := run(tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	err := run([]string{"run", "--curator", "127.0.0.1:1", "--iterations", "1", "--timeout", "2s"}, io.Discard, io.Discard)
	if !errors.Is(err, modeler.ErrUnreachable) || !strings.Contains(err.Error(), "nothing accepts connections at that address (127.0.0.1:1)") ||
		!strings.Contains(err.Error(), "Check --curator") {
		t.Errorf("unreachable curator: %v, want ErrUnreachable, its cause and the flag to check", err)
	}
}

// TestDialAdvice runs the modeler against a curator serving mutual TLS the ways a person
// gets wrong, and checks that each is told the cause and the flag that helps, and that
// an address without a port says which port is dialled.
func TestDialAdvice(t *testing.T) {
	pki := t.TempDir()
	if err := devca.Create(pki, []string{"127.0.0.1"}, []string{"acme"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	f := func(name string) string { return filepath.Join(pki, name) }
	cur := curatortest.Start(t, curatortest.Options{Scaling: curatortest.DiabetesSchema(t), Configure: func(c *config.Config) {
		c.TLS = config.TLSConfig{CertFile: f(devca.ServerFile), KeyFile: f(devca.ServerKeyFile), ClientCAFile: f(devca.CAFile)}
	}})
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"plaintext", nil, []string{"the curator speaks TLS and this client dialled plaintext", "Give --ca"}},
		{"no client certificate", []string{"--ca", f(devca.CAFile)}, []string{"requires a client certificate and this client sent none", "Give --cert and --key"}},
		{"another identity", []string{"--ca", f(devca.CAFile), "--cert", f("acme.pem"), "--key", f("acme-key.pem"), "--identity", "beta"},
			[]string{"--identity beta is not what the curator charges: it charges the identity of the client certificate (--cert), acme.", "Drop --identity"}},
	} {
		err := run(append([]string{"job", "list", "--curator", cur.Addr}, tc.args...), io.Discard, io.Discard)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(errorLine(err), w) {
				t.Errorf("%s: %v, want it to say %q", tc.name, err, w)
			}
		}
	}
	if err := run([]string{"job", "list", "--curator", cur.Addr, "--ca", f(devca.CAFile), "--cert", f("acme.pem"), "--key", f("acme-key.pem"),
		"--identity", "acme"}, io.Discard, io.Discard); status.Code(err) != codes.Unimplemented {
		t.Errorf("the certificate's own identity: %v, want the curator's answer that it runs no jobs", err)
	}
	var stderr strings.Builder
	_ = run([]string{"run", "--curator", "127.0.0.1", "--iterations", "1", "--timeout", "2s"}, io.Discard, &stderr)
	if want := "--curator 127.0.0.1 names no port, so this client dials 127.0.0.1:443"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not say %q", stderr.String(), want)
	}
}
