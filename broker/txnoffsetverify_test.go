package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/record"
)

// initTxnProducer starts transactional id id's producer (InitProducerId).
func initTxnProducer(t *testing.T, cl *kgo.Client, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60_000
	resp := txnRequest(t, cl, req, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	wantCode(t, "InitProducerId "+id, resp.ErrorCode, nil)
	return resp.ProducerID, resp.ProducerEpoch
}

// addOffsetsToTxn adds group to the transaction and returns the error code.
func addOffsetsToTxn(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, group string) int16 {
	t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	return txnRequest(t, cl, req, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode }).ErrorCode
}

// endTxn ends the transaction and returns the error code. It retries
// CONCURRENT_TRANSACTIONS, as clients do: a retry of an EndTxn whose
// coordinator accepted it after the caller timed out gets that until the
// markers are written.
func endTxn(t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	var code int16
	eventually(t, 30*time.Second, "EndTxn past its markers", func() bool {
		code = txnRequest(t, cl, req, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode }).ErrorCode
		return code != kerr.ConcurrentTransactions.Code
	})
	return code
}

// txnOffsetCommit sends a TxnOffsetCommit v3 of offset for topic's
// partitions 0..parts-1, with no generation (as a producer outside the
// group sends it), and returns partition 0's error code.
func txnOffsetCommit(t *testing.T, cl *kgo.Client, id, group, topic string, parts int32, pid int64, epoch int16, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, group, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := range parts {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	var code int16
	eventually(t, 20*time.Second, "TxnOffsetCommit answered", func() bool {
		resp := txnRequest(t, cl, req, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
		code = resp.Topics[0].Partitions[0].ErrorCode
		return code != kerr.ConcurrentTransactions.Code // the previous transaction's markers: a client retries
	})
	return code
}

// stableOffset is group's offset of topic's partition 0 as a
// read_committed consumer fetches it (OffsetFetch with require_stable),
// with the partition's error code.
func stableOffset(t *testing.T, cl *kgo.Client, group, topic string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, true
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, ft)
	resp := txnRequest(t, cl, req, func(r *kmsg.OffsetFetchResponse) int16 { return r.ErrorCode })
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// waitStableOffset waits until require_stable fetches answer want for
// group's topic/0 without UNSTABLE_OFFSET_COMMIT.
func waitStableOffset(t *testing.T, cl *kgo.Client, group, topic string, want int64, within time.Duration) {
	t.Helper()
	var off int64
	var code int16
	deadline := time.Now().Add(within)
	for {
		if off, code = stableOffset(t, cl, group, topic); code == 0 && off == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("require_stable OffsetFetch of %s: offset %d (%v) after %v, want %d and no error",
				group, off, kerr.ErrorForCode(code), within, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestForgedTxnOffsetCommitIsRefused: a TxnOffsetCommit of a producer id
// that no transaction coordinator knows, for a known transactional id or
// an unknown one, is INVALID_PRODUCER_ID_MAPPING (Kafka's answer through
// its verification with the coordinator) and leaves nothing pending: a
// read_committed consumer's require_stable OffsetFetch is answered.
func TestForgedTxnOffsetCommitIsRefused(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, v1Versions()) // the transactions v1 requests the test was written for
	createTopic(t, cl, "forged", 1, 3)
	pid, _ := initTxnProducer(t, cl, "forged-tx")

	code := txnOffsetCommit(t, cl, "forged-tx", "forged-group", "forged", 1, pid+1000, 0, 7)
	wantCode(t, "TxnOffsetCommit with another producer id of a known transactional id", code, kerr.InvalidProducerIDMapping)
	code = txnOffsetCommit(t, cl, "nobody-tx", "forged-group", "forged", 1, pid+1000, 0, 7)
	wantCode(t, "TxnOffsetCommit of an unknown transactional id", code, kerr.InvalidProducerIDMapping)
	off, code := stableOffset(t, cl, "forged-group", "forged")
	wantCode(t, "require_stable OffsetFetch after the forged commits", code, nil)
	if off != -1 {
		t.Fatalf("the group's offset after the forged commits: %d, want -1", off)
	}
}

// TestTxnOffsetCommitNeedsAddOffsetsToTxn: a TxnOffsetCommit whose
// transaction did not add the group (AddOffsetsToTxn) is INVALID_TXN_STATE,
// as is one after the transaction ended; one of another epoch is
// INVALID_PRODUCER_EPOCH. None leaves anything pending, and the commit of
// the transaction that added the group takes effect with its marker.
func TestTxnOffsetCommitNeedsAddOffsetsToTxn(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, v1Versions()) // the transactions v1 requests the test was written for
	createTopic(t, cl, "needs-add", 1, 3)
	const id, group = "needs-add-tx", "needs-add-group"
	pid, epoch := initTxnProducer(t, cl, id)

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "needs-add", []int32{0}
	add.Topics = append(add.Topics, at)
	ar := txnRequest(t, cl, add, func(r *kmsg.AddPartitionsToTxnResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	wantCode(t, "AddPartitionsToTxn", ar.Topics[0].Partitions[0].ErrorCode, nil)

	wantCode(t, "TxnOffsetCommit in a transaction without the group",
		txnOffsetCommit(t, cl, id, group, "needs-add", 1, pid, epoch, 5), kerr.InvalidTxnState)
	if off, code := stableOffset(t, cl, group, "needs-add"); code != 0 || off != -1 {
		t.Fatalf("require_stable OffsetFetch after the refused commit: %d (%v), want -1", off, kerr.ErrorForCode(code))
	}
	wantCode(t, "AddOffsetsToTxn", addOffsetsToTxn(t, cl, id, pid, epoch, group), nil)
	wantCode(t, "TxnOffsetCommit of another epoch",
		txnOffsetCommit(t, cl, id, group, "needs-add", 1, pid, epoch+1, 5), kerr.InvalidProducerEpoch)
	wantCode(t, "TxnOffsetCommit after AddOffsetsToTxn", txnOffsetCommit(t, cl, id, group, "needs-add", 1, pid, epoch, 5), nil)
	wantCode(t, "EndTxn", endTxn(t, cl, id, pid, epoch, true), nil)
	waitStableOffset(t, cl, group, "needs-add", 5, 20*time.Second)

	wantCode(t, "TxnOffsetCommit after the transaction ended",
		txnOffsetCommit(t, cl, id, group, "needs-add", 1, pid, epoch, 9), kerr.InvalidTxnState)
	if off, code := stableOffset(t, cl, group, "needs-add"); code != 0 || off != 5 {
		t.Fatalf("require_stable OffsetFetch after the late commit: %d (%v), want 5", off, kerr.ErrorForCode(code))
	}
}

// TestGroupTransactSessionAfterForgedCommit: a forged TxnOffsetCommit for
// a group does not stop franz-go's consume-transform-produce session of
// that group (read_committed, require_stable offset fetches, offsets
// through AddOffsetsToTxn and TxnOffsetCommit, verified) from copying its
// input exactly once.
func TestGroupTransactSessionAfterForgedCommit(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	createTopic(t, cl, "eos-in", 3, 3)
	createTopic(t, cl, "eos-out", 3, 3)
	pid, _ := initTxnProducer(t, cl, "eos-forger")
	txnOffsetCommit(t, cl, "eos-forger", "eos-group", "eos-in", 3, pid+1000, 0, 50)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := values(50, "in")
	if err := cl.ProduceSync(ctx, withTopic(in, "eos-in")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if n := copyOnce(t, c, len(in), 0); n != len(in) {
		t.Fatalf("the session copied %d records, want %d", n, len(in))
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

// offsetsLeader is the node leading group's __consumer_offsets partition.
func offsetsLeader(t *testing.T, c *testcluster.Cluster, group string) (int32, int32) {
	t.Helper()
	var p int32
	eventually(t, 20*time.Second, "__consumer_offsets in the metadata", func() bool {
		var ok bool
		p, ok = c.Running()[0].OffsetsPartition(group)
		return ok
	})
	leader, _ := c.Leader(metadata.ConsumerOffsetsTopic, p, 20*time.Second)
	if leader < 0 {
		t.Fatalf("%s-%d has no leader", metadata.ConsumerOffsetsTopic, p)
	}
	return leader, p
}

// waitNoPending waits until every running node's replica of group's
// partition holds no pending transactional commit of topic/0.
func waitNoPending(t *testing.T, c *testcluster.Cluster, group, topic string, within time.Duration) {
	t.Helper()
	eventually(t, within, "no replica holding the pending commit", func() bool {
		for _, n := range c.Running() {
			if pending, ok := n.HasPendingTxnOffset(group, topic, 0); !ok || pending {
				return false
			}
		}
		return true
	})
}

// abortedInLog fails unless node's copy of __consumer_offsets-p holds a
// transactional batch of producer pid followed by an ABORT marker of it,
// within 30 s (a restarted replica may still be catching up).
func abortedInLog(t *testing.T, n *broker.Node, p int32, pid int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		written, aborted := logAborted(t, n, p, pid)
		if written && aborted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d's %s-%d: producer %d's last transactional commit written %v, then aborted %v; want both",
				n.ID(), metadata.ConsumerOffsetsTopic, p, pid, written, aborted)
		}
	}
}

// logAborted reads node's copy of __consumer_offsets-p: whether producer
// pid's last transactional batch is there, and an ABORT marker after it.
func logAborted(t *testing.T, n *broker.Node, p int32, pid int64) (written, aborted bool) {
	t.Helper()
	log, _, ok := n.ReplicaLog(metadata.ConsumerOffsetsTopic, p)
	if !ok {
		t.Fatalf("node %d holds no copy of %s-%d", n.ID(), metadata.ConsumerOffsetsTopic, p)
	}
	for len(log) > 0 {
		batch, rest, h, err := record.Next(log)
		if err != nil {
			t.Fatal(err)
		}
		log = rest
		switch {
		case h.ProducerID != pid:
		case !h.IsControl():
			written, aborted = h.IsTransactional(), false
		case written:
			m, err := record.ParseEndTxnMarker(batch)
			if err != nil {
				t.Fatal(err)
			}
			aborted = m.Type == record.ControlAbort
		}
	}
	return written, aborted
}

// TestUnverifiedPendingTxnOffsetIsAborted: a transactional offset commit
// written as TxnOffsetCommit wrote them before verification (a producer id
// no coordinator knows, no transactional id) wedged its group: every
// require_stable OffsetFetch answered UNSTABLE_OFFSET_COMMIT, on any
// leader. Once it is older than transaction.max.timeout.ms the group's
// leader, here the one after a failover, aborts it through Raft: the
// group's committed offset is unchanged, and every replica, the old
// leader after its restart too, holds nothing pending.
func TestUnverifiedPendingTxnOffsetIsAborted(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.TxnPendingOffsetsCheckInterval = 500 * time.Millisecond
		cfg.TxnMaxTimeout = 3 * time.Second
	})
	cl := c.Client(t, v1Versions()) // the transactions v1 requests the test was written for
	createTopic(t, cl, "wedged", 1, 3)
	const group = "wedged-group"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	offs := kadm.Offsets{}
	offs.AddOffset("wedged", 0, 3, -1)
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	leader, p := offsetsLeader(t, c, group)
	if err := c.Node(int(leader)).ProposeUnverifiedTxnOffset(ctx, group, "wedged", 0, 9, 1<<40, 0); err != nil {
		t.Fatal(err)
	}
	if pending, _ := c.Node(int(leader)).HasPendingTxnOffset(group, "wedged", 0); !pending {
		t.Fatal("the unverified commit is not pending on the leader")
	}
	c.HaltNode(int(leader))
	waitStableOffset(t, cl, group, "wedged", 3, time.Minute)
	waitNoPending(t, c, group, "wedged", 30*time.Second)
	c.StartNode(int(leader))
	c.WaitReady()
	waitNoPending(t, c, group, "wedged", time.Minute)
	waitStableOffset(t, cl, group, "wedged", 3, 30*time.Second)
	abortedInLog(t, c.Node(int(leader)), p, 1<<40)
}

// TestPendingTxnOffsetOfEndedTransactionIsAborted: with
// transaction_partition_verification off, a TxnOffsetCommit after its
// transaction committed is taken and stays pending (no marker will come).
// The group's leader asks the transaction's coordinator, which no longer
// has that transaction, and aborts the commit through Raft: the group's
// offset stays the committed transaction's, on every replica and after
// the leader restarts, and the producer's next transaction commits its
// offsets as before (the abort fenced nothing).
func TestPendingTxnOffsetOfEndedTransactionIsAborted(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.TxnPendingOffsetsCheckInterval = 500 * time.Millisecond
		cfg.TxnPartitionVerification = false
	})
	cl := c.Client(t, v1Versions()) // the transactions v1 requests the test was written for
	createTopic(t, cl, "late", 1, 3)
	const id, group = "late-tx", "late-group"
	pid, epoch := initTxnProducer(t, cl, id)
	wantCode(t, "AddOffsetsToTxn", addOffsetsToTxn(t, cl, id, pid, epoch, group), nil)
	wantCode(t, "TxnOffsetCommit", txnOffsetCommit(t, cl, id, group, "late", 1, pid, epoch, 4), nil)
	wantCode(t, "EndTxn", endTxn(t, cl, id, pid, epoch, true), nil)
	waitStableOffset(t, cl, group, "late", 4, 20*time.Second)

	wantCode(t, "an unverified TxnOffsetCommit after the transaction ended",
		txnOffsetCommit(t, cl, id, group, "late", 1, pid, epoch, 8), nil)
	waitStableOffset(t, cl, group, "late", 4, time.Minute)
	waitNoPending(t, c, group, "late", 30*time.Second)

	leader, p := offsetsLeader(t, c, group)
	c.HaltNode(int(leader))
	c.StartNode(int(leader))
	c.WaitReady()
	waitNoPending(t, c, group, "late", time.Minute)
	waitStableOffset(t, cl, group, "late", 4, 30*time.Second)
	abortedInLog(t, c.Node(int(leader)), p, pid)

	// The next transaction's commit stays pending over several checks,
	// its coordinator answering that it is ongoing, until its marker.
	wantCode(t, "the next AddOffsetsToTxn", addOffsetsToTxn(t, cl, id, pid, epoch, group), nil)
	wantCode(t, "the next TxnOffsetCommit", txnOffsetCommit(t, cl, id, group, "late", 1, pid, epoch, 12), nil)
	for until := time.Now().Add(5 * time.Second); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
		if _, code := stableOffset(t, cl, group, "late"); code != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("the ongoing transaction's commit: %v, want it pending (UNSTABLE_OFFSET_COMMIT)", kerr.ErrorForCode(code))
		}
	}
	wantCode(t, "the next EndTxn", endTxn(t, cl, id, pid, epoch, true), nil)
	waitStableOffset(t, cl, group, "late", 12, 30*time.Second)
}
