package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
)

func TestListenersLoad(t *testing.T) {
	f, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := writeYAML(t, fmt.Sprintf(`node_id: 1
raft_allow_unauthenticated: true
listeners:
  - name: PLAINTEXT
    addr: 127.0.0.1:9092
  - name: EXTERNAL
    security_protocol: sasl_ssl
    addr: 0.0.0.0:9093
    advertised_addr: kafka.example:9093
    tls_cert_file: %s
    tls_key_file: %s
    tls_ca_file: %s
    client_auth: requested
    sasl_mechanisms: [SCRAM-SHA-512]
sasl_users:
  - name: admin
    password: admin-secret
`, f.Cert, f.Key, f.CA))
	o, err := loadConfig([]string{"--config", p}, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Listeners) != 2 || o.KafkaAddr != "127.0.0.1:9092" {
		t.Fatalf("listeners %+v, kafka_addr %s", o.Listeners, o.KafkaAddr)
	}
	ext := o.Listeners[1]
	if ext.SecurityProtocol != broker.ProtocolSASLSSL || ext.AdvertisedAddr != "kafka.example:9093" ||
		ext.ClientAuth != broker.ClientAuthRequested || len(ext.SASLMechanisms) != 1 {
		t.Fatalf("EXTERNAL loaded as %+v", ext)
	}
	if len(o.SASLUsers) != 1 || o.SASLUsers[0].Iterations != 4096 || len(o.SASLUsers[0].Mechanisms) != 2 {
		t.Fatalf("sasl_users %+v", o.SASLUsers)
	}

	// Without listeners, kafka_addr is the one PLAINTEXT listener.
	o, err = loadConfig([]string{"--node-id", "1", "--kafka-addr", "127.0.0.1:9999"}, env(), &bytes.Buffer{})
	if err != nil || len(o.Listeners) != 1 || o.Listeners[0].Name != "PLAINTEXT" || o.Listeners[0].Addr != "127.0.0.1:9999" {
		t.Fatalf("default listener: %+v, %v", o.Listeners, err)
	}
}

func TestListenerConfigErrors(t *testing.T) {
	f, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ssl := func(extra string) string {
		return fmt.Sprintf("listeners:\n  - name: SSL\n    addr: 127.0.0.1:1\n    tls_cert_file: %s\n    tls_key_file: %s\n%s", f.Cert, f.Key, extra)
	}
	cases := []struct {
		name, yaml, args, want string
	}{
		{"unknown field", "listeners:\n  - name: PLAINTEXT\n    adr: 127.0.0.1:1\n", "", "listeners[0].adr"},
		{"bad protocol", "listeners:\n  - name: INTERNAL\n    addr: 127.0.0.1:1\n", "", "listeners.INTERNAL.security_protocol"},
		{"bad name", "listeners:\n  - name: 'a b'\n    security_protocol: PLAINTEXT\n    addr: 127.0.0.1:1\n", "", "listeners[0].name"},
		{"duplicate name", "listeners:\n  - name: PLAINTEXT\n    addr: 127.0.0.1:1\n  - name: PLAINTEXT\n    addr: 127.0.0.1:2\n", "", "listener name used twice"},
		{"ssl without cert", "listeners:\n  - name: SSL\n    addr: 127.0.0.1:1\n", "", "needs tls_cert_file and tls_key_file"},
		{"missing cert file", "listeners:\n  - name: SSL\n    addr: 127.0.0.1:1\n    tls_cert_file: /nonexistent.pem\n    tls_key_file: /nonexistent-key.pem\n", "", "loading tls_cert_file"},
		{"required without ca", ssl("    client_auth: required\n"), "", "listeners.SSL.tls_ca_file"},
		// Without a CA file, Go would check a client certificate against
		// the system's public CAs.
		{"requested without ca", ssl("    client_auth: requested\n"), "", "listeners.SSL.tls_ca_file"},
		{"bad client auth", ssl("    client_auth: sometimes\n"), "", "must be none, requested or required"},
		{"tls on plaintext", fmt.Sprintf("listeners:\n  - name: PLAINTEXT\n    addr: 127.0.0.1:1\n    tls_cert_file: %s\n", f.Cert), "", "TLS settings on a listener without TLS"},
		{"sasl on ssl", ssl("    sasl_mechanisms: [PLAIN]\n"), "", "SASL mechanisms on a listener without SASL"},
		{"bad mechanism", "listeners:\n  - name: SASL_PLAINTEXT\n    addr: 127.0.0.1:1\n    sasl_mechanisms: [GSSAPI]\n", "", "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"bind all without advertised", "listeners:\n  - name: PLAINTEXT\n    addr: 0.0.0.0:1\n", "", "listeners.PLAINTEXT.advertised_addr"},
		{"kafka_addr and listeners", "kafka_addr: 127.0.0.1:5\nlisteners:\n  - name: PLAINTEXT\n    addr: 127.0.0.1:1\n", "", "set either kafka_addr or listeners"},
		{"kafka_addr flag and listeners", "listeners:\n  - name: PLAINTEXT\n    addr: 127.0.0.1:1\n", "--kafka-addr=127.0.0.1:5", "set either kafka_addr or listeners"},
		{"user without password", "sasl_users:\n  - name: admin\n", "", "sasl_users[0].password"},
		{"user with few iterations", "sasl_users:\n  - name: admin\n    password: x\n    iterations: 100\n", "", "sasl_users[0].iterations"},
		{"user with plain", "sasl_users:\n  - name: admin\n    password: x\n    mechanisms: [PLAIN]\n", "", "sasl_users[0].mechanisms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--config", writeYAML(t, "node_id: 1\n"+c.yaml)}
			if c.args != "" {
				args = append(args, c.args)
			}
			_, err := loadConfig(args, env(), &bytes.Buffer{})
			if !errors.Is(err, broker.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want an invalid config mentioning %q", err, c.want)
			}
		})
	}
}
