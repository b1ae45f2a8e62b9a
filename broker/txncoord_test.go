package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// transaction runs one transaction of a franz-go transactional producer:
// values produced, then committed or aborted.
func transaction(t *testing.T, p *kgo.Client, commit bool, vals ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// TestFranzGoTransactionalProducer: franz-go's transactional producer
// (FindCoordinator for transactions, InitProducerId, AddPartitionsToTxn,
// EndTxn) commits and aborts transactions over three partitions of a
// 3-node cluster; a read_committed consumer sees exactly the committed
// records, a read_uncommitted one every record; the transaction state
// survives a restart of every node.
func TestFranzGoTransactionalProducer(t *testing.T) {
	// Not parallel: beside seven other clusters its ListTransactions after
	// the restart of every node once found none.
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "tx-out", 3, 3)
	p := c.Client(t, kgo.TransactionalID("tx-producer"), kgo.DefaultProduceTopic("tx-out"))
	transaction(t, p, true, seq("commit-a", 10)...)
	transaction(t, p, false, seq("abort", 10)...)
	transaction(t, p, true, seq("commit-b", 5)...)

	committed := c.Client(t, kgo.ConsumeTopics("tx-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, committed, 15, time.Second)
	slices.Sort(got)
	want := append(seq("commit-a", 10), seq("commit-b", 5)...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
	uncommitted := c.Client(t, kgo.ConsumeTopics("tx-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := pollValues(t, uncommitted, 25, 500*time.Millisecond); len(got) != 25 {
		t.Fatalf("read_uncommitted read %d records, want 25", len(got))
	}
	pid := describeAndList(t, cl, "tx-producer")
	p.Close()

	// Every node halted and restarted: the coordinators rebuild their
	// views from __transaction_state; the id keeps its producer id.
	for id := 1; id <= 3; id++ {
		c.HaltNode(id)
	}
	for id := 1; id <= 3; id++ {
		c.StartNode(id)
	}
	c.WaitReady()
	again := c.Client(t, kgo.TransactionalID("tx-producer"), kgo.DefaultProduceTopic("tx-out"))
	transaction(t, again, true, "after-restart")
	if got := describeAndList(t, c.Client(t), "tx-producer"); got != pid {
		t.Fatalf("producer id %d after the restart, want %d", got, pid)
	}
}

// describeAndList checks kadm's DescribeTransactions and ListTransactions
// of a transactional id whose last transaction committed, and returns its
// producer id.
func describeAndList(t *testing.T, cl *kgo.Client, id string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	// EndTxn answers once PrepareCommit is written; CompleteCommit follows
	// the markers.
	var described kadm.DescribedTransactions
	eventually(t, 10*time.Second, id+" in CompleteCommit", func() bool {
		var err error
		described, err = adm.DescribeTransactions(ctx, id, "never-used")
		return err == nil && described[id].State == "CompleteCommit"
	})
	d := described[id]
	if d.Err != nil || d.ProducerID < 0 || len(d.Topics) != 0 {
		t.Fatalf("DescribeTransactions %s: %+v", id, d)
	}
	if u := described["never-used"]; !errors.Is(u.Err, kerr.TransactionalIDNotFound) {
		t.Fatalf("DescribeTransactions of an unknown id: %+v", u)
	}
	listed, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil {
		t.Fatalf("ListTransactions: %v", err)
	}
	if l, ok := listed[id]; !ok || l.ProducerID != d.ProducerID || l.State != "CompleteCommit" {
		t.Fatalf("ListTransactions: %+v", listed)
	}
	if ongoing, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"}); err != nil || len(ongoing) != 0 {
		t.Fatalf("ListTransactions Ongoing: %+v %v", ongoing, err)
	}
	return d.ProducerID
}

// TestZombieProducerIsFenced: a second instance with the same
// transactional id fences the first: the first's open transaction is
// aborted, its later sends and its commit fail with PRODUCER_FENCED (or
// INVALID_PRODUCER_EPOCH), and none of its records becomes visible.
func TestZombieProducerIsFenced(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "zombie", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := c.Client(t, kgo.TransactionalID("zombie-tx"), kgo.DefaultProduceTopic("zombie"))
	transaction(t, old, true, "old-committed")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("old-open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	fresh := c.Client(t, kgo.TransactionalID("zombie-tx"), kgo.DefaultProduceTopic("zombie"))
	transaction(t, fresh, true, "new-committed") // its InitProducerId aborts old's transaction

	err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("old-after")}).FirstErr()
	if err == nil {
		err = old.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the zombie's send and commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	_ = old.EndTransaction(ctx, kgo.TryAbort)

	reader := c.Client(t, kgo.ConsumeTopics("zombie"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, reader, 2, time.Second)
	if want := []string{"old-committed", "new-committed"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want %v", got, want)
	}
	for _, v := range got {
		if strings.HasPrefix(v, "old-") && v != "old-committed" {
			t.Fatalf("a zombie's record is visible: %s", v)
		}
	}
}

// copyOnce runs a franz-go GroupTransactSession that copies topic in to
// topic out, one transaction per poll (output records and the group's
// offsets through TxnOffsetCommit), until want records were copied or,
// with want 0, until idle passes without any record.
func copyOnce(t *testing.T, c *testcluster.Cluster, want int, idle time.Duration) int {
	t.Helper()
	return copyOnceWith(t, c, want, idle)
}

// copyOnceWith is copyOnce with more options for the session's client.
func copyOnceWith(t *testing.T, c *testcluster.Cluster, want int, idle time.Duration, opts ...kgo.Opt) int {
	t.Helper()
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.TransactionalID("eos-copier"),
		kgo.DefaultProduceTopic("eos-out"), kgo.ConsumerGroup("eos-group"), kgo.ConsumeTopics("eos-in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	copied := 0
	deadline, quiet := time.Now().Add(60*time.Second), time.Now().Add(idle)
	for (want == 0 && time.Now().Before(quiet)) || (want > 0 && copied < want) {
		if time.Now().After(deadline) {
			t.Fatalf("copied %d of %d records", copied, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := sess.PollFetches(ctx)
		cancel()
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			sess.Produce(context.Background(), &kgo.Record{Key: r.Key, Value: append([]byte("copy-"), r.Value...)}, nil)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		committed, err := sess.End(ctx, kgo.TryCommit)
		cancel()
		if err != nil {
			t.Fatalf("end transaction: %v", err)
		}
		if committed {
			copied += len(recs)
		}
	}
	return copied
}

// TestGroupTransactSessionCopiesExactlyOnce: franz-go's
// consume-transform-produce session (a consumer group, read_committed,
// AddOffsetsToTxn and TxnOffsetCommit into __consumer_offsets, made
// visible by the COMMIT marker there) copies a topic: a read_committed
// reader of the output sees every input record once, and a second
// session of the same group finds nothing left to copy.
func TestGroupTransactSessionCopiesExactlyOnce(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "eos-in", 3, 3)
	createTopic(t, cl, "eos-out", 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := values(100, "in")
	if err := cl.ProduceSync(ctx, withTopic(in, "eos-in")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if n := copyOnce(t, c, len(in), 0); n != len(in) {
		t.Fatalf("first session copied %d records, want %d", n, len(in))
	}
	if n := copyOnce(t, c, 0, 3*time.Second); n != 0 {
		t.Fatalf("a second session of the group copied %d records again", n)
	}
	reader := c.Client(t, kgo.ConsumeTopics("eos-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := pollValues(t, reader, len(in), time.Second)
	var want []string
	for _, r := range in {
		want = append(want, "copy-"+string(r.Value))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("output has %d records, want each of the %d inputs once", len(got), len(want))
	}
}

func withTopic(recs []*kgo.Record, topic string) []*kgo.Record {
	for _, r := range recs {
		r.Topic = topic
	}
	return recs
}

// TestTransactionSurvivesCoordinatorFailover: the node coordinating a
// transactional id is halted with a transaction open; the partition's new
// leader takes the transaction over from its view of
// __transaction_state, franz-go's commit (retried at the new coordinator)
// succeeds, and a read_committed consumer reads the records.
func TestTransactionSurvivesCoordinatorFailover(t *testing.T) {
	// Not parallel: beside seven other clusters franz-go once gave up its
	// commit while still dialling the halted coordinator.
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "fo-tx", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := c.Client(t, kgo.TransactionalID("fo-producer"), kgo.DefaultProduceTopic("fo-tx"))
	transaction(t, p, true, "before")
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	coordinator := txnCoordinatorOf(t, ctx, cl, "fo-producer")
	if coordinator < 0 {
		t.Fatal("no transaction coordinator")
	}
	c.HaltNode(int(coordinator))
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the coordinator %d was halted: %v", coordinator, err)
	}
	transaction(t, p, false, "aborted-after")
	reader := c.Client(t, kgo.ConsumeTopics("fo-tx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := pollValues(t, reader, 2, time.Second); !slices.Equal(got, []string{"before", "during"}) {
		t.Fatalf("read_committed read %v after the failover", got)
	}
}

// TestHungTransactionIsAborted: a transaction left open past its timeout
// is aborted by its coordinator (checked every TxnAbortInterval by the
// leader's clock, written through Raft): read_committed readers move past
// it, and its producer, whose epoch the abort bumped, is fenced.
func TestHungTransactionIsAborted(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.TxnAbortInterval = 100 * time.Millisecond })
	cl := c.Client(t)
	createTopic(t, cl, "hung", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := c.Client(t, kgo.TransactionalID("hung-tx"), kgo.DefaultProduceTopic("hung"), kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("hung")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "hung", Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	reader := c.Client(t, kgo.ConsumeTopics("hung"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := pollValues(t, reader, 1, time.Second); !slices.Equal(got, []string{"plain"}) {
		t.Fatalf("read_committed read %v, want the plain record once the hung transaction is aborted", got)
	}
	err := p.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("commit of the aborted transaction: %v, want it fenced", err)
	}
}

// TestNewCoordinatorCompletesPreparedCommit: a commit is accepted
// (PrepareCommit written) while the transaction's only partition is down,
// so its marker cannot be written; then the coordinator's node is halted
// too. When the partition's node returns, the new coordinator finds the
// PrepareCommit in its view, writes the marker and completes the commit:
// read_committed readers see the record.
func TestNewCoordinatorCompletesPreparedCommit(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "prep", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	owner, _ := c.Leader("prep", 0, 10*time.Second)
	id, coordinator := txnIDCoordinatedElsewhere(t, ctx, cl, "prep", owner)
	p := c.Client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic("prep"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("prepared")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.HaltNode(int(owner))
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit while the partition is down: %v", err)
	}
	p.Close()
	c.HaltNode(int(coordinator))
	c.StartNode(int(owner))
	reader := c.Client(t, kgo.ConsumeTopics("prep"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := pollValues(t, reader, 1, time.Second); !slices.Equal(got, []string{"prepared"}) {
		t.Fatalf("read_committed read %v", got)
	}
}

// txnIDCoordinatedElsewhere returns a transactional id named prefix-N
// whose coordinator is a node other than avoid, and that node.
func txnIDCoordinatedElsewhere(t *testing.T, ctx context.Context, cl *kgo.Client, prefix string, avoid int32) (string, int32) {
	t.Helper()
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if node := txnCoordinatorOf(t, ctx, cl, id); node >= 0 && node != avoid {
			return id, node
		}
		if ctx.Err() != nil {
			t.Fatalf("no transactional id coordinated elsewhere than node %d", avoid)
		}
	}
}

// txnCoordinatorOf asks FindCoordinator for a transactional id's node, -1
// while there is none.
func txnCoordinatorOf(t *testing.T, ctx context.Context, cl *kgo.Client, id string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 1, id, []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	node, code := resp.NodeID, resp.ErrorCode
	if len(resp.Coordinators) > 0 {
		node, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
	}
	if code != 0 {
		time.Sleep(50 * time.Millisecond)
		return -1
	}
	return node
}
