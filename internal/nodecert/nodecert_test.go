package nodecert

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"
)

func TestNodeID(t *testing.T) {
	u := func(s string) *url.URL {
		v, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		uris []*url.URL
		want int32 // 0: not a node certificate
	}{
		{[]*url.URL{URI(7)}, 7},
		{[]*url.URL{u("spiffe://x/y"), u("minikafka:node:12")}, 12},
		{nil, 0},
		{[]*url.URL{URI(1), URI(2)}, 0},
		{[]*url.URL{u("minikafka:node:0")}, 0},
		{[]*url.URL{u("minikafka:node:-3")}, 0},
		{[]*url.URL{u("minikafka:node:007")}, 0},
		{[]*url.URL{u("minikafka:node:x")}, 0},
		{[]*url.URL{u("minikafka:broker:1")}, 0},
		{[]*url.URL{u("minikafka:node:99999999999")}, 0},
	}
	for _, c := range cases {
		id, err := NodeID(&x509.Certificate{URIs: c.uris})
		if c.want == 0 && !errors.Is(err, ErrNotNodeCert) || c.want != 0 && (err != nil || id != c.want) {
			t.Errorf("NodeID(%v) = %d, %v; want %d", c.uris, id, err, c.want)
		}
	}
}

// Write's certificates chain to its CA for both TLS roles, name their
// node, and their keys are private to the owner.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, []int32{1, 3}, time.Hour); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(FilesIn(dir, 1).CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	for _, id := range []int32{1, 3} {
		f := FilesIn(dir, id)
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: "localhost"}); err != nil {
				t.Errorf("node %d, usage %v: %v", id, usage, err)
			}
		}
		if got, err := NodeID(cert.Leaf); err != nil || got != id {
			t.Errorf("node %d's certificate names %d, %v", id, got, err)
		}
		if st, err := os.Stat(f.Key); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("node %d's key: %v, %v", id, st.Mode(), err)
		}
	}
	if err := Write(t.TempDir(), []int32{0}, time.Hour); err == nil {
		t.Error("a certificate for node 0 was written")
	}
}
