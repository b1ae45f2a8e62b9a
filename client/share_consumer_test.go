package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// newShareKfake starts a kfake that serves share groups, with a short
// share heartbeat interval, and makes group read from the start of each
// partition (share.auto.offset.reset=earliest; Kafka's default is latest).
func newShareKfake(t testing.TB, brokers int, partitions int32, group string, topics ...string) *kfake.Cluster {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "50"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kc.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
	return kc
}

// shareOpts are the options of a share consumer of topic in group.
func shareOpts(kc *kfake.Cluster, group, topic string, extra ...Opt) []Opt {
	return append([]Opt{
		Brokers(kc.ListenAddrs()...), ShareGroup(group), ConsumeTopics(topic),
		FetchMaxWait(50 * time.Millisecond), RetryBackoff(10*time.Millisecond, 100*time.Millisecond),
	}, extra...)
}

// newShare creates a share consumer that the test closes.
func newShare(t *testing.T, opts ...Opt) *ShareConsumer {
	t.Helper()
	s, err := NewShareConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// pollN polls until n records came, failing the test on an error.
func pollN(t *testing.T, s *ShareConsumer, n int) []*ShareRecord {
	t.Helper()
	ctx := timeoutCtx(t)
	var out []*ShareRecord
	for len(out) < n {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	return out
}

// pollNone checks that Poll returns nothing for a while.
func pollNone(t *testing.T, s *ShareConsumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	recs, err := s.Poll(ctx)
	if len(recs) > 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("poll gave %d records (first %v), %v; want none", len(recs), recs, err)
	}
}

func TestShareConsumerTwoMembersSplitRecords(t *testing.T) {
	kc := newShareKfake(t, 3, 3, "sg", "t")
	a := newShare(t, shareOpts(kc, "sg", "t", ShareMaxRecords(5))...)
	b := newShare(t, shareOpts(kc, "sg", "t", ShareMaxRecords(5))...)
	members := []*ShareConsumer{a, b}
	checkFor(t, "both members assigned", func() bool { return len(a.Assigned()["t"]) > 0 && len(b.Assigned()["t"]) > 0 })
	var mu sync.Mutex
	seen := map[string]int{} // value -> times delivered
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	perMember := make([]int, len(members))
	for i, s := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				recs, err := s.Poll(ctx)
				if err != nil && ctx.Err() == nil {
					errs[i] = err
					return
				}
				mu.Lock()
				for _, r := range recs {
					seen[string(r.Value)]++
				}
				perMember[i] += len(recs)
				mu.Unlock()
			}
		}()
	}
	produceEach(t, kc, "t", 3, 0, 100)
	checkFor(t, "every record delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 300
	})
	// Let the members run on: nothing accepted may come again.
	time.Sleep(300 * time.Millisecond)
	cancel()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s delivered %d times", v, n)
		}
	}
	if perMember[0] == 0 || perMember[1] == 0 {
		t.Fatalf("records per member %v: want both to share the partitions", perMember)
	}
}

func TestShareConsumerReleaseRedelivers(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	produceEach(t, kc, "t", 1, 0, 2)
	s := newShare(t, shareOpts(kc, "sg", "t")...)
	recs := pollN(t, s, 2)
	for _, r := range recs {
		if r.DeliveryCount != 1 {
			t.Fatalf("first delivery of %d has delivery count %d", r.Offset, r.DeliveryCount)
		}
	}
	// Release the first, reject the second.
	if err := s.Acknowledge(recs[0], AckRelease); err != nil {
		t.Fatal(err)
	}
	if err := s.Acknowledge(recs[1], AckReject); err != nil {
		t.Fatal(err)
	}
	if err := s.Acknowledge(recs[1], AckAccept); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("acknowledging twice: %v, want ErrNotDelivered", err)
	}
	res, err := s.CommitSync(timeoutCtx(t))
	if err != nil || len(res) != 1 || res[TopicPartition{"t", 0}] != nil {
		t.Fatalf("CommitSync = %v, %v; want t[0] acknowledged", res, err)
	}
	again := pollN(t, s, 1)
	if len(again) != 1 || again[0].Offset != recs[0].Offset || again[0].DeliveryCount != 2 {
		t.Fatalf("after release got %+v; want offset %d with delivery count 2", again, recs[0].Offset)
	}
	// Accept it implicitly (no Acknowledge): the rejected one never comes back.
	pollNone(t, s)
	res, err = s.CommitSync(timeoutCtx(t))
	if err != nil {
		t.Fatalf("CommitSync with nothing pending: %v, %v", res, err)
	}
}

func TestShareConsumerPartialAcknowledgement(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	produceEach(t, kc, "t", 1, 0, 2)
	s := newShare(t, shareOpts(kc, "sg", "t")...)
	recs := pollN(t, s, 2)
	if err := s.Acknowledge(recs[0], AckAccept); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Poll(timeoutCtx(t)); !errors.Is(err, ErrUnacknowledged) {
		t.Fatalf("poll with one of two acknowledged: %v, want ErrUnacknowledged", err)
	}
	if err := s.Acknowledge(recs[1], AckAccept); err != nil {
		t.Fatal(err)
	}
	pollNone(t, s)
}

func TestShareConsumerCloseLeavesGroup(t *testing.T) {
	kc := newShareKfake(t, 1, 2, "sg", "t")
	produceEach(t, kc, "t", 2, 0, 3)
	adm := newAdmin(t, kc)
	s, err := NewShareConsumer(shareOpts(kc, "sg", "t")...)
	if err != nil {
		t.Fatal(err)
	}
	pollN(t, s, 6)
	id, _ := s.MemberID()
	d, err := adm.DescribeShareGroup(timeoutCtx(t), "sg")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Members) != 1 || d.Members[0].MemberID != id || d.Members[0].MemberEpoch <= 0 || len(d.Members[0].Assignment["t"]) != 2 {
		t.Fatalf("described %+v; want member %s owning t[0,1]", d, id)
	}
	if err := s.Close(timeoutCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Poll(timeoutCtx(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("poll after close: %v", err)
	}
	d, err = adm.DescribeShareGroup(timeoutCtx(t), "sg")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Members) != 0 {
		t.Fatalf("after close the group has members %+v", d.Members)
	}
	// Close accepted the records implicitly: a new member gets none.
	s2 := newShare(t, shareOpts(kc, "sg", "t")...)
	pollNone(t, s2)
}

func TestShareConsumerCloseReleasesUnacknowledged(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	produceEach(t, kc, "t", 1, 0, 2)
	s, err := NewShareConsumer(shareOpts(kc, "sg", "t")...)
	if err != nil {
		t.Fatal(err)
	}
	recs := pollN(t, s, 2)
	if err := s.Acknowledge(recs[0], AckAccept); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(timeoutCtx(t)); err != nil {
		t.Fatal(err)
	}
	s2 := newShare(t, shareOpts(kc, "sg", "t")...)
	got := pollN(t, s2, 1)
	if len(got) != 1 || got[0].Offset != recs[1].Offset || got[0].DeliveryCount != 2 {
		t.Fatalf("after close got %+v; want offset %d again, delivery count 2", got, recs[1].Offset)
	}
}

func TestShareConsumerAcksCallback(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	produceEach(t, kc, "t", 1, 0, 1)
	got := make(chan map[TopicPartition]error, 10)
	s := newShare(t, shareOpts(kc, "sg", "t", OnShareAcknowledged(func(m map[TopicPartition]error) { got <- m }))...)
	pollN(t, s, 1)
	s.CommitAsync()
	pollNone(t, s) // carries the acceptance
	select {
	case m := <-got:
		if len(m) != 1 || m[TopicPartition{"t", 0}] != nil {
			t.Fatalf("callback got %v", m)
		}
	default:
		t.Fatal("no acknowledgement outcome reported")
	}
}

func TestShareConsumerUnsupported(t *testing.T) {
	noFetch := kversion.V4_1_0() // share-group heartbeats, but no ShareFetch
	noFetch.SetMaxKeyVersion(76, 1)
	noFetch.SetMaxKeyVersion(77, 1)
	noFetch.SetMaxKeyVersion(78, -1)
	noFetch.SetMaxKeyVersion(79, -1)
	for _, tc := range []struct {
		name string
		vs   *kversion.Versions
		api  string
	}{{"3.9", kversion.V3_9_0(), "ShareGroupHeartbeat"}, {"no ShareFetch", noFetch, "ShareFetch"}} {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.MaxVersions(tc.vs),
				kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "50"}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(kc.Close) // after the share consumer's Close
			s := newShare(t, shareOpts(kc, "sg", "t")...)
			_, err = s.Poll(timeoutCtx(t))
			var ue *ShareUnsupportedError
			if !errors.As(err, &ue) || !errors.Is(err, ErrShareUnsupported) || ue.API != tc.api {
				t.Fatalf("poll against a broker without %s: %v", tc.api, err)
			}
			want := "the cluster does not serve share groups (" + tc.api + ")"
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		})
	}
}

func TestShareConsumerGroupIDOfConsumerGroup(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "g", "t")
	produceEach(t, kc, "t", 1, 0, 1)
	m := startMember(t, groupOpts(kc, "g", "t")...)
	checkFor(t, "the classic member to join", func() bool { return assignedCount(m.g) == 1 })
	s := newShare(t, shareOpts(kc, "g", "t")...)
	_, err := s.Poll(timeoutCtx(t))
	if !errors.Is(err, ErrGroupIDNotFound) && !errors.Is(err, ErrInconsistentGroupProtocol) {
		t.Fatalf("share member in a consumer group's id: %v", err)
	}
}

func TestShareConsumerOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Opt
	}{
		{"ShareGroup", []Opt{Brokers("x:1"), ConsumeTopics("t")}},
		{"ConsumeTopics", []Opt{Brokers("x:1"), ShareGroup("g")}},
		{"ConsumeResetOffset", []Opt{Brokers("x:1"), ShareGroup("g"), ConsumeTopics("t"), ConsumeResetOffset(AtStart())}},
		{"ShareMaxRecords", []Opt{Brokers("x:1"), ShareGroup("g"), ConsumeTopics("t"), ShareMaxRecords(0)}},
		{"ShareGroup", []Opt{Brokers("x:1"), ShareGroup("g"), ConsumeTopics("t"), ConsumerGroup("c")}},
	} {
		_, err := NewShareConsumer(tc.opts...)
		var ce *ConfigError
		if !errors.As(err, &ce) || (ce.Option != tc.name && ce.Option != "ConsumerGroup") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := NewGroupConsumer(Brokers("x:1"), ConsumerGroup("g"), ConsumeTopics("t"), ShareGroup("s")); err == nil {
		t.Error("a group consumer took ShareGroup")
	}
	if k, err := ParseAckKind("release"); err != nil || k != AckRelease {
		t.Errorf("ParseAckKind(release) = %v, %v", k, err)
	}
	if _, err := ParseAckKind("drop"); err == nil {
		t.Error("ParseAckKind took drop")
	}
}

func TestAckRuns(t *testing.T) {
	got := ackRuns(map[int64]int8{5: 1, 3: 1, 4: 1, 7: 1, 8: 2, 9: 2})
	want := []ackBatch{{3, 5, 1}, {7, 7, 1}, {8, 9, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ackRuns = %v, want %v", got, want)
	}
}

// A share session the broker lost is opened again; the acknowledgements
// it carried fail (the records come back once their locks end); a
// partition whose leader moved is fetched from the new leader.
func TestShareConsumerSessionLostAndLeaderMove(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "t"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "50", "group.share.record.lock.duration.ms": "500", "share.record.lock.sweep.interval.ms": "100"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kc.SetGroupConfigs("sg", map[string]string{"share.auto.offset.reset": "earliest"})
	produceEach(t, kc, "t", 1, 0, 1)
	results := make(chan map[TopicPartition]error, 10)
	s := newShare(t, shareOpts(kc, "sg", "t", OnShareAcknowledged(func(m map[TopicPartition]error) { results <- m }))...)
	first := pollN(t, s, 1)
	var lost atomic.Bool
	kc.ControlKey(78, func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ShareFetchRequest)
		if r.ShareSessionEpoch <= 0 {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode = ErrShareSessionNotFound.Code
		lost.Store(true)
		return resp, nil, true
	})
	// The implicit acceptance goes with the failed fetch: it fails, and
	// the record comes back with delivery count 2 from a new session.
	again := pollN(t, s, 1)
	if !lost.Load() || again[0].Offset != first[0].Offset || again[0].DeliveryCount != 2 {
		t.Fatalf("after the lost session got %+v (lost %v); want offset %d again with delivery count 2", again[0], lost.Load(), first[0].Offset)
	}
	if m := <-results; !errors.Is(m[TopicPartition{"t", 0}], ErrShareSessionLost) {
		t.Fatalf("acknowledgement outcome %v; want ErrShareSessionLost", m)
	}
	if _, err := s.CommitSync(timeoutCtx(t)); err != nil {
		t.Fatal(err)
	}
	leader := kc.LeaderFor("t", 0)
	if err := kc.MoveTopicPartition("t", 0, 1-leader); err != nil {
		t.Fatal(err)
	}
	produceEach(t, kc, "t", 1, 1, 1)
	moved := pollN(t, s, 1)
	if moved[0].Offset != 1 || moved[0].DeliveryCount != 1 {
		t.Fatalf("after the leader moved got %+v; want offset 1", moved[0])
	}
}

// A member the coordinator no longer knows joins again (epoch 0, same
// member id) and goes on receiving.
func TestShareConsumerRejoinsWhenUnknown(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	produceEach(t, kc, "t", 1, 0, 1)
	s := newShare(t, shareOpts(kc, "sg", "t")...)
	pollN(t, s, 1)
	id, epoch := s.MemberID()
	var fenced, rejoined atomic.Bool
	kc.ControlKey(76, func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ShareGroupHeartbeatRequest)
		if r.MemberEpoch <= 0 {
			if fenced.Load() && r.MemberEpoch == 0 && r.MemberID == id {
				rejoined.Store(true)
			}
			return nil, nil, false
		}
		kc.KeepControl()
		if fenced.Swap(true) {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = ErrUnknownMemberID.Code
		return resp, nil, true
	})
	checkFor(t, "the member to rejoin with its id", rejoined.Load)
	produceEach(t, kc, "t", 1, 1, 1)
	if got := pollN(t, s, 1); got[0].Offset != 1 {
		t.Fatalf("after rejoining got %+v; want offset 1", got[0])
	}
	if id2, epoch2 := s.MemberID(); id2 != id || epoch2 <= 0 {
		t.Fatalf("member %s epoch %d after rejoining (was %s epoch %d)", id2, epoch2, id, epoch)
	}
}

// Polls whose context ends before the broker's wait lose nothing: the
// fetch is waited for (its wait cut to the deadline), so no record is
// acquired into a cancelled request and delivered again later.
func TestShareConsumerShortPolls(t *testing.T) {
	kc := newShareKfake(t, 1, 1, "sg", "t")
	s := newShare(t, shareOpts(kc, "sg", "t", FetchMaxWait(time.Second))...)
	checkFor(t, "an assignment", func() bool { return len(s.Assigned()["t"]) == 1 })
	var got []*ShareRecord
	for i := 0; len(got) < 5; i++ {
		if i == 10 {
			produceEach(t, kc, "t", 1, 0, 5)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		recs, err := s.Poll(ctx)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		got = append(got, recs...)
		if i > 2000 {
			t.Fatalf("after %d polls got %d records", i, len(got))
		}
	}
	for _, r := range got {
		if r.DeliveryCount != 1 {
			t.Fatalf("record %d delivered %d times: a cancelled fetch lost it", r.Offset, r.DeliveryCount)
		}
	}
	if res, err := s.CommitSync(timeoutCtx(t)); err != nil || len(res) != 1 {
		t.Fatalf("CommitSync = %v, %v", res, err)
	}
}
