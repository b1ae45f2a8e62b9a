// Package nodecert names a node in its certificate and makes certificates
// that do: a development CA and one certificate per node, for the Raft
// port's mutual TLS (and, since they also name 127.0.0.1 and localhost, for
// a node's own Kafka listeners).
//
// A node certificate carries exactly one URI SAN, minikafka:node:<id>. A URI
// SAN rather than the common name: subject names are free text that CAs
// fill for people, and Go no longer reads the CN for identity; a URI SAN is
// a typed, exact field (SPIFFE uses the same), and it cannot be confused
// with the DNS and IP names that hostname checks read.
package nodecert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNotNodeCert is returned by NodeID for a certificate that does not name
// exactly one node.
var ErrNotNodeCert = errors.New("nodecert: the certificate does not name a node (one URI SAN minikafka:node:<id>)")

const scheme, prefix = "minikafka", "node:"

// URI is the URI SAN that names node id.
func URI(id int32) *url.URL {
	return &url.URL{Scheme: scheme, Opaque: prefix + strconv.FormatInt(int64(id), 10)}
}

// NodeID returns the node a certificate names: the id of its one
// minikafka: URI SAN, positive. Errors wrap ErrNotNodeCert.
func NodeID(cert *x509.Certificate) (int32, error) {
	var id int32
	found := 0
	for _, u := range cert.URIs {
		if u.Scheme != scheme {
			continue
		}
		found++
		digits, ok := strings.CutPrefix(u.Opaque, prefix)
		n, err := strconv.ParseInt(digits, 10, 32)
		if !ok || err != nil || n <= 0 || strconv.FormatInt(n, 10) != digits {
			return 0, fmt.Errorf("%w: %q", ErrNotNodeCert, u.String())
		}
		id = int32(n)
	}
	if found != 1 {
		return 0, fmt.Errorf("%w: %d minikafka URIs", ErrNotNodeCert, found)
	}
	return id, nil
}

// Files are the PEM files of one node as Write names them.
type Files struct{ CA, Cert, Key string }

// FilesIn names node id's files in dir: ca.pem, node<id>.pem,
// node<id>-key.pem.
func FilesIn(dir string, id int32) Files {
	return Files{
		CA:   filepath.Join(dir, "ca.pem"),
		Cert: filepath.Join(dir, fmt.Sprintf("node%d.pem", id)),
		Key:  filepath.Join(dir, fmt.Sprintf("node%d-key.pem", id)),
	}
}

// Write creates dir, a CA (ca.pem, ca-key.pem) and a certificate and key
// for each node (FilesIn), valid for validity from an hour ago. Node
// certificates are for both ends of TLS (server and client auth) and also
// name 127.0.0.1, ::1 and localhost. Keys are written with mode 0600.
func Write(dir string, nodes []int32, validity time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "minikafka development CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "ca-key.pem"), caKey); err != nil {
		return err
	}
	for _, id := range nodes {
		if id <= 0 {
			return fmt.Errorf("nodecert: node id %d is not positive", id)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: fmt.Sprintf("node-%d", id)},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			URIs:        []*url.URL{URI(id)},
			DNSNames:    []string{"localhost"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		}
		if err := writeLeaf(FilesIn(dir, id), tmpl, ca, caKey); err != nil {
			return err
		}
	}
	return nil
}

// WriteLeaf writes a certificate for tmpl signed by the CA in dir (Write's
// ca.pem and ca-key.pem) to f.Cert and f.Key; for certificates that Write
// does not make, such as tests' impostors.
func WriteLeaf(dir string, f Files, tmpl *x509.Certificate) error {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return errors.New("nodecert: ca.pem or ca-key.pem holds no PEM block")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return err
	}
	caKey, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return errors.New("nodecert: ca-key.pem is not an ECDSA key")
	}
	return writeLeaf(f, tmpl, ca, caKey)
}

func writeLeaf(f Files, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = serial()
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(f.Cert, "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeKey(f.Key, key)
}

// serial is a random 128-bit serial number, as RFC 5280 recommends.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)) // crypto/rand never fails on Linux
	return n
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}
