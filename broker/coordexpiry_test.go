package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// restartAll stops every node gracefully, applies o to each node's config
// and starts them all again.
func restartAll(t *testing.T, c *testcluster.Cluster, n int, o testcluster.Option) {
	t.Helper()
	for i := 1; i <= n; i++ {
		c.StopNode(i)
	}
	for i := 1; i <= n; i++ {
		if o != nil {
			c.Configure(i, o)
		}
		c.StartNode(i)
	}
	c.WaitReady()
}

// marks are the high watermarks, by partition of topic, that the
// partitions of keys (mapped by part) have reached on some running node:
// a replica that applied as far holds everything written before.
func marks(c *testcluster.Cluster, topic string, part func(key string, n int32) int32, keys ...string) map[int32]int64 {
	parts, _ := c.Running()[0].MetadataState().TopicPartitions(topic)
	out := map[int32]int64{}
	for _, k := range keys {
		p := part(k, parts)
		for _, nd := range c.Running() {
			if _, hw, ok := nd.ReplicaOffsets(topic, p); ok {
				out[p] = max(out[p], hw)
			}
		}
	}
	return out
}

// appliedTo reports whether every running node's replica of each
// partition of topic in hws has applied up to its mark.
func appliedTo(c *testcluster.Cluster, topic string, hws map[int32]int64) bool {
	for _, nd := range c.Running() {
		for p, want := range hws {
			if _, hw, ok := nd.ReplicaOffsets(topic, p); !ok || hw < want {
				return false
			}
		}
	}
	return true
}

// groupsGone reports whether every running node's replica view holds
// none of groups.
func groupsGone(c *testcluster.Cluster, groups ...string) bool {
	for _, nd := range c.Running() {
		for _, g := range groups {
			if offsets, known, ok := nd.GroupInView(g); !ok || known || offsets != 0 {
				return false
			}
		}
	}
	return true
}

// viewsLoaded reports whether every running node holds the view of the
// __consumer_offsets partition of each of groups.
func viewsLoaded(c *testcluster.Cluster, groups ...string) bool {
	for _, nd := range c.Running() {
		for _, g := range groups {
			if _, _, ok := nd.GroupInView(g); !ok {
				return false
			}
		}
	}
	return true
}

// txnViewsLoaded reports whether every running node holds the view of the
// __transaction_state partition of each of ids.
func txnViewsLoaded(c *testcluster.Cluster, ids ...string) bool {
	for _, nd := range c.Running() {
		for _, id := range ids {
			if _, _, ok := nd.TxnInView(id); !ok {
				return false
			}
		}
	}
	return true
}

// commitSimple commits offset at for topic/0 as a consumer without a
// group protocol (kadm: no member, generation -1).
func commitSimple(t *testing.T, adm *kadm.Client, group, topic string, at int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
	eventually(t, 30*time.Second, "commit of "+group+" accepted", func() bool {
		resp, err := adm.CommitOffsets(ctx, group, os)
		return err == nil && resp.Error() == nil
	})
}

// shortOffsetsRetention makes offsets expire 2 s after their group became
// empty (or their commit), checked every 100 ms.
func shortOffsetsRetention(cfg *broker.Config) {
	cfg.OffsetsRetention, cfg.OffsetsRetentionCheckInterval = 2*time.Second, 100*time.Millisecond
}

// Committed offsets expire by the decision of their __consumer_offsets
// partition's leader, written through Raft: a standalone consumer's
// offsets and an empty group's (which is removed) leave every replica's
// view alike; after a full restart with a shorter retention, after the
// leader is killed (its successor decides), and after another full
// restart nothing comes back.
func TestOffsetsExpireOnEveryReplica(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "oe", 1, 3)
	produceSpread(t, cl, "oe", 1, 3, "v")
	adm := kadm.NewClient(cl)
	commitSimple(t, adm, "solo", "oe", 2)
	m := joinGroup(t, c, "grp", "oe")
	got := 0
	eventually(t, 60*time.Second, "the group member consumes and commits", func() bool {
		n, _ := m.poll(t)
		got += n
		return got >= 3
	})
	m.cl.Close() // leaves: the group is empty
	eventually(t, 30*time.Second, "every replica holds both groups' offsets", func() bool {
		for _, nd := range c.Running() {
			for _, g := range []string{"solo", "grp"} {
				if offsets, known, ok := nd.GroupInView(g); !ok || !known || offsets != 1 {
					return false
				}
			}
		}
		return true
	})

	offsetsMarks := func(groups ...string) map[int32]int64 {
		return marks(c, metadata.ConsumerOffsetsTopic, metadata.GroupPartition, groups...)
	}
	before := offsetsMarks("solo", "grp")
	restartAll(t, c, 3, shortOffsetsRetention)
	eventually(t, 30*time.Second, "every replica dropped both groups", func() bool {
		return appliedTo(c, metadata.ConsumerOffsetsTopic, before) && groupsGone(c, "solo", "grp")
	})

	adm = kadm.NewClient(c.Client(t))
	commitSimple(t, adm, "solo2", "oe", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var coord int32 = -1
	eventually(t, 10*time.Second, "coordinator known", func() bool {
		r := adm.FindGroupCoordinators(ctx, "solo2")["solo2"]
		coord = r.NodeID
		return r.Err == nil && coord > 0
	})
	before = offsetsMarks("solo2")
	c.HaltNode(int(coord))
	eventually(t, 30*time.Second, "the new leader expired solo2 on the live replicas", func() bool {
		return appliedTo(c, metadata.ConsumerOffsetsTopic, before) && groupsGone(c, "solo2")
	})
	before = offsetsMarks("solo", "grp", "solo2")
	c.StartNode(int(coord))
	c.WaitReady()
	eventually(t, 30*time.Second, "the killed leader's replica agrees", func() bool {
		return appliedTo(c, metadata.ConsumerOffsetsTopic, before) && groupsGone(c, "solo", "grp", "solo2")
	})

	before = offsetsMarks("solo", "grp", "solo2")
	restartAll(t, c, 3, nil)
	eventually(t, 30*time.Second, "the replicas caught up after the restart", func() bool {
		return appliedTo(c, metadata.ConsumerOffsetsTopic, before)
	})
	// A restarted replica's view may not be loaded yet: wait for it, then
	// look (a view that is not there is not a group that came back).
	eventually(t, 30*time.Second, "every replica's view loaded", func() bool {
		return viewsLoaded(c, "solo", "grp", "solo2")
	})
	if !groupsGone(c, "solo", "grp", "solo2") {
		t.Fatal("an expired group came back after a full restart")
	}
	offsets, err := adm.FetchOffsets(ctx, "grp")
	if err == nil && offsets.Error() == nil {
		if o, ok := offsets.Lookup("oe", 0); ok && o.At >= 0 {
			t.Fatalf("the coordinator still serves an expired offset: %+v", o)
		}
	}
}

// A transactional id idle past transactional.id.expiration.ms leaves
// every replica's view of its __transaction_state partition by the
// leader's decision, also one decided by a new leader after a kill, and
// stays gone after a full restart; its next InitProducerId gets a new
// producer id.
func TestTransactionalIDsExpireOnEveryReplica(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "te", 1, 3)
	first := transactOnce(t, c, "tx-a", "te")
	eventually(t, 30*time.Second, "every replica holds tx-a", func() bool { return txnOnEvery(c, "tx-a", true) })

	txnMarks := func(ids ...string) map[int32]int64 {
		return marks(c, metadata.TransactionStateTopic, metadata.TxnPartition, ids...)
	}
	before := txnMarks("tx-a")
	restartAll(t, c, 3, func(cfg *broker.Config) {
		cfg.TransactionalIDExpirationMs, cfg.TxnRemoveExpiredInterval = 2000, 100*time.Millisecond
	})
	eventually(t, 30*time.Second, "every replica forgot tx-a", func() bool {
		return appliedTo(c, metadata.TransactionStateTopic, before) && txnOnEvery(c, "tx-a", false)
	})

	transactOnce(t, c, "tx-b", "te")
	parts, _ := c.Node(1).MetadataState().TopicPartitions(metadata.TransactionStateTopic)
	leader, _ := c.Leader(metadata.TransactionStateTopic, metadata.TxnPartition("tx-b", parts), 10*time.Second)
	before = txnMarks("tx-b")
	c.HaltNode(int(leader))
	eventually(t, 30*time.Second, "the new leader made the live replicas forget tx-b", func() bool {
		return appliedTo(c, metadata.TransactionStateTopic, before) && txnOnEvery(c, "tx-b", false)
	})
	before = txnMarks("tx-a", "tx-b")
	c.StartNode(int(leader))
	c.WaitReady()
	eventually(t, 30*time.Second, "the killed leader's replica agrees", func() bool {
		return appliedTo(c, metadata.TransactionStateTopic, before) && txnOnEvery(c, "tx-a", false) && txnOnEvery(c, "tx-b", false)
	})

	before = txnMarks("tx-a", "tx-b")
	restartAll(t, c, 3, nil)
	// A restarted replica may apply past the mark before its view is
	// attached; wait for both, as txnOnEvery counts a missing view as a
	// failure.
	eventually(t, 30*time.Second, "the replicas caught up after the restart", func() bool {
		return appliedTo(c, metadata.TransactionStateTopic, before) && txnViewsLoaded(c, "tx-a", "tx-b")
	})
	if !txnOnEvery(c, "tx-a", false) || !txnOnEvery(c, "tx-b", false) {
		for _, nd := range c.Running() {
			for _, id := range []string{"tx-a", "tx-b"} {
				pid, known, ok := nd.TxnInView(id)
				t.Logf("node %d: %s known=%v (producer id %d), view=%v", nd.ID(), id, known, pid, ok)
			}
		}
		t.Fatal("an expired transactional id came back after a full restart")
	}
	if again := transactOnce(t, c, "tx-a", "te"); again == first {
		t.Fatalf("tx-a kept producer id %d after it expired", first)
	}
}

// transactOnce commits one transaction of transactional id id to topic and
// returns the producer id it ran under.
//
// With a short transactional.id.expiration.ms the id may expire, rightly,
// between the client's InitProducerId and its AddPartitionsToTxn when a
// loaded machine stalls the client that long (the id is Empty meanwhile):
// the produce then fails with INVALID_PRODUCER_ID_MAPPING, and a new
// client starts again, as an application would.
func transactOnce(t *testing.T, c *testcluster.Cluster, id, topic string) int64 {
	t.Helper()
	for attempt := 1; ; attempt++ {
		pid, err := tryTransactOnce(t, c, id, topic)
		if err == nil {
			return pid
		}
		if !errors.Is(err, kerr.InvalidProducerIDMapping) || attempt == 3 {
			t.Fatalf("produce in %s's transaction: %v", id, err)
		}
		t.Logf("%s expired between its InitProducerId and its first produce (%v); again", id, err)
	}
}

// tryTransactOnce is one attempt of transactOnce; it returns the error of
// the produce and fails t on any other.
func tryTransactOnce(t *testing.T, c *testcluster.Cluster, id, topic string) (int64, error) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(id)}).FirstErr(); err != nil {
		return 0, err
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit %s: %v", id, err)
	}
	pid, _, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return pid, nil
}

// txnOnEvery reports whether every running node's replica view holds id
// (want true) or none does (want false).
func txnOnEvery(c *testcluster.Cluster, id string, want bool) bool {
	for _, nd := range c.Running() {
		if _, known, ok := nd.TxnInView(id); !ok || known != want {
			return false
		}
	}
	return true
}

// An id whose InitProducerId is answered and whose producer then stays
// idle past transactional.id.expiration.ms expires while Empty, as in
// Kafka: its AddPartitionsToTxn gets INVALID_PRODUCER_ID_MAPPING. (What
// transactOnce retries when a loaded machine stalls a client that long.)
func TestTransactionalIDExpiresBeforeItsFirstAdd(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.TransactionalIDExpirationMs, cfg.TxnRemoveExpiredInterval = 500, 50*time.Millisecond
	})
	cl := c.Client(t, v1Versions())
	createTopic(t, cl, "idle", 1, 1)
	id := kmsg.StringPtr("idle-tx")
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = id, 60_000
	ir := txnRequest(t, cl, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	wantCode(t, "InitProducerId", ir.ErrorCode, nil)
	eventually(t, 30*time.Second, "the idle id expired", func() bool { return txnOnEvery(c, "idle-tx", false) })

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = *id, ir.ProducerID, ir.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "idle", []int32{0}
	add.Topics = append(add.Topics, at)
	ar := txnRequest(t, cl, add, func(r *kmsg.AddPartitionsToTxnResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	wantCode(t, "AddPartitionsToTxn after the id expired", ar.Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerIDMapping)
}
