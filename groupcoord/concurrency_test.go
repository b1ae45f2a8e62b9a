package groupcoord

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCloseAnswersWaiters: Close answers a waiting SyncGroup, a commit and
// a deletion whose records the Log holds, and every later request,
// NOT_COORDINATOR, and returns although the Log never answers.
func TestCloseAnswersWaiters(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	a, b, gen := h.twoMembers("g")
	wantCode(t, "simple commit", h.commit(commitReq(8, "empty", "", -1, "t1", map[int32]int64{0: 1}, ""))[0], nil)

	// A new generation, where B's SyncGroup waits for the leader.
	aCh := h.joinAsync(h.c, joinReq(9, "g", a, nil, 10*time.Second))
	waitFor(t, "rebalance", func() bool { return h.heartbeat(4, "g", b, nil, gen) == kerr.RebalanceInProgress.Code })
	jb := recv(t, h.joinAsync(h.c, joinReq(9, "g", b, nil, 10*time.Second)))
	recv(t, aCh)
	sbCh := h.syncAsync(syncReq(5, "g", b, nil, jb.Generation, nil))

	release := h.log.setBlock()
	defer release()
	commitCh := make(chan []int16, 1)
	go func() { commitCh <- h.commit(commitReq(8, "empty", "", -1, "t1", map[int32]int64{0: 2}, "")) }()
	deleteCh := make(chan *kerr.Error, 1)
	waitFor(t, "the commit in the Log", func() bool { return h.log.waiting.Load() == 1 })
	go func() { deleteCh <- h.c.DeleteGroup(ctx, "empty") }()
	waitFor(t, "the commit and the deletion in the Log", func() bool { return h.log.waiting.Load() == 2 })

	h.c.Close()
	wantCode(t, "waiting sync", recv(t, sbCh).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "waiting commit", recv(t, commitCh)[0], kerr.NotCoordinator)
	wantCode(t, "waiting delete", codeOf(recv(t, deleteCh)), kerr.NotCoordinator)
	h.c.Close() // idempotent

	wantCode(t, "join", h.join(joinReq(9, "g", "", nil, time.Second)).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "sync", h.sync(syncReq(5, "g", b, nil, jb.Generation, nil)).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "heartbeat", h.heartbeat(4, "g", b, nil, jb.Generation), kerr.NotCoordinator)
	wantCode(t, "leave", h.leave(5, "g", leaving(b, nil)).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "commit", h.commit(commitReq(8, "g", b, jb.Generation, "t1", map[int32]int64{0: 1}, ""))[0], kerr.NotCoordinator)
	wantCode(t, "fetch", h.c.FetchOffsets("g", nil, false).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "describe", h.describe("g").ErrorCode, kerr.NotCoordinator)
	wantCode(t, "offset delete", h.c.OffsetDelete(ctx, offsetDeleteReq("g", "t2", 0)).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "delete", codeOf(h.c.DeleteGroup(ctx, "g")), kerr.NotCoordinator)
	if h.c.ListGroups(nil, nil) != nil {
		t.Fatal("ListGroups after Close")
	}
}

// TestManyMembers runs many members, some static, each joining, syncing,
// heartbeating and committing in a loop as a consumer does, with readers
// alongside, until one generation holds them all; then each leaves. Run
// it with -race.
func TestManyMembers(t *testing.T) {
	const n = 24
	h := newHarness(t, nil)
	const g = "many"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var commits [n]atomic.Int64   // successful commits of each member
	var committed [n]atomic.Int64 // the offset of its last successful commit
	var lastID [n]atomic.Value    // its member id
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var inst *string
			if i%3 == 0 {
				s := fmt.Sprintf("instance-%d", i)
				inst = &s
			}
			topic := fmt.Sprintf("t%d", i)
			id := ""
			for ctx.Err() == nil {
				j := h.c.JoinGroup(ctx, "client", "/h", joinReq(9, g, id, inst, 10*time.Second))
				switch j.ErrorCode {
				case 0:
				case kerr.MemberIDRequired.Code:
					id = j.MemberID
					continue
				case kerr.UnknownMemberID.Code:
					id = ""
					continue
				default:
					continue // REBALANCE_IN_PROGRESS, or ctx ended
				}
				id = j.MemberID
				lastID[i].Store(id)
				var assign map[string][]byte
				if j.LeaderID == id && !j.SkipAssignment {
					assign = make(map[string][]byte)
					for _, m := range j.Members {
						assign[m.MemberID] = []byte(m.MemberID)
					}
				}
				s := h.c.SyncGroup(ctx, syncReq(5, g, id, inst, j.Generation, assign))
				if s.ErrorCode != 0 {
					continue
				}
				if string(s.MemberAssignment) != id {
					t.Errorf("member %d: assignment %q", i, s.MemberAssignment)
				}
				for ctx.Err() == nil {
					if code := h.heartbeat(4, g, id, inst, j.Generation); code != 0 {
						if code == kerr.UnknownMemberID.Code {
							id = ""
						}
						break
					}
					next := committed[i].Load() + 1
					req := withInstance(commitReq(8, g, id, j.Generation, topic, map[int32]int64{0: next}, ""), inst)
					switch code := h.commit(req)[0]; code {
					case 0:
						committed[i].Store(next)
						commits[i].Add(1)
					case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code:
					default:
						t.Errorf("member %d: commit: %s", i, errName(code))
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Go(func() { // readers
		for ctx.Err() == nil {
			h.describe(g)
			h.c.ListGroups(nil, nil)
			h.c.FetchOffsets(g, nil, false)
			time.Sleep(time.Millisecond)
		}
	})

	waitFor(t, "one stable generation of all members", func() bool {
		d := h.describe(g)
		if d.State != "Stable" || len(d.Members) != n {
			return false
		}
		for _, m := range d.Members {
			if string(m.MemberAssignment) != m.MemberID {
				return false
			}
		}
		return true
	})
	waitFor(t, "commits of every member", func() bool {
		for i := range n {
			if commits[i].Load() < 3 {
				return false
			}
		}
		return true
	})
	cancel()
	wg.Wait()

	for i := range n {
		if o, _ := h.fetch(g, fmt.Sprintf("t%d", i), 0); o != committed[i].Load() {
			t.Errorf("member %d: fetched %d, last acknowledged commit %d", i, o, committed[i].Load())
		}
	}
	var all []string
	for i := range n {
		all = append(all, lastID[i].Load().(string))
	}
	for _, id := range all {
		h.leave(5, g, leaving(id, nil))
	}
	waitFor(t, "an empty group", func() bool {
		md, ok := h.view.Group(g)
		return ok && len(md.Members) == 0 && h.describe(g).State == "Empty"
	})
}

// BenchmarkOffsetCommit measures a member's commit of four partitions to
// a stable group, through a Log that applies to the View at once.
func BenchmarkOffsetCommit(b *testing.B) {
	h := newHarness(b, nil)
	id, gen := h.stableOne("bench", nil)
	req := commitReq(8, "bench", id, gen, "t1", map[int32]int64{0: 1, 1: 2, 2: 3, 3: 4}, "")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp := h.c.OffsetCommit(ctx, req)
		if resp.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatal(errName(resp.Topics[0].Partitions[0].ErrorCode))
		}
	}
}
