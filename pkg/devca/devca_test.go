package devca

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// verifyClient checks that dir holds a client certificate for identity that the CA in
// dir verifies for client authentication, and returns it.
func verifyClient(t *testing.T, dir, identity string) *x509.Certificate {
	t.Helper()
	parse := func(name string) *x509.Certificate {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s holds no PEM block", name)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c, k := ClientFiles(identity)
	if _, err := os.Stat(filepath.Join(dir, k)); err != nil {
		t.Errorf("no key for %s: %v", identity, err)
	}
	cert, roots := parse(c), x509.NewCertPool()
	roots.AddCert(parse(CAFile))
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate of %s does not verify against the CA: %v", identity, err)
	}
	if cert.Subject.CommonName != identity {
		t.Errorf("common name %q, want %q", cert.Subject.CommonName, identity)
	}
	return cert
}

// TestAddClient: a client added to an existing CA verifies against it, expires no later
// than the CA, and is not replaced by a second AddClient; without a CA nothing is
// written.
func TestAddClient(t *testing.T) {
	dir := t.TempDir()
	if err := Create(dir, []string{"localhost"}, []string{"vendor-a"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	verifyClient(t, dir, "vendor-a")
	if err := AddClient(dir, "vendor-b", 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	b := verifyClient(t, dir, "vendor-b")
	if limit := time.Now().Add(time.Hour); b.NotAfter.After(limit) {
		t.Errorf("the added certificate expires at %v, after the CA (%v)", b.NotAfter, limit)
	}
	if err := AddClient(dir, "vendor-b", time.Hour); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("AddClient of an identity with a certificate: %v, want a refusal", err)
	}
	empty := t.TempDir()
	if err := AddClient(empty, "vendor-c", time.Hour); err == nil {
		t.Error("AddClient without a CA succeeded")
	}
	if files, _ := os.ReadDir(empty); len(files) != 0 {
		t.Errorf("AddClient without a CA wrote %d files", len(files))
	}
}
