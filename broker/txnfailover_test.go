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

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

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
	t.Parallel()
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
	t.Parallel()
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
