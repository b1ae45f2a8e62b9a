package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/nodecert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// certs writes the CA, the nodes' certificates and a gossip key, and
// refuses to overwrite them without --force.
func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	mustRun(t, "", "certs", "--dir", dir, "--nodes", "1,2")
	for _, f := range []string{"ca.pem", "ca-key.pem", "node1.pem", "node1-key.pem", "node2.pem", "node2-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	key, err := os.ReadFile(filepath.Join(dir, "gossip.key"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(key))); err != nil || len(b) != 32 {
		t.Errorf("gossip.key %q: %d bytes, %v", key, len(b), err)
	}
	if r := runCLI(t, "", "certs", "--dir", dir); r.code == 0 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("second run: exit %d, stderr %q; want a refusal naming --force", r.code, r.stderr)
	}
	mustRun(t, "", "certs", "--dir", dir, "--force")
	if again, _ := os.ReadFile(filepath.Join(dir, "gossip.key")); string(again) == string(key) {
		t.Error("--force kept the old gossip key")
	}
}

// cluster status --wait reaches a SASL_SSL-only node with --tls-ca and
// --sasl-*, as make cluster-secure uses it.
func TestStatusWaitOverSASLSSL(t *testing.T) {
	dir := t.TempDir()
	if err := nodecert.Write(dir, []int32{1}, time.Hour); err != nil {
		t.Fatal(err)
	}
	f := nodecert.FilesIn(dir, 1)
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: f.Cert, TLSKeyFile: f.Key}}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	addr := c.Node(1).Listeners()[0].Addr
	r := mustRun(t, "", "cluster", "status", "--brokers", addr, "--wait", "30s", "--tls-ca", f.CA,
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "admin", "--sasl-password", "admin-secret")
	if !strings.Contains(r.stdout, "controller 1") {
		t.Errorf("status: %q", r.stdout)
	}
}
