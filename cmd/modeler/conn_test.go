package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if !errors.Is(err, modeler.ErrUnreachable) || !strings.Contains(err.Error(), "(--curator, --ca, --cert, --key, --server-name)") {
		t.Errorf("unreachable curator: %v, want ErrUnreachable with the connection flags", err)
	}
}
