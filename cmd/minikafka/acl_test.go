package main

import (
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// acl add|list|remove manage the ACLs that an authorising cluster
// enforces: alice may produce to a topic once allowed, and not after the
// ACL is removed.
func TestCLIACLs(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key}}
		cfg.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret"}, {Name: "alice", Password: "alice-secret"}}
		cfg.AuthorizationEnabled = true
		cfg.SuperUsers = []string{"User:admin"}
		cfg.Security.RaftAllowUnauthenticated = true // these tests are about the Kafka side
	})
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s", "--tls-ca", files.CA}
	admin := func(args ...string) []string {
		return append(append(args, g...), "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "admin", "--sasl-password", "admin-secret")
	}
	alice := func(args ...string) []string {
		return append(append(args, g...), "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice", "--sasl-password", "alice-secret")
	}
	var r cli
	for range 50 { // until the cluster has formed and seeded the users
		if r = runCLI(t, "", admin("acl", "list")...); r.code == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "no ACLs") {
		t.Fatalf("acl list on a new cluster: %+v", r)
	}
	mustRun(t, "", admin("topic", "create", "orders", "--partitions", "1", "--replication-factor", "1")...)
	if r := runCLI(t, "x\n", alice("produce", "orders")...); r.code == 0 || !strings.Contains(r.stderr, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("alice without an ACL: %+v", r)
	}

	mustRun(t, "", admin("acl", "add", "--allow-principal", "User:alice", "--operation", "write", "--operation", "describe",
		"--topic", "ord", "--resource-pattern-type", "prefixed")...)
	r = mustRun(t, "", admin("acl", "list", "--topic", "orders", "--resource-pattern-type", "match")...)
	if !strings.Contains(r.stdout, "TOPIC     ord   PREFIXED  User:alice  *     WRITE") ||
		!strings.Contains(r.stdout, "DESCRIBE") {
		t.Fatalf("acl list:\n%s", r.stdout)
	}
	mustRun(t, "x\n", alice("produce", "orders")...)
	if r := runCLI(t, "", alice("acl", "list")...); r.code == 0 || !strings.Contains(r.stderr, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice listing ACLs: %+v", r)
	}

	r = mustRun(t, "", admin("acl", "remove", "--allow-principal", "User:alice", "--topic", "ord", "--resource-pattern-type", "prefixed")...)
	if !strings.Contains(r.stdout, "removed 2 ACLs") {
		t.Fatalf("acl remove: %q", r.stdout)
	}
	if r := mustRun(t, "", admin("acl", "list")...); !strings.Contains(r.stdout, "no ACLs") {
		t.Fatalf("acl list after remove:\n%s", r.stdout)
	}

	for _, bad := range [][]string{
		{"acl", "add", "--operation", "read", "--topic", "t"},                               // no principal
		{"acl", "add", "--allow-principal", "User:a", "--topic", "t"},                       // no operation
		{"acl", "add", "--allow-principal", "User:a", "--operation", "read"},                // no resource
		{"acl", "add", "--allow-principal", "User:a", "--operation", "fly", "--topic", "t"}, // unknown operation
		{"acl", "add", "--allow-principal", "alice", "--operation", "read", "--topic", "t"}, // not User:<name>
		{"acl", "add", "--allow-principal", "User:a", "--operation", "read", "--topic", "t", "--host", "example.com"},
		{"acl", "add", "--allow-principal", "User:a", "--operation", "read", "--topic", "t", "--resource-pattern-type", "match"},
		{"acl", "list", "--resource-pattern-type", "wild"},
		{"acl", "remove"}, // would remove everything
	} {
		if r := runCLI(t, "", admin(bad...)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}
}
