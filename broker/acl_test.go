package broker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcert"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// aclCluster is secureCluster with authorisation on, admin a super user,
// and a second SASL user alice.
func aclCluster(t *testing.T, n int, opts ...testcluster.Option) (*testcluster.Cluster, *tls.Config) {
	t.Helper()
	opts = append([]testcluster.Option{func(c *broker.Config) {
		c.AuthorizationEnabled = true
		c.SuperUsers = []string{"User:admin"}
		c.SASLUsers = append(c.SASLUsers, broker.SASLUser{Name: "alice", Password: "alice-secret"})
	}}, opts...)
	c, tlsCfg := secureCluster(t, n, opts...)
	waitForUser(t, c, tlsCfg, "admin", "admin-secret")
	waitForUser(t, c, tlsCfg, "alice", "alice-secret")
	return c, tlsCfg
}

func userClient(t *testing.T, c *testcluster.Cluster, tlsCfg *tls.Config, user, pass string, opts ...kgo.Opt) *kgo.Client {
	return saslClient(t, listenerAddrs(c, "SASL_SSL"), tlsCfg, kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), opts...)
}

func mustCreateACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create %+v: %v", r, r.Err)
		}
	}
}

// A SASL user allowed WRITE on topic a, not b, produces to a and is
// refused b; a group it may not READ is refused; the super user passes.
func TestACLProduceAndGroupAuthorization(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 1)
	admin := userClient(t, c, tlsCfg, "admin", "admin-secret")
	adm := kadm.NewClient(admin)
	createTopic(t, admin, "a", 1, 1)
	createTopic(t, admin, "b", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	alice := userClient(t, c, tlsCfg, "alice", "alice-secret", kgo.RecordRetries(2), kgo.RequestRetries(2))
	// Nothing is granted yet: deny by default.
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce before any ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("a").Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to a: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "b", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to b: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// The super user is bound by no ACL.
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "b", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("admin produce to b: %v", err)
	}
	// A metadata request for all topics shows alice only a.
	topics, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); len(names) != 1 || names[0] != "a" {
		t.Fatalf("alice sees topics %v, want [a]", names)
	}

	aliceAdm := kadm.NewClient(alice)
	if _, err := aliceAdm.FetchOffsets(ctx, "g"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("offsets of a group without READ: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	consumer := userClient(t, c, tlsCfg, "alice", "alice-secret", kgo.ConsumerGroup("g"), kgo.ConsumeTopics("a"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	fs := consumer.PollFetches(pctx)
	pcancel()
	var groupErr error
	fs.EachError(func(_ string, _ int32, err error) {
		if errors.Is(err, kerr.GroupAuthorizationFailed) {
			groupErr = err
		}
	})
	if groupErr == nil {
		t.Fatalf("consumer in group g without READ: errors %v, want GROUP_AUTHORIZATION_FAILED", fs.Errors())
	}

	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("g").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	// The internal offsets topic may still be coming up: retry while
	// the coordinator is not available, never past an authorisation error.
	eventually(t, 30*time.Second, "offsets with READ on the group", func() bool {
		_, err := aliceAdm.FetchOffsets(ctx, "g")
		if errors.Is(err, kerr.GroupAuthorizationFailed) {
			t.Fatalf("offsets with READ on the group: %v", err)
		}
		return err == nil
	})
}

// ACLs round-trip through kadm, are seen on another node, survive a
// restart; DENY beats ALLOW; prefixed patterns apply to their prefix.
func TestACLAdminRoundTripAndSemantics(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 3)
	admin := userClient(t, c, tlsCfg, "admin", "admin-secret")
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, name := range []string{"logs-app", "logs-secret", "other"} {
		createTopic(t, admin, name, 1, 3)
	}

	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("logs-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
	mustCreateACLs(t, adm, kadm.NewACLs().Deny("User:alice").Topics("logs-secret").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		n += len(d.Described)
	}
	if n != 2 {
		t.Fatalf("described %d bindings, want 2: %+v", n, described)
	}

	alice := userClient(t, c, tlsCfg, "alice", "alice-secret", kgo.RecordRetries(2), kgo.RequestRetries(2))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "logs-app", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("prefixed ALLOW ALL: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "logs-secret", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DENY WRITE under a prefixed ALLOW ALL: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("outside the prefix: %v", err)
	}

	// Every node applied them through the metadata group.
	for _, nd := range c.Running() {
		eventually(t, 20*time.Second, "acls on every node", func() bool { return nd.ACLCount() == 2 })
	}
	// A node restarts with them.
	c.StopNode(2)
	c.StartNode(2)
	c.WaitReady()
	eventually(t, 30*time.Second, "acls after restart", func() bool { return c.Node(2).ACLCount() == 2 })

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Deny("User:alice").Topics("logs-secret").Operations(kadm.OpWrite).DenyHosts().ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 {
		t.Fatalf("deleted %+v", deleted)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "logs-secret", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("after deleting the DENY: %v", err)
	}

	// alice may not manage ACLs: CLUSTER_AUTHORIZATION_FAILED.
	res, err := kadm.NewClient(alice).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("other").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice creating an ACL: %+v", res)
	}
	// Nor SCRAM users.
	dr, err := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest().RequestWith(ctx, alice)
	if err != nil || dr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice listing users: %+v, %v", dr, err)
	}
	ar := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "admin", 2
	ar.Deletions = append(ar.Deletions, del)
	if resp, err := ar.RequestWith(ctx, alice); err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice deleting admin: %+v, %v", resp, err)
	}
}

// A TLS client certificate's principal is User:<subject DN as Kafka
// prints it>: an ACL for User:CN=client lets the certificate's holder
// write, and only where it says.
func TestACLTLSClientCertificatePrincipal(t *testing.T) {
	t.Parallel()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.Listeners = []broker.ListenerConfig{
			{Name: "PLAINTEXT", Addr: "127.0.0.1:0"},
			{Name: "SSL", Addr: "127.0.0.1:0", TLSCertFile: files.Cert, TLSKeyFile: files.Key,
				TLSCAFile: files.CA, ClientAuth: broker.ClientAuthRequired},
		}
		cfg.AuthorizationEnabled = true
		cfg.Security.RaftAllowUnauthenticated = true
		cfg.SuperUsers = []string{"User:ANONYMOUS"} // the plaintext admin here
	})
	admin, err := kgo.NewClient(kgo.SeedBrokers(listenerAddrs(c, "PLAINTEXT")...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopic(t, admin, "x", 1, 1)
	createTopic(t, admin, "y", 1, 1)
	mustCreateACLs(t, kadm.NewClient(admin), kadm.NewACLs().Allow("User:CN=client").Topics("x").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))

	cliTLS, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	cliTLS.Certificates = []tls.Certificate{cert}
	cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddrs(c, "SSL")...), kgo.DialTLSConfig(cliTLS), kgo.RecordRetries(2), kgo.RequestRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "x", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("certificate holder producing to x: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "y", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("certificate holder producing to y: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// ACLs are in the metadata snapshot: a single node restarts from it with
// them.
func TestACLsSurviveSnapshotRestart(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 1, func(cfg *broker.Config) {
		cfg.MetaRaft.SnapshotThreshold = 1
		cfg.MetaRaft.SnapshotInterval = 50 * time.Millisecond
	})
	admin := userClient(t, c, tlsCfg, "admin", "admin-secret")
	mustCreateACLs(t, kadm.NewClient(admin), kadm.NewACLs().Allow("User:alice").Groups("g").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	// A snapshot that covers the ACL: one may have been taken before the
	// list could be read, and with nothing more written none follows.
	applied := c.Node(1).MetaAppliedIndex()
	eventually(t, 30*time.Second, "a metadata snapshot covering the ACL", func() bool {
		return slices.ContainsFunc(snapshots(c), func(p string) bool {
			var term, index, ms uint64
			_, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d-%d-%d", &term, &index, &ms)
			return err == nil && index >= applied
		})
	})
	c.StopNode(1)
	c.StartNode(1)
	c.WaitReady()
	if n := c.Node(1).ACLCount(); n != 1 {
		t.Fatalf("%d ACLs after the restart, want 1", n)
	}
}

// A metadata follower restarted from a snapshot, with a committed ACL in
// its log after that snapshot, is ready only once it has applied it: raft
// starts its commit index at 0, and its leader's heartbeat makes the
// leader known before an AppendEntries says what is committed.
func TestACLsSurviveFollowerSnapshotRestart(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 3, func(cfg *broker.Config) {
		cfg.MetaRaft.SnapshotThreshold = 8
		cfg.MetaRaft.SnapshotInterval = 50 * time.Millisecond
	})
	adm := kadm.NewClient(userClient(t, c, tlsCfg, "admin", "admin-secret"))
	var f int
	for id := 1; id <= 3 && f == 0; id++ {
		if c.Node(id).MetadataLeader() != int32(id) {
			f = id
		}
	}
	acls := 0
	create := func() {
		acls++
		mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups(fmt.Sprintf("g%d", acls)).
			Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	}
	before := nodeSnapshots(c, f)
	eventually(t, 30*time.Second, "a follower's metadata snapshot", func() bool {
		create()
		for _, s := range nodeSnapshots(c, f) {
			if !slices.Contains(before, s) {
				return true
			}
		}
		return false
	})
	create() // one committed entry after the snapshot, too few for another
	c.StopNode(f)
	c.StartNode(f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Node(f).WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.Node(f).ACLCount(); n != acls {
		t.Fatalf("node %d ready with %d ACLs after the restart, want %d", f, n, acls)
	}
}

// snapshots lists node 1's metadata snapshots on disk (raft names each
// by term, index and time, so a new one has a new path).
func snapshots(c *testcluster.Cluster) []string { return nodeSnapshots(c, 1) }

// nodeSnapshots lists node id's metadata snapshots on disk.
func nodeSnapshots(c *testcluster.Cluster, id int) []string {
	m, _ := filepath.Glob(filepath.Join(c.DataDir(id), "meta", "snapshots", "*", "meta.json"))
	return m
}

// A transactional producer with WRITE on its transactional id and topic
// commits; without WRITE on the id it is refused at InitProducerId. (One
// node: its coordinator writes markers to its own partitions.)
func TestACLTransactionalProducer(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 1)
	admin := userClient(t, c, tlsCfg, "admin", "admin-secret")
	adm := kadm.NewClient(admin)
	createTopic(t, admin, "a", 3, 1)
	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("a").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	denied := userClient(t, c, tlsCfg, "alice", "alice-secret", kgo.TransactionalID("tx"), kgo.RequestRetries(2))
	err := denied.BeginTransaction() // franz-go may already have asked for the producer id
	if err == nil {
		err = denied.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional producer without WRITE on its id: %v", err)
	}

	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").TransactionalIDs("tx").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	tx := userClient(t, c, tlsCfg, "alice", "alice-secret", kgo.TransactionalID("tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "a", Partition: p, Value: []byte("committed")}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// The committed record is there for a read_committed consumer.
	cons := userClient(t, c, tlsCfg, "admin", "admin-secret", kgo.ConsumeTopics("a"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 3 {
		t.Fatalf("read_committed got %q", got)
	}
}

// DescribeTransactions shows a principal only the partitions of topics it
// may DESCRIBE, as Kafka's KafkaApis does: alice, with DESCRIBE on the
// transactional id and on topic a, sees an ongoing transaction over a and
// b as one over a; the super user sees both.
func TestACLDescribeTransactionsHidesTopics(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 1)
	admin := userClient(t, c, tlsCfg, "admin", "admin-secret")
	adm := kadm.NewClient(admin)
	createTopic(t, admin, "a", 1, 1)
	createTopic(t, admin, "b", 1, 1)
	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("a").TransactionalIDs("tx").
		Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tx := userClient(t, c, tlsCfg, "admin", "admin-secret", kgo.TransactionalID("tx"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b"} {
		if err := tx.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("transactional produce to %s: %v", topic, err)
		}
	}
	defer tx.EndTransaction(ctx, kgo.TryAbort)

	describe := func(cl *kgo.Client) []string {
		t.Helper()
		d, err := kadm.NewClient(cl).DescribeTransactions(ctx, "tx")
		if err != nil || d["tx"].Err != nil || d["tx"].State != "Ongoing" {
			t.Fatalf("DescribeTransactions: %+v, %v", d, err)
		}
		return d["tx"].Topics.Topics()
	}
	if got := describe(admin); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("the super user sees topics %v, want [a b]", got)
	}
	alice := userClient(t, c, tlsCfg, "alice", "alice-secret")
	if got := describe(alice); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("alice, without DESCRIBE on b, sees topics %v, want [a]", got)
	}
}
