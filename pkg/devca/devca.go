// Package devca creates a development certificate authority and certificates for
// privbo: a CA, a server certificate for the curator's host names and addresses, and one
// client certificate per modeler identity (the identity is the certificate's common
// name). It is for demos and tests; production deployments use their own PKI.
package devca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files names what Create writes into its directory.
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ServerFile    = "server.pem"
	ServerKeyFile = "server-key.pem"
)

// ClientFiles returns the certificate and key file names of identity.
func ClientFiles(identity string) (cert, key string) {
	return identity + ".pem", identity + "-key.pem"
}

// Create writes a new CA, a server certificate valid for hosts (DNS names or IP
// addresses) and a client certificate for each identity into dir. Certificates are valid
// for validFor from now.
func Create(dir string, hosts, identities []string, validFor time.Duration) error {
	if len(hosts) == 0 {
		return errors.New("devca: at least one server host name or address is needed")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "privbo development CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validFor),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writePair(dir, CAFile, CAKeyFile, caDER, caKey); err != nil {
		return err
	}
	srv := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validFor),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			srv.IPAddresses = append(srv.IPAddresses, ip)
		} else {
			srv.DNSNames = append(srv.DNSNames, h)
		}
	}
	if err := issue(dir, ServerFile, ServerKeyFile, srv, ca, caKey); err != nil {
		return err
	}
	for _, id := range identities {
		if err := issueClient(dir, id, now.Add(validFor), ca, caKey); err != nil {
			return err
		}
	}
	return nil
}

// AddClient issues a client certificate for identity from the CA that Create wrote into
// dir, valid for validFor from now (at most until the CA expires). It refuses to replace
// a certificate the identity has already.
func AddClient(dir, identity string, validFor time.Duration) error {
	ca, err := tls.LoadX509KeyPair(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return fmt.Errorf("devca: the CA in %s: %w", dir, err)
	}
	key, ok := ca.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return fmt.Errorf("devca: the CA key in %s is not an ECDSA key", dir)
	}
	c, _ := ClientFiles(identity)
	if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
		return fmt.Errorf("devca: %s already holds a client certificate for %q", dir, identity)
	}
	notAfter := time.Now().Add(validFor)
	if notAfter.After(ca.Leaf.NotAfter) {
		notAfter = ca.Leaf.NotAfter
	}
	return issueClient(dir, identity, notAfter, ca.Leaf, key)
}

// issueClient writes a client certificate for identity (its common name) signed by ca.
func issueClient(dir, identity string, notAfter time.Time, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	cli := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: identity},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	c, k := ClientFiles(identity)
	return issue(dir, c, k, cli, ca, caKey)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("devca: crypto/rand: %v", err))
	}
	return n
}

func issue(dir, certName, keyName string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	return writePair(dir, certName, keyName, der, key)
}

func writePair(dir, certName, keyName string, der []byte, key *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	return nil
}
