package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// The CLI pointed at a TLS or SASL listener without the flags for it says
// what the broker expects, at once, instead of timing out on EOF.
func TestCLISaysWhatTheListenerExpects(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		tlsListener := func(name string) broker.ListenerConfig {
			return broker.ListenerConfig{Name: name, Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key}
		}
		cfg.Listeners = []broker.ListenerConfig{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}, tlsListener("SSL"),
			{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0"}, tlsListener("SASL_SSL")}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	addr := map[string]string{}
	for _, l := range c.Node(1).Listeners() {
		addr[l.Name] = l.Addr
	}
	tlsFlags := []string{"--tls-ca", files.CA}
	saslFlags := []string{"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "admin", "--sasl-password", "admin-secret"}
	expectsTLS := func(l string) string {
		return "minikafka: the broker at " + addr[l] + " expects TLS: use --tls-ca with the CA file of its certificate"
	}
	expectsSASL := func(l string) string {
		return "minikafka: the broker at " + addr[l] + " expects SASL authentication: use --sasl-mechanism, --sasl-user and --sasl-password"
	}
	noTLS := func(l string) string {
		return "minikafka: the broker at " + addr[l] + " does not speak TLS: leave out --tls-ca"
	}
	noSASL := func(l string) string {
		return "minikafka: the broker at " + addr[l] + " does not expect SASL authentication: leave out --sasl-mechanism, --sasl-user and --sasl-password"
	}
	for _, tc := range []struct {
		listener string
		flags    []string
		want     string
	}{
		{"SSL", nil, expectsTLS("SSL")},
		{"SASL_SSL", nil, "minikafka: the broker at " + addr["SASL_SSL"] + " expects TLS and SASL authentication: " +
			"use --tls-ca with the CA file of its certificate, and --sasl-mechanism, --sasl-user and --sasl-password"},
		{"SASL_SSL", saslFlags, expectsTLS("SASL_SSL")},
		{"SASL_SSL", tlsFlags, expectsSASL("SASL_SSL")},
		{"SASL_PLAINTEXT", nil, expectsSASL("SASL_PLAINTEXT")},
		{"PLAINTEXT", tlsFlags, noTLS("PLAINTEXT")},
		{"PLAINTEXT", saslFlags, noSASL("PLAINTEXT")},
		{"SSL", append(append([]string(nil), tlsFlags...), saslFlags...), noSASL("SSL")},
	} {
		for _, args := range [][]string{{"topic", "list"}, {"cluster", "status"}} {
			args = append(append(args, "--brokers", addr[tc.listener], "--timeout", "8s"), tc.flags...)
			start := time.Now()
			r := runCLI(t, "", args...)
			if r.code != exitFailure || r.stderr != tc.want+"\n" {
				t.Errorf("minikafka %v: exit %d, stderr %q; want exit 1 and %q", args, r.code, r.stderr, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("minikafka %v took %v: it should say so long before --timeout", args, d)
			}
		}
	}
	// With the right flags, each answers.
	for l, flags := range map[string][]string{"SSL": tlsFlags, "SASL_PLAINTEXT": saslFlags, "SASL_SSL": append(tlsFlags, saslFlags...)} {
		mustRun(t, "", append([]string{"topic", "list", "--brokers", addr[l], "--timeout", "20s"}, flags...)...)
	}
}

// A broker that accepts connections and closes them (as one shutting down
// does) is not taken for a plaintext listener: the probe must have had a
// plaintext answer to say "does not speak TLS".
func TestCLIClosingBrokerIsNoMismatch(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer func() { l.Close(); <-done }()
	r := runCLI(t, "", "topic", "list", "--brokers", l.Addr().String(), "--timeout", "1s", "--tls-ca", files.CA)
	if r.code != exitFailure || strings.Contains(r.stderr, "does not speak TLS") || !strings.Contains(r.stderr, "timed out after 1s") {
		t.Fatalf("exit %d, stderr %q; want a timeout, not a listener mismatch", r.code, r.stderr)
	}
}
