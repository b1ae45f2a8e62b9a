package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/nodecert"
)

// The secure configs load with make certs' files: every node names its
// own certificate, and nodes reach each other on the SASL_SSL listener.
func TestSecureConfigsLoad(t *testing.T) {
	configs, err := filepath.Abs("../../configs/secure")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the configs' paths are relative to the repository's top
	if err := nodecert.Write("data/certs", []int32{1, 2, 3}, time.Hour); err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for n := 1; n <= 3; n++ {
		o, err := loadConfig([]string{"--config", filepath.Join(configs, "node"+string(rune('0'+n))+".yaml")},
			env("MINIKAFKA_GOSSIP_KEYS", key), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("node%d.yaml: %v", n, err)
		}
		s := o.Security
		if o.NodeID != int32(n) || len(s.GossipKeys) != 1 || s.InterBrokerListener != "SASL_SSL" ||
			s.InterBrokerSASLUser != "admin" || len(o.Listeners) != 1 || o.Listeners[0].SecurityProtocol != broker.ProtocolSASLSSL {
			t.Fatalf("node%d.yaml loaded as %+v", n, o.Config)
		}
	}
}

func TestSecurityKeysNameKeyAndValue(t *testing.T) {
	dir := t.TempDir()
	if err := nodecert.Write(dir, []int32{1, 2}, time.Hour); err != nil {
		t.Fatal(err)
	}
	f1, f2 := nodecert.FilesIn(dir, 1), nodecert.FilesIn(dir, 2)
	tlsYAML := func(f nodecert.Files) string {
		return "raft_tls_cert_file: " + f.Cert + "\nraft_tls_key_file: " + f.Key + "\nraft_tls_ca_file: " + f.CA + "\n"
	}
	sasl := "listeners:\n  - name: SASL_SSL\n    addr: 127.0.0.1:0\n    tls_cert_file: " + f1.Cert + "\n    tls_key_file: " + f1.Key +
		"\n    sasl_mechanisms: [SCRAM-SHA-512]\ninter_broker_listener: SASL_SSL\n"
	cases := []struct {
		name, yaml, key, value string
	}{
		{"missing cert file", "raft_tls_cert_file: /nonexistent.pem\nraft_tls_key_file: " + f1.Key + "\nraft_tls_ca_file: " + f1.CA + "\n",
			"raft_tls_cert_file", "/nonexistent.pem"},
		{"cert without key", "raft_tls_cert_file: " + f1.Cert + "\n", "raft_tls_key_file", ""},
		{"another node's certificate", tlsYAML(f2), "raft_tls_cert_file", f2.Cert},
		{"CA file without certificates", "raft_tls_cert_file: " + f1.Cert + "\nraft_tls_key_file: " + f1.Key + "\nraft_tls_ca_file: " + f1.Key + "\n",
			"raft_tls_ca_file", f1.Key},
		{"gossip key not base64", "gossip_keys: [\"not base64!\"]\n", "gossip_keys[0]", "hidden"},
		{"gossip key of the wrong length", "gossip_keys: [" + base64.StdEncoding.EncodeToString(make([]byte, 20)) + "]\n",
			"gossip_keys[0]", "hidden"},
		{"label too long", "cluster_label: " + strings.Repeat("x", 256) + "\n", "cluster_label", "xxx"},
		{"unknown inter-broker listener", "inter_broker_listener: INTERNAL\n", "inter_broker_listener", "INTERNAL"},
		{"SASL inter-broker listener without credentials", sasl + "inter_broker_tls_ca_file: " + f1.CA + "\n", "inter_broker_sasl_user", ""},
		{"TLS inter-broker listener without a CA", sasl + "inter_broker_sasl_user: a\ninter_broker_sasl_password: b\n",
			"inter_broker_tls_ca_file", ""},
		{"mechanism the listener lacks", sasl + tlsYAML(f1) + "inter_broker_sasl_user: a\ninter_broker_sasl_password: b\ninter_broker_sasl_mechanism: PLAIN\n",
			"inter_broker_sasl_mechanism", "PLAIN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadConfig([]string{"--config", writeYAML(t, "node_id: 1\n"+c.yaml)}, env(), &bytes.Buffer{})
			var ce *broker.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, broker.ErrInvalidConfig) {
				t.Fatalf("err = %v, want a *broker.ConfigError", err)
			}
			if ce.Key != c.key || !strings.Contains(err.Error(), c.value) {
				t.Fatalf("err %q names key %q; want key %q and value %q", err, ce.Key, c.key, c.value)
			}
		})
	}
}

// A node with a SASL listener or ACLs on refuses to start while its Raft
// port takes unauthenticated peers, unless raft_allow_unauthenticated says
// so; with mutual TLS between nodes it starts.
func TestRaftPortMustBeAuthenticated(t *testing.T) {
	dir := t.TempDir()
	if err := nodecert.Write(dir, []int32{1}, time.Hour); err != nil {
		t.Fatal(err)
	}
	f := nodecert.FilesIn(dir, 1)
	raftTLS := "raft_tls_cert_file: " + f.Cert + "\nraft_tls_key_file: " + f.Key + "\nraft_tls_ca_file: " + f.CA + "\n"
	sasl := "listeners:\n  - name: SASL_PLAINTEXT\n    addr: 127.0.0.1:0\n"
	authz := "authorization_enabled: true\n"
	cases := []struct {
		name, yaml, key string // key "" means the config loads
	}{
		{"SASL listener", sasl, "listeners.SASL_PLAINTEXT.security_protocol"},
		{"ACLs", authz, "authorization_enabled"},
		{"SASL listener, allowed", sasl + "raft_allow_unauthenticated: true\n", ""},
		{"ACLs, allowed", authz + "raft_allow_unauthenticated: true\n", ""},
		{"SASL and ACLs with mutual TLS", sasl + authz + raftTLS, ""},
		{"neither", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadConfig([]string{"--config", writeYAML(t, "node_id: 1\n"+c.yaml)}, env(), &bytes.Buffer{})
			if c.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *broker.ConfigError
			if !errors.As(err, &ce) || ce.Key != c.key || !strings.Contains(err.Error(), "raft_allow_unauthenticated") ||
				!strings.Contains(err.Error(), "raft_tls_cert_file") {
				t.Fatalf("err = %v, want a *broker.ConfigError for %s naming raft_tls_cert_file and raft_allow_unauthenticated", err, c.key)
			}
		})
	}
}
