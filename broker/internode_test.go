package broker_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/frame"
	"github.com/minikafka/minikafka-go/internal/nodecert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// lockedDownCluster starts n nodes as make cluster-secure does: the only
// Kafka listener is SASL_SSL with SCRAM-SHA-512, the Raft port speaks
// mutual TLS with node certificates, gossip is encrypted and labelled,
// and nodes authenticate to each other as admin. It returns the client
// TLS config (trusting the CA) and the directory of the certificates.
func lockedDownCluster(t *testing.T, n int) (*testcluster.Cluster, *tls.Config, string) {
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
	return c, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, dir
}

// Transactions commit and abort on a cluster whose only listener is
// SASL_SSL: the coordinator's markers and the leaders' verifications
// reach the other nodes over SASL_SSL, authenticated as admin.
func TestTransactionsOnlySASLSSL(t *testing.T) {
	t.Parallel()
	c, cliTLS, _ := lockedDownCluster(t, 3)
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

// A process holding node 2's valid certificate cannot speak for node 3 on
// the metadata RPC: re-pointing broker 3 or claiming a partition for node
// 3 is refused by every node with CLUSTER_AUTHORIZATION_FAILED, and
// broker 3's registration and the partition's leader are unchanged.
func TestMetaRPCRefusesCommandsForAnotherNode(t *testing.T) {
	t.Parallel()
	c, cliTLS, dir := lockedDownCluster(t, 3)
	waitForUser(t, c, cliTLS, "admin", "admin-secret")
	admin := kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()
	cl := saslClient(t, listenerAddrs(c, "SASL_SSL"), cliTLS, admin)
	createTopic(t, cl, "guarded", 1, 3)
	before, _ := brokersAndLeader(t, cl, "guarded")

	f := nodecert.FilesIn(dir, 2)
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := os.ReadFile(f.CA)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	impostor, err := multiraft.Listen(multiraft.Config{NodeID: 2, BindAddr: "127.0.0.1:0",
		TLS: &multiraft.TLS{Certificate: cert, CAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	forged := []metadata.Command{
		metadata.RegisterBroker{ID: 3, KafkaAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"},
		metadata.SetPartitionLeader{Topic: "guarded", Partition: 0, Leader: 3, Epoch: 1 << 30},
		metadata.SetPartitionLeaders{Reports: []metadata.SetPartitionLeader{{Topic: "guarded", Partition: 0, Leader: 3, Epoch: 1 << 30}}},
	}
	for _, nd := range c.Running() {
		for _, cmd := range forged {
			if code := sendMeta(t, impostor, nd.RaftAddr(), cmd); code != kerr.ClusterAuthorizationFailed.Code {
				t.Errorf("%T to node %d answered code %d, want CLUSTER_AUTHORIZATION_FAILED", cmd, nd.ID(), code)
			}
		}
	}
	if after, epoch := brokersAndLeader(t, cl, "guarded"); after != before || epoch == 1<<30 {
		t.Errorf("metadata changed: brokers %q -> %q, leader epoch %d", before, after, epoch)
	}
}

// sendMeta sends one command on the metadata RPC of the node at addr and
// returns the reply's error code.
func sendMeta(t *testing.T, h *multiraft.Host, addr string, cmd metadata.Command) int16 {
	t.Helper()
	enc, err := metadata.Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := h.Dial(ctx, addr, "rpc/meta")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(frame.Append(nil, enc)); err != nil {
		t.Fatal(err)
	}
	b, err := frame.Read(conn, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Code int16 `json:"code"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep.Code
}

// brokersAndLeader returns the brokers' addresses and the leader epoch of
// topic's partition 0, as Metadata answers them.
func brokersAndLeader(t *testing.T, cl *kgo.Client, topic string) (string, int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := topicMetadata(ctx, cl, topic)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Metadata: %+v, %v", resp, err)
	}
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	slices.Sort(out)
	return fmt.Sprint(out), resp.Topics[0].Partitions[0].LeaderEpoch
}

// Producer ids are keyed as soon as the cluster is ready: InitProducerID
// hands out ids above metadata.ProducerIDKeyedBase that do not follow one
// another.
func TestProducerIDsAreKeyed(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1)
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ids []int64
	for range 3 {
		resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("InitProducerID: %v, code %d", err, resp.ErrorCode)
		}
		if resp.ProducerID < metadata.ProducerIDKeyedBase || slices.Contains(ids, resp.ProducerID) {
			t.Fatalf("producer id %d after %v", resp.ProducerID, ids)
		}
		if n := len(ids); n > 0 && resp.ProducerID == ids[n-1]+1 {
			t.Fatalf("producer id %d follows %d", resp.ProducerID, ids[n-1])
		}
		ids = append(ids, resp.ProducerID)
	}
}
