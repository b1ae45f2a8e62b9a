package broker_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/nodecert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// lockedDownCluster starts n nodes as make cluster-secure does: the only
// Kafka listener is SASL_SSL with SCRAM-SHA-512, the Raft port speaks
// mutual TLS with node certificates, gossip is encrypted and labelled,
// and nodes authenticate to each other as admin. It returns the client
// TLS config (trusting the CA).
func lockedDownCluster(t *testing.T, n int) (*testcluster.Cluster, *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	var ids []int32
	for i := 1; i <= n; i++ {
		ids = append(ids, int32(i))
	}
	if err := nodecert.Write(dir, ids, time.Hour); err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	c := testcluster.Start(t, n, func(c *broker.Config) {
		f := nodecert.FilesIn(dir, c.NodeID)
		c.Listeners = []broker.ListenerConfig{{Name: "SASL_SSL", Addr: "127.0.0.1:0", TLSCertFile: f.Cert, TLSKeyFile: f.Key,
			SASLMechanisms: []string{"SCRAM-SHA-512"}}}
		c.SASLUsers = []broker.SASLUser{{Name: "admin", Password: "admin-secret", Mechanisms: []string{"SCRAM-SHA-512"}}}
		c.Security = broker.SecurityConfig{
			RaftTLSCertFile: f.Cert, RaftTLSKeyFile: f.Key, RaftTLSCAFile: f.CA,
			GossipKeys: []string{key}, ClusterLabel: "test",
			InterBrokerListener: "SASL_SSL", InterBrokerSASLUser: "admin", InterBrokerSASLPassword: "admin-secret",
		}
	})
	pem, err := os.ReadFile(nodecert.FilesIn(dir, 1).CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return c, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Transactions commit and abort on a cluster whose only listener is
// SASL_SSL: the coordinator's markers and the leaders' verifications
// reach the other nodes over SASL_SSL, authenticated as admin.
func TestTransactionsOnlySASLSSL(t *testing.T) {
	c, cliTLS := lockedDownCluster(t, 3)
	waitForUser(t, c, cliTLS, "admin", "admin-secret")
	seeds := listenerAddrs(c, "SASL_SSL")
	admin := kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()
	cl := saslClient(t, seeds, cliTLS, admin)
	createTopic(t, cl, "locked-tx", 3, 3)
	p := saslClient(t, seeds, cliTLS, admin, kgo.TransactionalID("locked"), kgo.DefaultProduceTopic("locked-tx"))
	transaction(t, p, true, seq("commit", 12)...)
	transaction(t, p, false, seq("abort", 6)...)
	transaction(t, p, true, seq("again", 6)...)
	committed := saslClient(t, seeds, cliTLS, admin, kgo.ConsumeTopics("locked-tx"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, committed, 18, time.Second)
	want := append(seq("commit", 12), seq("again", 6)...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
}
