package main

import (
	"os"
	"path/filepath"
	"testing"

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
