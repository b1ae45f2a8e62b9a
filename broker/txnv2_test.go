package broker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/record"
)

// keyCounter counts the requests a franz-go client writes, by API key.
type keyCounter struct {
	mu sync.Mutex // guards n
	n  map[int16]int
}

var _ kgo.HookBrokerWrite = (*keyCounter)(nil)

func (k *keyCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = make(map[int16]int)
	}
	k.n[key]++
}

func (k *keyCounter) count(key kmsg.Key) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[int16(key)]
}

// txnEpoch is the producer id and epoch the coordinator holds for id.
func txnEpoch(t *testing.T, adm *kadm.Client, id string) (int64, int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ds.On(id, nil)
	if err != nil || d.Err != nil {
		t.Fatalf("describe %s: %v %v", id, err, d.Err)
	}
	return d.ProducerID, d.ProducerEpoch
}

// finalized reports node id's finalized level of a feature from its
// ApiVersions, -1 if it lists none, -2 if the node did not answer (a
// connection to a restarted node fails once).
func finalized(t *testing.T, cl *kgo.Client, node int32, feature string) int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(node)).Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		return -2
	}
	for _, f := range resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == feature {
			return f.MaxVersionLevel
		}
	}
	return -1
}

// TestTxnV2FranzGo: with transaction.version 2 finalized (the default),
// franz-go runs transactions v2 against a 3-node cluster: no
// AddPartitionsToTxn reaches any node, the coordinator bumps the epoch at
// every EndTxn and the partitions' producer state takes the bumped epoch,
// a read_committed consumer sees exactly the committed records, and a
// zombie's batch with an epoch from before a commit is fenced, both by the
// coordinator (Produce v12) and by the partition's producer state.
func TestTxnV2FranzGo(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "v2-out", 3, 3)
	for n := int32(1); n <= 3; n++ {
		if got := finalized(t, cl, n, "transaction.version"); got != 2 {
			t.Fatalf("node %d finalizes transaction.version %d, want 2", n, got)
		}
	}
	hook := &keyCounter{}
	p := c.Client(t, kgo.TransactionalID("v2-producer"), kgo.DefaultProduceTopic("v2-out"), kgo.WithHooks(hook))
	transaction(t, p, true, seq("c1", 10)...)
	pid, e1 := txnEpoch(t, adm, "v2-producer")
	transaction(t, p, false, seq("ab", 10)...)
	_, e2 := txnEpoch(t, adm, "v2-producer")
	transaction(t, p, true, seq("c2", 5)...)
	_, e3 := txnEpoch(t, adm, "v2-producer")
	if e2 != e1+1 || e3 != e2+1 {
		t.Fatalf("epochs after each transaction %d, %d, %d: want one bump per EndTxn", e1, e2, e3)
	}
	if n := hook.count(kmsg.AddPartitionsToTxn); n != 0 {
		t.Fatalf("the producer sent %d AddPartitionsToTxn; transactions v2 sends none", n)
	}
	if hook.count(kmsg.EndTxn) < 3 {
		t.Fatalf("%d EndTxn sent", hook.count(kmsg.EndTxn))
	}

	reader := c.Client(t, kgo.ConsumeTopics("v2-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, reader, 15, time.Second)
	want := append(seq("c1", 10), seq("c2", 5)...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
	p.Close()

	// The partitions the last transaction wrote hold the epoch its marker
	// carried: the one the coordinator now has.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prods, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"v2-out": {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	seen, held := 0, int32(-1)
	prods.EachProducer(func(d kadm.DescribedProducer) {
		if d.ProducerID == pid {
			seen, held = seen+1, d.Partition
			if d.ProducerEpoch != e3 {
				t.Errorf("%s-%d holds epoch %d for the producer, want %d", d.Topic, d.Partition, d.ProducerEpoch, e3)
			}
		}
	})
	if seen == 0 {
		t.Fatal("no partition describes the producer")
	}
	zombieIsFenced(t, c, "v2-out", held, pid, e3-1)

	// ListTransactions v2 filters by a pattern of the ids.
	if got, code := listTxnIDs(t, cl, "^v2-prod"); code != 0 || !slices.Equal(got, []string{"v2-producer"}) {
		t.Fatalf("ListTransactions ^v2-prod: %v %v", got, kerr.ErrorForCode(code))
	}
	if got, code := listTxnIDs(t, cl, "^none"); code != 0 || len(got) != 0 {
		t.Fatalf("ListTransactions ^none: %v %v", got, kerr.ErrorForCode(code))
	}
	if _, code := listTxnIDs(t, cl, "(unclosed"); code != kerr.InvalidRegularExpression.Code {
		t.Fatalf("ListTransactions with a bad pattern: %v, want INVALID_REGULAR_EXPRESSION", kerr.ErrorForCode(code))
	}
}

// listTxnIDs asks every node of a 3-node cluster for its transactions
// whose id matches pattern (ListTransactions v2) and returns them, sorted,
// with the last error code seen.
func listTxnIDs(t *testing.T, cl *kgo.Client, pattern string) ([]string, int16) {
	t.Helper()
	var ids []string
	var code int16
	for n := 1; n <= 3; n++ {
		req := kmsg.NewPtrListTransactionsRequest()
		req.TransactionalIDPattern = kmsg.StringPtr(pattern)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.Broker(n).Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		lr := resp.(*kmsg.ListTransactionsResponse)
		if lr.ErrorCode != 0 {
			code = lr.ErrorCode
		}
		for _, st := range lr.TransactionStates {
			ids = append(ids, st.TransactionalID)
		}
	}
	slices.Sort(ids)
	return ids, code
}

// zombieIsFenced sends batches of producer pid at a stale epoch to a
// partition of topic that holds the producer: a transactional one
// (Produce v12, whose partition the coordinator would add) and an
// idempotent one (Produce v9, judged by the partition's producer state
// alone). Both must be INVALID_PRODUCER_EPOCH.
func zombieIsFenced(t *testing.T, c *testcluster.Cluster, topic string, p int32, pid int64, epoch int16) {
	t.Helper()
	for _, tc := range []struct {
		version       int16
		transactional bool
	}{{12, true}, {9, false}} {
		cl := c.Client(t, kgo.MaxVersions(maxProduce(tc.version)))
		batch, err := record.AppendBatch(nil, record.BatchOptions{ProducerID: pid, ProducerEpoch: epoch,
			BaseSequence: 0, Transactional: tc.transactional}, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("zombie")}})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		if tc.transactional {
			req.TransactionID = kmsg.StringPtr("v2-producer")
		}
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		leader, _ := c.Leader(topic, p, 10*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.Broker(int(leader)).Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		if code != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("zombie batch (Produce v%d, transactional %v) at epoch %d: %v, want INVALID_PRODUCER_EPOCH",
				tc.version, tc.transactional, epoch, kerr.ErrorForCode(code))
		}
	}
}

// v1Versions caps a client at Kafka 3.9's versions (Produce v11, EndTxn
// v4, TxnOffsetCommit v4): the requests of transactions v1 whatever the
// cluster finalizes, as kgo otherwise sends every request at the highest
// version both sides know.
func v1Versions() kgo.Opt { return kgo.MaxVersions(kversion.V3_9_0()) }

// maxProduce is Kafka 4.0's versions with Produce capped at v.
func maxProduce(v int16) *kversion.Versions {
	vs := kversion.V4_0_0()
	vs.SetMaxKeyVersion(int16(kmsg.Produce), v)
	return vs
}

// TestTxnV2GroupTransactSession: a consume-transform-produce session under
// transactions v2 commits its offsets with TxnOffsetCommit v5, which adds
// the offsets partition itself: no AddOffsetsToTxn (nor
// AddPartitionsToTxn) is sent, every input is copied once, and a second
// session of the group finds the offsets committed.
func TestTxnV2GroupTransactSession(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "eos-in", 3, 3)
	createTopic(t, cl, "eos-out", 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := values(60, "in")
	if err := cl.ProduceSync(ctx, withTopic(in, "eos-in")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	hook := &keyCounter{}
	if n := copyOnceWith(t, c, len(in), 0, kgo.WithHooks(hook)); n != len(in) {
		t.Fatalf("first session copied %d records, want %d", n, len(in))
	}
	if a, o, x := hook.count(kmsg.AddPartitionsToTxn), hook.count(kmsg.AddOffsetsToTxn), hook.count(kmsg.TxnOffsetCommit); a != 0 || o != 0 || x == 0 {
		t.Fatalf("AddPartitionsToTxn %d, AddOffsetsToTxn %d, TxnOffsetCommit %d: want 0, 0 and some", a, o, x)
	}
	if n := copyOnceWith(t, c, 0, 3*time.Second); n != 0 {
		t.Fatalf("a second session of the group copied %d records again", n)
	}
	reader := c.Client(t, kgo.ConsumeTopics("eos-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := pollValues(t, reader, len(in), time.Second); len(got) != len(in) {
		t.Fatalf("output has %d records, want %d", len(got), len(in))
	}
}

// TestTxnV1ClientStillWorks: a franz-go producer capped at Kafka 3.9's
// versions (Produce v11, EndTxn v4) runs transactions v1 on a cluster
// with transaction.version 2: it adds its partitions with
// AddPartitionsToTxn, the epoch does not move between its transactions,
// and commits and aborts are read as such.
func TestTxnV1ClientStillWorks(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "v1-out", 3, 3)
	hook := &keyCounter{}
	p := c.Client(t, kgo.TransactionalID("v1-producer"), kgo.DefaultProduceTopic("v1-out"), kgo.WithHooks(hook),
		v1Versions())
	transaction(t, p, true, seq("c1", 5)...)
	_, e1 := txnEpoch(t, adm, "v1-producer")
	transaction(t, p, false, seq("ab", 5)...)
	transaction(t, p, true, seq("c2", 5)...)
	_, e3 := txnEpoch(t, adm, "v1-producer")
	if e3 != e1 {
		t.Fatalf("epoch moved from %d to %d under transactions v1", e1, e3)
	}
	if hook.count(kmsg.AddPartitionsToTxn) == 0 {
		t.Fatal("the v1 producer sent no AddPartitionsToTxn")
	}
	reader := c.Client(t, kgo.ConsumeTopics("v1-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, reader, 10, time.Second)
	want := append(seq("c1", 5), seq("c2", 5)...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
}

// TestUpdateFeaturesTransactionVersion: UpdateFeatures checks levels as
// Kafka does; transaction.version downgraded to 0 is no longer finalized
// on any node, also after a node restarts, and a new franz-go producer
// then runs transactions v1 (AddPartitionsToTxn) and still commits;
// upgraded back to 2, a new producer runs v2 again.
func TestUpdateFeaturesTransactionVersion(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "tv-out", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	update := func(level int16, upgradeType int8) error {
		res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: level, UpgradeType: upgradeType})
		if err != nil {
			return err
		}
		return res.Error()
	}
	for _, bad := range []struct {
		level int16
		typ   int8
	}{{0, 1}, {3, 1}, {-5, 1}} {
		if err := update(bad.level, bad.typ); !errors.Is(err, kerr.InvalidUpdateVersion) {
			t.Fatalf("transaction.version %d (upgrade type %d): %v, want INVALID_UPDATE_VERSION", bad.level, bad.typ, err)
		}
	}
	res, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("validate-only downgrade: %v %v", err, res.Error())
	}
	if got := finalized(t, cl, 1, "transaction.version"); got != 2 {
		t.Fatalf("a validate-only downgrade changed transaction.version to %d", got)
	}
	if err := update(0, 2); err != nil {
		t.Fatalf("safe downgrade to 0: %v", err)
	}
	for n := int32(1); n <= 3; n++ {
		eventually(t, 10*time.Second, "transaction.version off everywhere", func() bool {
			return finalized(t, cl, n, "transaction.version") == -1
		})
	}
	c.StopNode(2)
	c.StartNode(2)
	c.WaitReady()
	var got int16
	eventually(t, 10*time.Second, "node 2 answers ApiVersions after its restart", func() bool {
		got = finalized(t, cl, 2, "transaction.version")
		return got != -2
	})
	if got != -1 {
		t.Fatalf("after a restart node 2 finalizes transaction.version %d", got)
	}

	hook := &keyCounter{}
	p := c.Client(t, kgo.TransactionalID("tv-producer"), kgo.DefaultProduceTopic("tv-out"), kgo.WithHooks(hook))
	transaction(t, p, true, seq("v1", 5)...)
	if hook.count(kmsg.AddPartitionsToTxn) == 0 {
		t.Fatal("with transaction.version 0 the producer sent no AddPartitionsToTxn")
	}
	p.Close()

	if err := update(2, 1); err != nil {
		t.Fatalf("upgrade to 2: %v", err)
	}
	eventually(t, 10*time.Second, "transaction.version 2 again", func() bool {
		return finalized(t, cl, 1, "transaction.version") == 2 && finalized(t, cl, 3, "transaction.version") == 2
	})
	hook2 := &keyCounter{}
	p2 := c.Client(t, kgo.TransactionalID("tv-producer"), kgo.DefaultProduceTopic("tv-out"), kgo.WithHooks(hook2))
	transaction(t, p2, true, seq("v2", 5)...)
	if n := hook2.count(kmsg.AddPartitionsToTxn); n != 0 {
		t.Fatalf("with transaction.version 2 the producer sent %d AddPartitionsToTxn", n)
	}
	reader := c.Client(t, kgo.ConsumeTopics("tv-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := pollValues(t, reader, 10, time.Second); len(got) != 10 {
		t.Fatalf("read_committed read %d records, want 10", len(got))
	}
}
