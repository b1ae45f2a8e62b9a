package broker_test

import (
	"context"
	"errors"
	"maps"
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
)

// shareRec is one acquired record: partition, offset, delivery count.
type shareRec struct {
	p     int32
	off   int64
	count int16
}

// shareMember speaks ShareFetch and ShareAcknowledge for one member of a
// share group, with one share session per node.
type shareMember struct {
	t       *testing.T
	cl      *kgo.Client
	group   string
	id      string
	topicID [16]byte
	epochs  map[int32]int32 // per node: the next request's session epoch
}

func newShareMember(t *testing.T, cl *kgo.Client, id string, topicID [16]byte) *shareMember {
	return &shareMember{t: t, cl: cl, group: "sg", id: id, topicID: topicID, epochs: map[int32]int32{}}
}

// fetch sends one ShareFetch to node for parts and returns the records
// it acquired; retriable partition errors are left to the next call.
func (m *shareMember) fetch(ctx context.Context, node int32, parts []int32, maxRecords int32, wait time.Duration) []shareRec {
	m.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = &m.group, &m.id
	req.ShareSessionEpoch = m.epochs[node]
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = int32(wait.Milliseconds()), 1<<20, maxRecords, maxRecords
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.topicID
	for _, p := range parts {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(node)))
	if err != nil {
		m.t.Fatalf("ShareFetch to %d: %v", node, err)
	}
	if resp.ErrorCode != 0 {
		m.t.Fatalf("ShareFetch to %d: %v", node, kerr.ErrorForCode(resp.ErrorCode))
	}
	m.epochs[node] = req.ShareSessionEpoch + 1
	var out []shareRec
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil && !kerr.IsRetriable(err) {
				m.t.Fatalf("ShareFetch p%d: %v", p.Partition, err)
			}
			for _, r := range p.AcquiredRecords {
				for off := r.FirstOffset; off <= r.LastOffset; off++ {
					out = append(out, shareRec{p.Partition, off, r.DeliveryCount})
				}
			}
		}
	}
	return out
}

// ack acknowledges recs with typ through node's session and returns each
// partition's error code.
func (m *shareMember) ack(ctx context.Context, node int32, typ int8, recs ...shareRec) map[int32]int16 {
	m.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID = &m.group, &m.id
	req.ShareSessionEpoch = m.epochs[node]
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = m.topicID
	for _, r := range recs {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = r.p
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = r.off, r.off, []int8{typ}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(node)))
	if err != nil {
		m.t.Fatalf("ShareAcknowledge to %d: %v", node, err)
	}
	if resp.ErrorCode != 0 {
		m.t.Fatalf("ShareAcknowledge to %d: %v", node, kerr.ErrorForCode(resp.ErrorCode))
	}
	m.epochs[node]++
	codes := map[int32]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes[p.Partition] = max(codes[p.Partition], p.ErrorCode)
		}
	}
	return codes
}

// shareCluster is a 3-node cluster with topic "sq" of 3 partitions of 10
// records each, and the leader of each partition.
func shareCluster(t *testing.T) (*testcluster.Cluster, *kgo.Client, [16]byte, map[int32]int32) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.ShareGroups.ResetEarliest = true })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("sq"))
	createTopic(t, cl, "sq", 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 3), Value: []byte{byte(i)}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, "sq")
	if err != nil || td["sq"].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td["sq"].Err)
	}
	leaders := map[int32]int32{}
	for p := range int32(3) {
		leaders[p], _ = c.Leader("sq", p, 10*time.Second)
	}
	return c, cl, td["sq"].ID, leaders
}

// byNode groups partitions by their leader.
func byNode(leaders map[int32]int32) map[int32][]int32 {
	out := map[int32][]int32{}
	for _, p := range slices.Sorted(maps.Keys(leaders)) {
		out[leaders[p]] = append(out[leaders[p]], p)
	}
	return out
}

// fetchAll has m fetch from every leader once.
func (m *shareMember) fetchAll(ctx context.Context, leaders map[int32]int32, maxRecords int32, wait time.Duration) []shareRec {
	var out []shareRec
	for node, parts := range byNode(leaders) {
		out = append(out, m.fetch(ctx, node, parts, maxRecords, wait)...)
	}
	return out
}

// sessionCode sends a ShareFetch of member with epoch to node and returns
// its top-level error code.
func sessionCode(ctx context.Context, t *testing.T, cl *kgo.Client, node int32, member string, epoch int32) int16 {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	group := "sg"
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// TestShareGroupDeliveryAndFailover: two members of a share group never
// hold the same record at once; a released record comes back with
// delivery count 2, a rejected one never; after the leader of a data
// partition halts, its new leader keeps every acknowledgement and
// redelivers exactly the records that were in flight.
func TestShareGroupDeliveryAndFailover(t *testing.T) {
	t.Parallel()
	c, cl, topicID, leaders := shareCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := newShareMember(t, cl, "a", topicID), newShareMember(t, cl, "b", topicID)
	held := map[shareRec]string{} // count 1: who acquired it
	mine := map[string][]shareRec{}
	take := func(m *shareMember, recs []shareRec) {
		for _, r := range recs {
			if h, ok := held[r]; ok || r.count != 1 {
				t.Fatalf("%s acquired p%d offset %d (delivery %d), held by %q", m.id, r.p, r.off, r.count, h)
			}
			held[r] = m.id
			mine[m.id] = append(mine[m.id], r)
		}
	}
	eventually(t, time.Minute, "every record acquired once", func() bool {
		take(a, a.fetchAll(ctx, leaders, 4, 100*time.Millisecond))
		take(b, b.fetchAll(ctx, leaders, 4, 100*time.Millisecond))
		return len(held) == 30
	})
	if got := a.fetchAll(ctx, leaders, 10, 200*time.Millisecond); len(got) > 0 {
		t.Fatalf("acquired %v while every record is held", got)
	}

	failP, relP := pickSharePartitions(t, mine)
	var inflight, aRel []shareRec
	for _, r := range mine["a"] {
		if r.p == relP && len(aRel) < 2 {
			aRel = append(aRel, r)
			continue
		}
		wantAckCode(t, a.ack(ctx, leaders[r.p], 1, r), 0)
	}
	wantAckCode(t, a.ack(ctx, leaders[relP], 2, aRel[0]), 0) // release
	wantAckCode(t, a.ack(ctx, leaders[relP], 3, aRel[1]), 0) // reject
	wantAckCode(t, a.ack(ctx, leaders[relP], 1, aRel[0]), kerr.InvalidRecordState.Code)
	for _, r := range mine["b"] {
		if r.p == failP {
			inflight = append(inflight, shareRec{r.p, r.off, 2})
			continue
		}
		wantAckCode(t, b.ack(ctx, leaders[r.p], 1, r), 0)
	}

	// The released record comes back, counted twice; nothing else does.
	cm := newShareMember(t, cl, "c", topicID)
	var again []shareRec
	eventually(t, time.Minute, "the released record redelivered", func() bool {
		again = append(again, cm.fetchAll(ctx, leaders, 10, 200*time.Millisecond)...)
		return len(again) > 0
	})
	if want := (shareRec{aRel[0].p, aRel[0].off, 2}); len(again) != 1 || again[0] != want {
		t.Fatalf("redelivered %v, want %v", again, want)
	}
	wantAckCode(t, cm.ack(ctx, leaders[relP], 1, again[0]), 0)
	if got := cm.fetchAll(ctx, leaders, 10, 300*time.Millisecond); len(got) > 0 {
		t.Fatalf("acquired %v: only b's records are left, held", got)
	}
	node := leaders[relP]
	wantCode(t, "a stale session epoch", sessionCode(ctx, t, cl, node, "c", 1), kerr.InvalidShareSessionEpoch)
	wantCode(t, "an unknown session", sessionCode(ctx, t, cl, node, "nobody", 3), kerr.ShareSessionNotFound)

	// The data partition's leader halts with b's records in flight.
	c.HaltNode(int(leaders[failP]))
	for p := range int32(3) {
		if leaders[p], _ = c.Leader("sq", p, 30*time.Second); leaders[p] < 0 {
			t.Fatalf("no leader of p%d", p)
		}
	}
	d := newShareMember(t, cl, "d", topicID)
	var got []shareRec
	eventually(t, time.Minute, "the in-flight records redelivered", func() bool {
		got = append(got, d.fetchAll(ctx, leaders, 50, 200*time.Millisecond)...)
		return len(got) >= len(inflight)
	})
	got = append(got, d.fetchAll(ctx, leaders, 50, 300*time.Millisecond)...)
	slices.SortFunc(got, func(x, y shareRec) int { return int(x.off - y.off) })
	if !slices.Equal(got, inflight) {
		t.Fatalf("after the failover redelivered %v, want exactly the in-flight %v", got, inflight)
	}

	// An admin reads the persisted start offsets: past everything but
	// the records d now holds.
	adm := kadm.NewClient(c.Client(t))
	var desc kadm.DescribedShareGroupsOffsets
	eventually(t, 30*time.Second, "DescribeShareGroupOffsets answered", func() bool {
		var err error
		desc, err = adm.DescribeShareGroupOffsets(ctx, "sg")
		if err != nil || desc["sg"].Err != nil {
			return false
		}
		// A partition's error (its lag needs its new leader's high
		// watermark, which the answering node may not know yet) is retried.
		for p := range int32(3) {
			if o, ok := desc["sg"].Offsets.Lookup("sq", p); ok && o.Err != nil {
				return false
			}
		}
		return true
	})
	for p := range int32(3) {
		want := int64(10)
		if p == failP {
			want = inflight[0].off
		}
		if o, ok := desc["sg"].Offsets.Lookup("sq", p); !ok || o.Err != nil || o.StartOffset != want {
			t.Fatalf("p%d: start offset %+v (found %v), want %d", p, o, ok, want)
		}
	}
}

// pickSharePartitions picks the partition whose leader will fail (one
// where b holds records) and the one where a releases and rejects (one
// where a holds two records, another partition if it can).
func pickSharePartitions(t *testing.T, mine map[string][]shareRec) (failP, relP int32) {
	t.Helper()
	count := func(id string, p int32) int {
		return len(slices.DeleteFunc(slices.Clone(mine[id]), func(r shareRec) bool { return r.p != p }))
	}
	failP, relP = -1, -1
	for p := range int32(3) {
		if failP < 0 && count("b", p) > 0 {
			failP = p
		}
	}
	for p := range int32(3) {
		if count("a", p) >= 2 && (relP < 0 || relP == failP) {
			relP = p
		}
	}
	if failP < 0 || relP < 0 {
		t.Fatalf("no partitions to pick from %v", mine)
	}
	return failP, relP
}

func wantAckCode(t *testing.T, codes map[int32]int16, want int16) {
	t.Helper()
	for p, code := range codes {
		if code != want {
			t.Fatalf("ShareAcknowledge p%d: %v, want %v", p, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
}

// TestShareLockExpiryAndSessionClose: a record whose lock expires on the
// leader's clock goes to another member, counted again, and its old
// holder can no longer acknowledge it; closing a session (epoch -1)
// releases its member's records at once.
func TestShareLockExpiryAndSessionClose(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.ShareGroups.ResetEarliest, cfg.ShareGroups.LockDuration = true, time.Second
	})
	cl := c.Client(t, kgo.DefaultProduceTopic("lx"))
	createTopic(t, cl, "lx", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, "lx")
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int32{0: 1}
	a, b := newShareMember(t, cl, "a", td["lx"].ID), newShareMember(t, cl, "b", td["lx"].ID)
	var got []shareRec
	eventually(t, 30*time.Second, "a acquires the record", func() bool {
		got = append(got, a.fetchAll(ctx, leaders, 10, 100*time.Millisecond)...)
		return len(got) > 0
	})
	var again []shareRec
	eventually(t, 30*time.Second, "b acquires it once a's lock expired", func() bool {
		again = append(again, b.fetchAll(ctx, leaders, 10, 200*time.Millisecond)...)
		return len(again) > 0
	})
	if want := (shareRec{0, 0, 2}); len(again) != 1 || again[0] != want {
		t.Fatalf("b acquired %v, want %v", again, want)
	}
	wantAckCode(t, a.ack(ctx, 1, 1, got[0]), kerr.InvalidRecordState.Code)
	// b closes its session: the record is available again at once.
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &b.group, &b.id, -1
	if resp, err := req.RequestWith(ctx, cl.Broker(1)); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("closing b's session: %v %v", err, resp)
	}
	if third := a.fetchAll(ctx, leaders, 10, 0); len(third) != 1 || third[0] != (shareRec{0, 0, 3}) {
		t.Fatalf("after b's session closed a acquired %v, want the record with count 3", third)
	}
}

// TestShareStateFencesOlderLeaders: the share coordinator's state of a
// share partition, read by a data partition leader of epoch 10, refuses
// writes of older leader epochs from then on (a deposed leader cannot
// overwrite what its successor loaded), and serves what was written.
func TestShareStateFencesOlderLeaders(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1)
	cl := c.Client(t)
	createTopic(t, cl, "fx", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	m := newShareMember(t, cl, "m", td["fx"].ID)
	m.fetch(ctx, 1, []int32{0}, 1, 0) // creates __share_group_state
	read := func(epoch int32) *kmsg.ReadShareGroupStateResponseTopicPartition {
		return readShareState(ctx, t, cl, "other", td["fx"].ID, epoch)
	}
	write := func(epoch int32, start int64) int16 {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "other"
		rt := kmsg.NewWriteShareGroupStateRequestTopic()
		rt.TopicID = td["fx"].ID
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.LeaderEpoch, rp.StartOffset = epoch, start
		b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = start, start, 0, 1
		rp.StateBatches = append(rp.StateBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if got := read(10); got.StartOffset != -1 {
		t.Fatalf("a share partition never written starts at %d", got.StartOffset)
	}
	wantCode(t, "a write of an older leader", write(9, 7), kerr.FencedLeaderEpoch)
	wantCode(t, "a write of the new leader", write(10, 7), nil)
	got := read(-1)
	if got.StartOffset != 7 || len(got.StateBatches) != 1 || got.StateBatches[0].DeliveryCount != 1 {
		t.Fatalf("read back %+v", got)
	}
	wantCode(t, "a bad snapshot", write(11, -5), kerr.InvalidRequest)
}

// readShareState reads group's share partition 0 of topic id from node
// 1's share coordinator (ReadShareGroupState), retrying while it loads.
func readShareState(ctx context.Context, t *testing.T, cl *kgo.Client, group string, id [16]byte, epoch int32) *kmsg.ReadShareGroupStateResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.LeaderEpoch = epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var got *kmsg.ReadShareGroupStateResponseTopicPartition
	eventually(t, 30*time.Second, "ReadShareGroupState answered", func() bool {
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		got = &resp.Topics[0].Partitions[0]
		return got.ErrorCode == 0
	})
	return got
}

// TestShareStateOfDeletedTopicsEnds: once a topic is deleted, the sweep
// of the share coordinator forgets its share partitions' state (at its
// second pass, which still finds the topic missing).
func TestShareStateOfDeletedTopicsEnds(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.ShareGroups.ResetEarliest = true })
	cl := c.Client(t)
	createTopic(t, cl, "gone", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	id := td["gone"].ID
	m := newShareMember(t, cl, "m", id)
	eventually(t, 30*time.Second, "the share partition's state written", func() bool {
		m.fetch(ctx, 1, []int32{0}, 1, 0)
		return readShareState(ctx, t, cl, "sg", id, -1).StartOffset == 0
	})
	if r, err := adm.DeleteTopics(ctx, "gone"); err != nil || r["gone"].Err != nil {
		t.Fatalf("DeleteTopics: %v %v", err, r["gone"].Err)
	}
	nd := c.Node(1)
	eventually(t, 30*time.Second, "the topic gone from the node's metadata", func() bool {
		_, _, ok := nd.PartitionLeader("gone", 0)
		return !ok
	})
	nd.ForgetDeletedShareState(ctx)
	if got := readShareState(ctx, t, cl, "sg", id, -1); got.StartOffset != 0 {
		t.Fatalf("forgotten at the first pass: %+v", got)
	}
	nd.ForgetDeletedShareState(ctx)
	if got := readShareState(ctx, t, cl, "sg", id, -1); got.StartOffset != -1 {
		t.Fatalf("the deleted topic's share state is still there: %+v", got)
	}
}

// TestShareGroupOffsetsResets: AlterShareGroupOffsets restarts a share
// partition at an offset with a fresh state (every record delivered anew,
// the old holder's acknowledgements refused), DeleteShareGroupOffsets
// forgets it (the next fetch starts where share.auto.offset.reset says);
// both are refused while the group has a member.
func TestShareGroupOffsetsResets(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.ShareGroups.ResetEarliest = true })
	cl := c.Client(t, kgo.DefaultProduceTopic("rz"))
	createTopic(t, cl, "rz", 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := range 5 {
		recs = append(recs, &kgo.Record{Value: []byte{byte(i)}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, "rz")
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int32{0: 1}
	fetchN := func(m *shareMember, n int) []shareRec {
		var got []shareRec
		eventually(t, 30*time.Second, "records acquired", func() bool {
			got = append(got, m.fetchAll(ctx, leaders, 10, 100*time.Millisecond)...)
			return len(got) >= n
		})
		return got
	}
	m := newShareMember(t, cl, "m", td["rz"].ID)
	held := fetchN(m, 5)
	wantAckCode(t, m.ack(ctx, 1, 1, held[0], held[1]), 0)

	alt, err := adm.AlterShareGroupOffsets(ctx, "sg", kadm.Offsets{"rz": {0: {Topic: "rz", Partition: 0, At: 1}}})
	if err != nil || alt.Error() != nil {
		t.Fatalf("AlterShareGroupOffsets: %v %v", err, alt.Error())
	}
	wantAckCode(t, m.ack(ctx, 1, 1, held[2]), kerr.InvalidRecordState.Code)
	if got := fetchN(newShareMember(t, cl, "n", td["rz"].ID), 4); got[0] != (shareRec{0, 1, 1}) || len(got) != 4 {
		t.Fatalf("after the alter acquired %v, want offsets 1-4 delivered once", got)
	}

	del, err := adm.DeleteShareGroupOffsets(ctx, "sg", "rz")
	if err != nil || del.Error() != nil {
		t.Fatalf("DeleteShareGroupOffsets: %v %v", err, del.Error())
	}
	if got := fetchN(newShareMember(t, cl, "o", td["rz"].ID), 5); got[0] != (shareRec{0, 0, 1}) || len(got) != 5 {
		t.Fatalf("after the delete acquired %v, want offsets 0-4 delivered once", got)
	}

	// While the group has a member both are refused (NON_EMPTY_GROUP);
	// once it left they are served again.
	j := shareHeartbeat(t, cl, "sg", "joined-member", 0, "rz")
	if _, err := adm.AlterShareGroupOffsets(ctx, "sg", kadm.Offsets{"rz": {0: {Topic: "rz", Partition: 0, At: 1}}}); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("AlterShareGroupOffsets with a member (epoch %d): %v, want NON_EMPTY_GROUP", j.MemberEpoch, err)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, "sg", "rz"); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteShareGroupOffsets with a member: %v, want NON_EMPTY_GROUP", err)
	}
	shareHeartbeat(t, cl, "sg", "joined-member", -1)
	if alt, err := adm.AlterShareGroupOffsets(ctx, "sg", kadm.Offsets{"rz": {0: {Topic: "rz", Partition: 0, At: 1}}}); err != nil || alt.Error() != nil {
		t.Fatalf("AlterShareGroupOffsets after the member left: %v %v", err, alt.Error())
	}
}

// TestFindShareCoordinatorNamesStateLeader: on 3 nodes, FindCoordinator
// key type 2 for share partitions' keys names the leader of the
// __share_group_state partition Kafka's hash of the key picks, from any
// node.
func TestFindShareCoordinatorNamesStateLeader(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := []string{"g:AAAAAAAAAAAAAAAAAAAAAA:0", "g:AAAAAAAAAAAAAAAAAAAAAA:1", "other:group:BBBBBBBBBBBBBBBBBBBBBB:7"}
	find := func(node int, key string) kmsg.FindCoordinatorResponseCoordinator {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 6, 2, []string{key}
		resp, err := req.RequestWith(ctx, cl.Broker(node))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Coordinators[0]
	}
	// The first answer creates the topic.
	eventually(t, 30*time.Second, "FindCoordinator answered", func() bool { return find(1, keys[0]).ErrorCode == 0 })
	seen := map[int32]bool{}
	for _, key := range keys {
		p := metadata.GroupPartition(key, 4) // the test cluster's share_state_partitions
		for node := 1; node <= 3; node++ {
			// Leaders may move (the test cluster rebalances them every
			// second): an answer counts when the leader was the same
			// before and after it.
			var got kmsg.FindCoordinatorResponseCoordinator
			var before, after int32
			eventually(t, 30*time.Second, "FindCoordinator for "+key+" naming the state leader", func() bool {
				before, _ = c.Leader(metadata.ShareGroupStateTopic, p, 10*time.Second)
				got = find(node, key)
				after, _ = c.Leader(metadata.ShareGroupStateTopic, p, 10*time.Second)
				if got.ErrorCode == 0 && before == after && got.NodeID != before {
					t.Fatalf("node %d names %d the coordinator of %s, want %s-%d's leader %d", node, got.NodeID, key, metadata.ShareGroupStateTopic, p, before)
				}
				return got.ErrorCode == 0 && before == after
			})
			seen[got.NodeID] = true
		}
	}
	t.Logf("coordinators named: %v", seen)
}
