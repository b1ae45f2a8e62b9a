package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/internal/nodecert"
)

// TestSecureClusterUnderFaults runs the nodes as make cluster-secure
// configures them: a SASL_SSL listener with SCRAM-SHA-512 (user admin)
// that clients and the nodes themselves use, mutual TLS with node
// certificates on the Raft port, gossip encrypted and labelled; plus a
// PLAINTEXT listener for the harness's checker. A transaction across the
// nodes commits over SASL_SSL; a connection to a Raft port without a
// certificate gets no answer; a leader killed under load loses and
// duplicates nothing (the killed node rejoins over mutual TLS).
func TestSecureClusterUnderFaults(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	dir := t.TempDir()
	if err := nodecert.Write(dir, []int32{1, 2, 3}, time.Hour); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	root, err := ModuleRoot()
	must(t, err)
	secureAddrs := map[int]string{} // node id -> its SASL_SSL address; written by Start's goroutine
	// configs/secure/node<N>.yaml with this test's certificates, gossip
	// key and SASL_SSL port, and a PLAINTEXT listener for the checker.
	config := func(n *Node) (string, error) {
		shipped, err := os.ReadFile(filepath.Join(root, "configs", "secure", fmt.Sprintf("node%d.yaml", n.ID)))
		if err != nil {
			return "", err
		}
		port, err := freePort()
		if err != nil {
			return "", err
		}
		secureAddrs[n.ID] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		y := string(shipped)
		for _, r := range [][2]string{
			{"data/certs/", dir + "/"},
			{fmt.Sprintf("addr: 127.0.0.1:%d", 9091+n.ID), "addr: " + secureAddrs[n.ID]},
			{"listeners:\n", "listeners:\n  - name: PLAINTEXT\n    addr: " + n.KafkaAddr + "\n"},
			// The checker's PLAINTEXT connections are anonymous: let them through the ACLs.
			{`super_users: ["User:admin"]`, `super_users: ["User:admin", "User:ANONYMOUS"]`},
		} {
			if !strings.Contains(y, r[0]) {
				return "", fmt.Errorf("configs/secure/node%d.yaml has no %q", n.ID, r[0])
			}
			y = strings.ReplaceAll(y, r[0], r[1])
		}
		return y + "gossip_keys: [" + base64.StdEncoding.EncodeToString(key) + "]\n", nil
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	c, err := Start(sctx, t, Options{Binary: nodeBinary, Config: config})
	cancel()
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}

	secureTransaction(ctx, t, dir, []string{secureAddrs[1], secureAddrs[2], secureAddrs[3]})

	// Our handshake in the clear: the TLS server reads it as a bad
	// ClientHello and closes without a byte of our protocol.
	nc, err := net.DialTimeout("tcp", c.Node(1).RaftAddr, 5*time.Second)
	must(t, err)
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = nc.Write(append([]byte(raftMagic), raftVersion))
	reply, _ := io.ReadAll(nc)
	if len(reply) > 0 && reply[0] != 0x15 { // 0x15: a TLS alert record
		t.Fatalf("a plain connection to the Raft port was answered %x", reply)
	}

	const topic = "secure-kills"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 3, 100)
	for i := range rounds(1, 6) {
		leaderKill(ctx, t, c, l.w, &l.h, l.sum, topic, int32(i%3))
	}
	must(t, l.w.WaitAcked(ctx, -1, time.Now(), 100))
	l.finish(ctx, t)
}

// secureTransaction commits a transaction over the three partitions of
// a new topic through the SASL_SSL listeners (the markers go from node to
// node over SASL_SSL) and reads it back read_committed.
func secureTransaction(ctx context.Context, t *testing.T, certDir string, seeds []string) {
	t.Helper()
	pem, err := os.ReadFile(nodecert.FilesIn(certDir, 1).CA)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(kscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())}
	// The nodes create admin (sasl_users) once the cluster is up; each
	// node authenticates it once its copy of the metadata has it.
	for _, seed := range seeds {
		for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.SeedBrokers(seed), kgo.RequestRetries(0))...)
			must(t, err)
			err = cl.Ping(ctx)
			cl.Close()
			if err == nil {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("admin cannot authenticate over SASL_SSL at %s: %v", seed, err)
			}
		}
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ctx = tctx
	const topic = "secure-tx"
	p, err := kgo.NewClient(append(opts, kgo.TransactionalID("secure"), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation())...)
	must(t, err)
	defer p.Close()
	var want []string
	must(t, p.BeginTransaction())
	for i := range 30 {
		v := fmt.Sprintf("tx-%d", i)
		want = append(want, v)
		must(t, p.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr())
	}
	must(t, p.EndTransaction(ctx, kgo.TryCommit))

	cons, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	must(t, err)
	defer cons.Close()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed over SASL_SSL read %v, want %v", got, want)
	}
}
