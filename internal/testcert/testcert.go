// Package testcert makes a throw-away certificate authority and a server
// certificate for 127.0.0.1 and localhost, for tests of TLS listeners.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are PEM files written by Write.
type Files struct {
	CA, Cert, Key string // CA certificate, server certificate, server key
	// ClientCert and ClientKey are a client certificate signed by the CA.
	ClientCert, ClientKey string
}

// Write creates a CA, a server certificate for 127.0.0.1, ::1 and
// localhost, and a client certificate, all valid for a day, in dir.
func Write(dir string) (Files, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "minikafka test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Files{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, server bool) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			t.DNSNames = []string{"localhost"}
			t.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	srvDER, srvKey, err := leaf(2, "localhost", x509.ExtKeyUsageServerAuth, true)
	if err != nil {
		return Files{}, err
	}
	cliDER, cliKey, err := leaf(3, "client", x509.ExtKeyUsageClientAuth, false)
	if err != nil {
		return Files{}, err
	}
	f := Files{
		CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	for _, w := range []struct {
		path, typ string
		der       []byte
	}{{f.CA, "CERTIFICATE", caDER}, {f.Cert, "CERTIFICATE", srvDER}, {f.ClientCert, "CERTIFICATE", cliDER}} {
		if err := writePEM(w.path, w.typ, w.der); err != nil {
			return Files{}, err
		}
	}
	for _, w := range []struct {
		path string
		key  *ecdsa.PrivateKey
	}{{f.Key, srvKey}, {f.ClientKey, cliKey}} {
		der, err := x509.MarshalPKCS8PrivateKey(w.key)
		if err != nil {
			return Files{}, err
		}
		if err := writePEM(w.path, "PRIVATE KEY", der); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// ServerConfig loads the server certificate.
func (f Files) ServerConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ClientConfig trusts the CA.
func (f Files) ClientConfig() (*tls.Config, error) {
	pemBytes, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
