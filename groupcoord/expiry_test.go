package groupcoord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/record"
)

const testRetention = time.Hour

// expire runs ExpireOffsets at now and fails the test on an error.
func (h *harness) expire(now int64) Expired {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := h.c.ExpireOffsets(ctx, time.UnixMilli(now), testRetention)
	if err != nil {
		h.t.Fatalf("ExpireOffsets: %v", err)
	}
	return got
}

func (h *harness) commitTime(group, topic string, p int32) int64 {
	h.t.Helper()
	o, ok := h.view.Offset(group, topic, p)
	if !ok {
		h.t.Fatalf("no offset of %s %s/%d", group, topic, p)
	}
	return o.CommitTimestamp
}

// A standalone consumer's offsets (no group protocol) expire the retention
// after their own commit; once none is left the group is gone.
func TestExpireStandaloneOffsets(t *testing.T) {
	h := newHarness(t, nil)
	wantCode(t, "commit t/0", h.commit(commitReq(8, "solo", "", -1, "t", map[int32]int64{0: 5}, ""))[0], nil)
	first := h.commitTime("solo", "t", 0)
	waitFor(t, "the clock to move", func() bool { return time.Now().UnixMilli() > first })
	wantCode(t, "commit t/1", h.commit(commitReq(8, "solo", "", -1, "t", map[int32]int64{1: 6}, ""))[0], nil)
	second := h.commitTime("solo", "t", 1)

	if got := h.expire(first + testRetention.Milliseconds() - 1); got != (Expired{}) {
		t.Fatalf("expired %+v before the retention passed", got)
	}
	if got := h.expire(first + testRetention.Milliseconds()); got.Offsets != 1 || got.Groups != 0 {
		t.Fatalf("expired %+v, want the first offset only", got)
	}
	if o, _ := h.fetch("solo", "t", 0); o != -1 {
		t.Fatalf("expired offset still fetched: %d", o)
	}
	if o, _ := h.fetch("solo", "t", 1); o != 6 {
		t.Fatalf("the later offset: %d, want 6", o)
	}
	h.expire(second + testRetention.Milliseconds())
	if h.view.HasGroup("solo") {
		t.Fatal("a group without offsets or metadata is still in the view")
	}
	if d := h.describe("solo"); d.State != "Dead" {
		t.Fatalf("state %s, want Dead", d.State)
	}
}

// An empty group's offsets expire the retention after the group became
// empty, however old the commits; the group is then removed (its metadata
// tombstoned), and a new member starts it afresh.
func TestExpireEmptyGroup(t *testing.T) {
	h := newHarness(t, nil)
	member, gen := h.stableOne("g", nil)
	wantCode(t, "commit", h.commit(commitReq(8, "g", member, gen, "t1", map[int32]int64{0: 9}, ""))[0], nil)
	commitAt := h.commitTime("g", "t1", 0)
	waitFor(t, "the clock to move", func() bool { return time.Now().UnixMilli() > commitAt })
	wantCode(t, "leave", h.leave(4, "g", leaving(member, nil)).ErrorCode, nil)
	waitFor(t, "the empty group stored", func() bool {
		md, ok := h.view.Group("g")
		return ok && len(md.Members) == 0
	})
	md, _ := h.view.Group("g")
	emptyAt := md.StateTimestamp
	if emptyAt <= commitAt {
		t.Fatalf("became empty at %d, not after the commit at %d", emptyAt, commitAt)
	}
	if got := h.expire(emptyAt + testRetention.Milliseconds() - 1); got != (Expired{}) {
		t.Fatalf("expired %+v before the retention passed since the group became empty", got)
	}
	if got := h.expire(emptyAt + testRetention.Milliseconds()); got != (Expired{Offsets: 1, Groups: 1}) {
		t.Fatalf("expired %+v, want 1 offset and the group", got)
	}
	if h.view.HasGroup("g") {
		t.Fatal("the removed group is still in the view")
	}
	if d := h.describe("g"); d.State != "Dead" {
		t.Fatalf("state %s, want Dead", d.State)
	}
	if _, gen := h.stableOne("g", nil); gen != 1 {
		t.Fatalf("the group came back at generation %d, want 1", gen)
	}
}

// A stable consumer group keeps the offsets of the topics its members
// subscribe to, however old, and loses the others' the retention after
// their commit.
func TestExpireUnsubscribedOffsetsOfStableGroup(t *testing.T) {
	h := newHarness(t, nil)
	member, gen := h.stableOne("g", nil) // subscribes to t1
	wantCode(t, "commit t1", h.commit(commitReq(8, "g", member, gen, "t1", map[int32]int64{0: 1}, ""))[0], nil)
	wantCode(t, "commit old", h.commit(commitReq(8, "g", member, gen, "old", map[int32]int64{0: 2}, ""))[0], nil)
	at := max(h.commitTime("g", "t1", 0), h.commitTime("g", "old", 0))
	if got := h.expire(at + 10*testRetention.Milliseconds()); got != (Expired{Offsets: 1}) {
		t.Fatalf("expired %+v, want the unsubscribed topic's offset", got)
	}
	if o, _ := h.fetch("g", "t1", 0); o != 1 {
		t.Fatalf("subscribed offset %d, want 1", o)
	}
	if o, _ := h.fetch("g", "old", 0); o != -1 {
		t.Fatalf("unsubscribed offset %d, want expired", o)
	}
	if d := h.describe("g"); d.State != "Stable" {
		t.Fatalf("state %s, want Stable", d.State)
	}
}

// An OffsetCommit that arrives while a group's expiry is being written
// waits for it, so the expiry's tombstone cannot delete the new commit;
// and an expiry leaves alone a group with a commit being written.
func TestExpiryAndCommitDoNotRace(t *testing.T) {
	h := newHarness(t, nil)
	wantCode(t, "commit", h.commit(commitReq(8, "solo", "", -1, "t", map[int32]int64{0: 5}, ""))[0], nil)
	at := h.commitTime("solo", "t", 0)
	release := h.log.setBlock()
	expired := make(chan Expired, 1)
	go func() { expired <- h.expire(at + testRetention.Milliseconds()) }()
	waitFor(t, "the expiry write to wait", func() bool { return h.log.waiting.Load() == 1 })
	committed := make(chan []int16, 1)
	go func() { committed <- h.commit(commitReq(8, "solo", "", -1, "t", map[int32]int64{0: 7}, "")) }()
	time.Sleep(20 * time.Millisecond) // room for a wrong order; the commit must wait
	if n := h.log.waiting.Load(); n != 1 {
		t.Fatalf("%d appends wait; the commit did not wait for the expiry", n)
	}
	release()
	if got := recv(t, expired); got.Offsets != 1 {
		t.Fatalf("expired %+v", got)
	}
	wantCode(t, "commit during expiry", recv(t, committed)[0], nil)
	if o, _ := h.fetch("solo", "t", 0); o != 7 {
		t.Fatalf("offset %d after the commit that followed the expiry, want 7", o)
	}

	// A commit being written keeps its group from expiring meanwhile.
	release = h.log.setBlock()
	go func() { committed <- h.commit(commitReq(8, "solo", "", -1, "t", map[int32]int64{0: 8}, "")) }()
	waitFor(t, "the commit write to wait", func() bool { return h.log.waiting.Load() == 1 })
	if got := h.expire(time.Now().Add(10 * testRetention).UnixMilli()); got != (Expired{}) {
		t.Fatalf("expired %+v while a commit was being written", got)
	}
	release()
	wantCode(t, "commit", recv(t, committed)[0], nil)
	if o, _ := h.fetch("solo", "t", 0); o != 8 {
		t.Fatalf("offset %d, want 8", o)
	}
}

// A failed expiry write leaves the group as it was, and a closed
// coordinator expires nothing.
func TestExpiryFailsCleanly(t *testing.T) {
	h := newHarness(t, nil)
	member, gen := h.stableOne("g", nil)
	wantCode(t, "commit", h.commit(commitReq(8, "g", member, gen, "t1", map[int32]int64{0: 9}, ""))[0], nil)
	wantCode(t, "leave", h.leave(4, "g", leaving(member, nil)).ErrorCode, nil)
	waitFor(t, "the empty group stored", func() bool {
		md, ok := h.view.Group("g")
		return ok && len(md.Members) == 0
	})
	h.log.setFail(kerr.NotLeaderForPartition)
	if _, err := h.c.ExpireOffsets(context.Background(), time.Now().Add(2*testRetention), testRetention); err == nil {
		t.Fatal("a failed expiry write reported no error")
	}
	if d := h.describe("g"); d.State != "Empty" {
		t.Fatalf("state %s after a failed expiry, want Empty", d.State)
	}
	h.log.setFail(nil)
	if got := h.expire(time.Now().Add(2 * testRetention).UnixMilli()); got != (Expired{Offsets: 1, Groups: 1}) {
		t.Fatalf("expired %+v on the retry", got)
	}
	h.c.Close()
	if _, err := h.c.ExpireOffsets(context.Background(), time.Now(), testRetention); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("closed coordinator: %v", err)
	}
}

// An offset with a transactional commit pending does not expire, and an
// empty group with one pending is not removed, even when the pending
// commit is of a partition without a committed offset: its marker may
// still make it the group's offset.
func TestExpiryKeepsPendingTransactionalOffsets(t *testing.T) {
	h := newHarness(t, nil)
	member, gen := h.stableOne("g", nil)
	wantCode(t, "commit", h.commit(commitReq(8, "g", member, gen, "t1", map[int32]int64{0: 1, 1: 2}, ""))[0], nil)
	wantCode(t, "leave", h.leave(4, "g", leaving(member, nil)).ErrorCode, nil)
	waitFor(t, "the empty group stored", func() bool {
		md, ok := h.view.Group("g")
		return ok && len(md.Members) == 0
	})
	pend := func(pid int64, p int32) {
		r := OffsetRecord("g", "t1", p, Offset{Offset: 10, LeaderEpoch: -1, CommitTimestamp: time.Now().UnixMilli()})
		if err := h.view.ApplyTxn(pid, 0, record.Record{Key: r.Key, Value: r.Value}); err != nil {
			t.Fatal(err)
		}
	}
	pend(77, 1)
	later := time.Now().Add(10 * testRetention).UnixMilli()
	if got := h.expire(later); got != (Expired{Offsets: 1}) {
		t.Fatalf("expired %+v, want only the offset without a pending commit", got)
	}
	if o, _ := h.fetch("g", "t1", 1); o != 2 {
		t.Fatalf("offset with a pending commit: %d, want 2", o)
	}
	h.view.Marker(77, false)
	pend(78, 2) // a partition without a committed offset
	if got := h.expire(later); got != (Expired{Offsets: 1}) {
		t.Fatalf("expired %+v, want the last committed offset and not the group", got)
	}
	if d := h.describe("g"); d.State != "Empty" || !h.view.HasGroup("g") {
		t.Fatalf("group with a pending commit: %s, in the view: %v", d.State, h.view.HasGroup("g"))
	}
	h.view.Marker(78, true)
	if got := h.expire(later); got != (Expired{Offsets: 1, Groups: 1}) {
		t.Fatalf("expired %+v after the marker, want its offset and the group", got)
	}
}
