package membership

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cluster starts n nodes (ids 1..n) with recorders and joins 2..n through
// node 1.
func cluster(t *testing.T, n int) ([]*Membership, []*recorder) {
	t.Helper()
	nodes := make([]*Membership, n)
	recs := make([]*recorder, n)
	for i := range n {
		recs[i] = &recorder{}
		cfg := fastConfig(int32(i + 1))
		cfg.OnEvent = recs[i].onEvent
		nodes[i] = start(t, cfg)
	}
	seed := nodes[0].LocalAddr()
	for i := 1; i < n; i++ {
		got, err := nodes[i].Join(ctxFor(t, 10*time.Second), []string{seed})
		if err != nil || got != 1 {
			t.Fatalf("node %d Join(%s) = %d, %v; want 1, nil", i+1, seed, got, err)
		}
	}
	return nodes, recs
}

func wantMembers(ids ...int32) []NodeMeta {
	out := make([]NodeMeta, len(ids))
	for i, id := range ids {
		out[i] = testMeta(id)
	}
	return out
}

// sees waits until node m's Members equals want.
func sees(t *testing.T, m *Membership, within time.Duration, want []NodeMeta) {
	t.Helper()
	waitFor(t, within, func() string {
		if got := m.Members(); !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("node %d sees %+v, want %+v", m.Local().ID, got, want)
		}
		return ""
	})
}

func TestThreeNodesJoinThroughOneSeed(t *testing.T) {
	nodes, recs := cluster(t, 3)
	all := wantMembers(1, 2, 3)
	for _, m := range nodes {
		sees(t, m, 5*time.Second, all)
	}
	for _, m := range nodes {
		for id := int32(1); id <= 3; id++ {
			meta, ok := m.Lookup(id)
			if !ok || meta != testMeta(id) {
				t.Errorf("node %d Lookup(%d) = %+v, %v", m.Local().ID, id, meta, ok)
			}
		}
		if _, ok := m.Lookup(4); ok {
			t.Errorf("node %d: Lookup(4) found a node that does not exist", m.Local().ID)
		}
	}
	// Every node reported a join for each member, itself first.
	for i, r := range recs {
		waitFor(t, 5*time.Second, func() string {
			var joined []int32
			for _, e := range r.snapshot() {
				if e.Kind != EventJoin {
					return fmt.Sprintf("node %d got %v", i+1, e)
				}
				if e.Node != testMeta(e.Node.ID) {
					return fmt.Sprintf("node %d got join with meta %+v", i+1, e.Node)
				}
				joined = append(joined, e.Node.ID)
			}
			if len(joined) != 3 || joined[0] != int32(i+1) {
				return fmt.Sprintf("node %d joins %v, want itself first then the other two", i+1, joined)
			}
			slices.Sort(joined)
			if !slices.Equal(joined, []int32{1, 2, 3}) {
				return fmt.Sprintf("node %d joins %v", i+1, joined)
			}
			return ""
		})
	}
}

func TestLeaveGivesEventLeave(t *testing.T) {
	nodes, recs := cluster(t, 3)
	for _, m := range nodes {
		sees(t, m, 5*time.Second, wantMembers(1, 2, 3))
	}
	if err := nodes[2].Leave(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	for i := range 2 {
		sees(t, nodes[i], 5*time.Second, wantMembers(1, 2))
		waitFor(t, 5*time.Second, func() string {
			if got := recs[i].kindsFor(3); !slices.Equal(got, []EventKind{EventJoin, EventLeave}) {
				return fmt.Sprintf("node %d events for node 3: %v, want [join leave]", i+1, got)
			}
			return ""
		})
		if _, ok := nodes[i].Lookup(3); ok {
			t.Errorf("node %d Lookup(3) after leave found it", i+1)
		}
	}
	// The leaver reports its own leave, and cannot rejoin or update.
	waitFor(t, 5*time.Second, func() string {
		if got := recs[2].kindsFor(3); !slices.Equal(got, []EventKind{EventJoin, EventLeave}) {
			return fmt.Sprintf("leaver's events about itself: %v", got)
		}
		return ""
	})
	if err := nodes[2].Leave(ctxFor(t, time.Second)); err != nil {
		t.Errorf("second Leave: %v", err)
	}
	if _, err := nodes[2].Join(ctxFor(t, time.Second), []string{nodes[0].LocalAddr()}); !errors.Is(err, ErrLeft) {
		t.Errorf("Join after Leave: err %v, want ErrLeft", err)
	}
	if err := nodes[2].UpdateMeta(ctxFor(t, time.Second), testMeta(3)); !errors.Is(err, ErrLeft) {
		t.Errorf("UpdateMeta after Leave: err %v, want ErrLeft", err)
	}
}

func TestShutdownWithoutLeaveGivesEventFail(t *testing.T) {
	nodes, recs := cluster(t, 3)
	for _, m := range nodes {
		sees(t, m, 5*time.Second, wantMembers(1, 2, 3))
	}
	if err := nodes[1].Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		sees(t, nodes[i], 10*time.Second, wantMembers(1, 3))
		waitFor(t, 5*time.Second, func() string {
			if got := recs[i].kindsFor(2); !slices.Equal(got, []EventKind{EventJoin, EventFail}) {
				return fmt.Sprintf("node %d events for node 2: %v, want [join fail]", i+1, got)
			}
			return ""
		})
		var last Event
		for _, e := range recs[i].snapshot() {
			if e.Node.ID == 2 {
				last = e
			}
		}
		if last.Node != testMeta(2) {
			t.Errorf("fail event carries %+v, want node 2's meta", last.Node)
		}
	}
	// Shutdown is idempotent, and the node refuses further work.
	if err := nodes[1].Shutdown(); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if _, err := nodes[1].Join(ctxFor(t, time.Second), []string{nodes[0].LocalAddr()}); !errors.Is(err, ErrClosed) {
		t.Errorf("Join after Shutdown: %v, want ErrClosed", err)
	}
	if err := nodes[1].Leave(ctxFor(t, time.Second)); !errors.Is(err, ErrClosed) {
		t.Errorf("Leave after Shutdown: %v, want ErrClosed", err)
	}
	if err := nodes[1].UpdateMeta(ctxFor(t, time.Second), testMeta(2)); !errors.Is(err, ErrClosed) {
		t.Errorf("UpdateMeta after Shutdown: %v, want ErrClosed", err)
	}
}

// Node 1's callback sees node 2 join, update and leave in that order, on
// one goroutine, one call at a time, and outside memberlist's node lock
// (the callback takes that lock itself; under it, it would wait forever).
func TestEventsInOrderFromOneGoroutineOutsideLocks(t *testing.T) {
	var self atomic.Pointer[Membership]
	var lockedCalls atomic.Int32
	r1 := &recorder{}
	r1.hook = func(Event) {
		m := self.Load()
		if m == nil {
			return // the first event may come before New returns
		}
		done := make(chan struct{})
		go func() { m.ml.NumMembers(); close(done) }() // takes memberlist's node lock
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			// Stuck behind the lock our caller holds; the goroutine ends
			// once we return and the lock is released.
			lockedCalls.Add(1)
		}
	}
	cfg1 := fastConfig(1)
	cfg1.OnEvent = r1.onEvent
	n1 := start(t, cfg1)
	self.Store(n1)
	n2 := start(t, fastConfig(2))
	if _, err := n2.Join(ctxFor(t, 5*time.Second), []string{n1.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	sees(t, n1, 5*time.Second, wantMembers(1, 2))

	updated := testMeta(2)
	updated.KafkaAddr = "moved.test:19092"
	updated.DiskFull = true
	if err := n2.UpdateMeta(ctxFor(t, 5*time.Second), updated); err != nil {
		t.Fatalf("UpdateMeta: %v", err)
	}
	waitFor(t, 5*time.Second, func() string {
		if got, _ := n1.Lookup(2); got != updated {
			return fmt.Sprintf("node 1 sees node 2 as %+v", got)
		}
		return ""
	})
	if err := n2.Leave(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Kind: EventJoin, Node: testMeta(1)},
		{Kind: EventJoin, Node: testMeta(2)},
		{Kind: EventUpdate, Node: updated},
		{Kind: EventLeave, Node: updated},
	}
	waitFor(t, 5*time.Second, func() string {
		if got := r1.snapshot(); !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("events %v, want %v", got, want)
		}
		return ""
	})
	r1.mu.Lock()
	defer r1.mu.Unlock()
	if r1.overlaps != 0 {
		t.Errorf("%d callbacks overlapped", r1.overlaps)
	}
	for i, g := range r1.goroutines {
		if g != r1.goroutines[0] {
			t.Errorf("event %d delivered on goroutine %d, event 0 on %d", i, g, r1.goroutines[0])
		}
	}
	if n := lockedCalls.Load(); n != 0 {
		t.Errorf("%d callbacks ran while memberlist held its node lock", n)
	}
}

func TestUpdateMetaRejects(t *testing.T) {
	m := start(t, fastConfig(1))
	big := testMeta(1)
	big.RaftAddr = strings.Repeat("h", 600) + ":1"
	err := m.UpdateMeta(ctxFor(t, time.Second), big)
	var se *MetaSizeError
	if !errors.Is(err, ErrMetaTooLarge) || !errors.As(err, &se) || se.Size <= MetaMaxSize {
		t.Errorf("UpdateMeta(oversized) = %v, want *MetaSizeError", err)
	}
	other := testMeta(2)
	if err := m.UpdateMeta(ctxFor(t, time.Second), other); !errors.Is(err, ErrInvalidMeta) {
		t.Errorf("UpdateMeta(other id) = %v, want ErrInvalidMeta", err)
	}
	if got := m.Local(); got != testMeta(1) {
		t.Errorf("after rejected updates Local() = %+v", got)
	}
	if got := m.Members(); !reflect.DeepEqual(got, wantMembers(1)) {
		t.Errorf("after rejected updates Members() = %+v", got)
	}
}
