package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestCoordinatorTakeoverFinishesPartialCommit: the node coordinating a
// transactional id, which also coordinates its group and leads one of the
// output partitions, is halted right after EndTxn accepted a commit, at
// moments from 0 to 16 ms after it, so that its markers are written in
// part, in full or not at all. The next transaction of the same producer
// must commit promptly: the new coordinator finishes the prepared commit
// in about a second (a Raft election, then one round of markers). A
// coordinator whose write of the Complete state failed once left the
// transaction in PrepareCommit until the coordinator moved: every request
// of the producer was CONCURRENT_TRANSACTIONS for as long. The bound of 30
// s leaves room for a loaded machine's elections and still fails that.
func TestCoordinatorTakeoverFinishesPartialCommit(t *testing.T) {
	c := testcluster.Start(t, 3, patientTiming)
	admin := c.Client(t)
	createTopic(t, admin, "takeover", 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const id = "takeover-tx"
	// Retries enough to outlast elections on a loaded machine (the
	// default 20 can run out while a partition has no leader).
	p := c.Client(t, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic("takeover"), kgo.RequestRetries(200))
	transaction(t, p, true, "warm-up")
	delays := []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 16 * time.Millisecond}
	for round, delay := range delays {
		coordinator := int32(-1)
		for coordinator < 0 {
			coordinator = txnCoordinatorOf(t, ctx, admin, id)
		}
		group := groupCoordinatedBy(t, ctx, admin, coordinator, round)
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for part := range int32(3) {
			if err := p.ProduceSync(ctx, &kgo.Record{Partition: part, Value: fmt.Appendf(nil, "r%d-p%d", round, part)}).FirstErr(); err != nil {
				t.Fatalf("round %d: produce: %v", round, err)
			}
		}
		commitTxnOffsets(t, ctx, p, admin, id, group, "takeover")
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("round %d: commit: %v", round, err)
		}
		time.Sleep(delay)
		c.HaltNode(int(coordinator))
		start := time.Now()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "after-%d", round)}).FirstErr(); err != nil {
			t.Fatalf("round %d: produce after halting node %d: %v", round, coordinator, err)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("round %d: commit after halting node %d: %v", round, coordinator, err)
		}
		took := time.Since(start)
		t.Logf("round %d: node %d halted %v after EndTxn; the next transaction committed after %v", round, coordinator, delay, took)
		if took > 30*time.Second {
			t.Errorf("round %d: the next transaction took %v after the coordinator was halted", round, took)
		}
		c.StartNode(int(coordinator))
		c.WaitReady()
	}
	reader := c.Client(t, kgo.ConsumeTopics("takeover"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	want := 1 + len(delays)*(3+1) // the warm-up, then per round three records and one after the halt
	if got := pollValues(t, reader, want, time.Second); len(got) != want {
		t.Fatalf("read_committed read %d records, want %d", len(got), want)
	}
}

// patientTiming gives Raft 1 s timeouts: with the default test timing's
// 150 ms lease, leaders on a loaded machine step down again and again
// after a node is halted, and the rounds measure that instead. A halted
// node's groups still get leaders at once (multiraft's successors).
// Leaders are not moved back to their preferred replicas, so that the
// coordinator a round finds is still the one it halts.
func patientTiming(cfg *broker.Config) {
	tm := testcluster.Timing()
	tm.HeartbeatTimeout, tm.ElectionTimeout, tm.LeaderLeaseTimeout = time.Second, time.Second, time.Second
	cfg.PartitionRaft, cfg.MetaRaft = tm, tm
	cfg.LeaderRebalanceInterval = time.Hour
}

// groupCoordinatedBy returns a group name, new for each round, that node
// coordinates.
func groupCoordinatedBy(t *testing.T, ctx context.Context, cl *kgo.Client, node int32, round int) string {
	t.Helper()
	for i := 0; ; i++ {
		g := fmt.Sprintf("takeover-g%d-%d", round, i)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = g, []string{g}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Coordinators) > 0 && resp.Coordinators[0].ErrorCode == 0 && resp.Coordinators[0].NodeID == node {
			return g
		}
		if ctx.Err() != nil {
			t.Fatalf("no group coordinated by node %d", node)
		}
	}
}

// commitTxnOffsets adds group's offset 1 of topic's partition 0 to p's
// open transaction, as a
// consume-transform-produce application does (AddOffsetsToTxn, then
// TxnOffsetCommit with no generation, which Kafka takes for a group
// without members).
func commitTxnOffsets(t *testing.T, ctx context.Context, p, cl *kgo.Client, id, group, topic string) {
	t.Helper()
	pid, epoch, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, group
	ar := txnRequest(t, cl, add, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })
	wantCode(t, "AddOffsetsToTxn", ar.ErrorCode, nil)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.Version = 3
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = id, group, pid, epoch
	commit.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 1
	rt.Partitions = append(rt.Partitions, rp)
	commit.Topics = append(commit.Topics, rt)
	cr := txnRequest(t, cl, commit, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	wantCode(t, "TxnOffsetCommit", cr.Topics[0].Partitions[0].ErrorCode, nil)
}

// TestAddOffsetsToTxnCreatesOffsetsTopic: on a cluster where no group was
// ever used, AddOffsetsToTxn creates __consumer_offsets (as Kafka's
// coordinator finds the group's partition without it) instead of
// answering COORDINATOR_NOT_AVAILABLE until something else creates it,
// which a producer that sends offsets first would never see happen. The
// committed transaction's offset is then the group's.
func TestAddOffsetsToTxnCreatesOffsetsTopic(t *testing.T) {
	c := testcluster.Start(t, 3)
	admin := c.Client(t)
	createTopic(t, admin, "fresh", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := c.Client(t, kgo.TransactionalID("fresh-tx"), kgo.DefaultProduceTopic("fresh"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commitTxnOffsets(t, ctx, p, admin, "fresh-tx", "fresh-group", "fresh")
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the transaction's offset committed", func() bool {
		offs, err := kadm.NewClient(admin).FetchOffsets(ctx, "fresh-group")
		if err != nil {
			return false
		}
		o, ok := offs.Lookup("fresh", 0)
		return ok && o.Err == nil && o.At == 1
	})
}

// TestVerificationSurvivesCoordinatorRestart: a partition leader keeps a
// pooled connection to the node coordinating a transactional id; after
// that node restarts, the leader's next verification must get the
// coordinator's answer, not the dead connection's EOF, which a producer
// gets as NETWORK_EXCEPTION and franz-go waits out a metadata refresh
// for (5 s). The same goes for markers.
func TestVerificationSurvivesCoordinatorRestart(t *testing.T) {
	c := testcluster.Start(t, 3)
	admin := c.Client(t)
	createTopic(t, admin, "verify", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, _ := c.Leader("verify", 0, 10*time.Second)
	id, coordinator := txnIDCoordinatedElsewhere(t, ctx, admin, "verify", leader)
	p := c.Client(t, kgo.TransactionalID(id), kgo.DefaultProduceTopic("verify"))
	transaction(t, p, true, "verified") // the leader verifies it with the coordinator's node
	pid, epoch, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.HaltNode(int(coordinator))
	c.StartNode(int(coordinator))
	c.WaitReady()
	eventually(t, time.Minute, "the restarted node coordinating the id again, loaded", func() bool {
		if txnCoordinatorOf(t, ctx, admin, id) != coordinator {
			return false
		}
		d, err := kadm.NewClient(admin).DescribeTransactions(ctx, id)
		return err == nil && d[id].Err == nil
	})
	// No transaction is open: the coordinator's answer is INVALID_TXN_STATE.
	if err := c.Node(int(leader)).VerifyTxn(ctx, id, pid, epoch, "verify", 0); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("verification after node %d restarted: %v, want the coordinator's INVALID_TXN_STATE", coordinator, err)
	}
}
