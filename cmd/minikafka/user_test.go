package main

import (
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// Every command takes --tls-ca and --sasl-*; user create|list|delete
// manage the SCRAM users of a SASL_SSL-only cluster.
func TestCLIOverSASLSSL(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key}}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s", "--tls-ca", files.CA}
	as := func(mech, user, pass string, args ...string) []string {
		return append(append(args, g...), "--sasl-mechanism", mech, "--sasl-user", user, "--sasl-password", pass)
	}

	// The seeded admin appears once the cluster has formed.
	var r cli
	for range 50 {
		if r = runCLI(t, "", as("SCRAM-SHA-512", "admin", "admin-secret", "user", "list")...); r.code == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "admin  SCRAM-SHA-512  4096") {
		t.Fatalf("user list: %+v", r)
	}
	mustRun(t, "", as("SCRAM-SHA-512", "admin", "admin-secret", "user", "create", "app", "--password", "app-secret", "--iterations", "8192")...)
	r = mustRun(t, "", as("SCRAM-SHA-512", "admin", "admin-secret", "user", "list")...)
	if !strings.Contains(r.stdout, "app    SCRAM-SHA-256  8192") || !strings.Contains(r.stdout, "app    SCRAM-SHA-512  8192") {
		t.Fatalf("user list after create:\n%s", r.stdout)
	}
	mustRun(t, "", as("SCRAM-SHA-512", "admin", "admin-secret", "topic", "create", "secure", "--partitions", "1", "--replication-factor", "1")...)
	mustRun(t, "a\nb\n", as("SCRAM-SHA-256", "app", "app-secret", "produce", "secure")...)
	r = mustRun(t, "", as("PLAIN", "app", "app-secret", "consume", "secure", "--from-beginning", "-n", "2")...)
	if r.stdout != "a\nb\n" {
		t.Fatalf("consume printed %q", r.stdout)
	}

	r = runCLI(t, "", as("SCRAM-SHA-256", "app", "wrong", "topic", "list")...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %+v", r)
	}
	mustRun(t, "", as("SCRAM-SHA-512", "admin", "admin-secret", "user", "delete", "app")...)
	r = mustRun(t, "", as("SCRAM-SHA-512", "admin", "admin-secret", "user", "list")...)
	if strings.Contains(r.stdout, "app") {
		t.Fatalf("user list after delete:\n%s", r.stdout)
	}

	for _, bad := range [][]string{
		{"topic", "list", "--sasl-mechanism", "GSSAPI", "--sasl-user", "x"},
		{"topic", "list", "--sasl-mechanism", "PLAIN"},
		{"topic", "list", "--sasl-user", "x"},
		{"topic", "list", "--tls-ca", "/nonexistent.pem"},
	} {
		if r := runCLI(t, "", bad...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}
}
