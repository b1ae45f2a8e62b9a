package membership

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// push never waits for the callback: with the callback stuck on the first
// event, two hundred more are queued, then all arrive in push order on one
// goroutine, one call at a time.
func TestDispatcherOrderAndNonBlockingPush(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	started := make(chan struct{})
	var r recorder
	first := true
	r.hook = func(Event) {
		if first { // only the delivering goroutine touches first
			first = false
			close(started)
			<-release
		}
	}
	d := newDispatcher(r.onEvent)
	t.Cleanup(d.close)
	t.Cleanup(unblock) // runs first: lets a stuck callback, then close, finish

	const n = 200
	pushed := make(chan struct{})
	go func() {
		defer close(pushed)
		d.push(Event{Kind: EventJoin, Node: NodeMeta{ID: 1}})
		<-started
		for i := 2; i <= n; i++ {
			d.push(Event{Kind: EventUpdate, Node: NodeMeta{ID: int32(i)}})
		}
	}()
	select {
	case <-pushed:
	case <-time.After(5 * time.Second):
		t.Fatal("push blocked while the callback was busy")
	}
	unblock()
	waitFor(t, 10*time.Second, func() string {
		if got := len(r.snapshot()); got != n {
			return fmt.Sprintf("delivered %d of %d", got, n)
		}
		return ""
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.events {
		if e.Node.ID != int32(i+1) {
			t.Fatalf("event %d is for node %d: out of order", i, e.Node.ID)
		}
	}
	if r.overlaps != 0 {
		t.Errorf("%d callbacks overlapped", r.overlaps)
	}
	for i, g := range r.goroutines {
		if g != r.goroutines[0] {
			t.Fatalf("event %d delivered on goroutine %d, event 0 on %d", i, g, r.goroutines[0])
		}
	}
}

// close waits for the callback in progress, drops the queue, and later
// pushes are ignored.
func TestDispatcherCloseDropsPending(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var r recorder
	first := true
	r.hook = func(Event) {
		if first {
			first = false
			close(started)
			<-release
		}
	}
	d := newDispatcher(r.onEvent)
	d.push(Event{Kind: EventJoin, Node: NodeMeta{ID: 1}})
	<-started
	d.push(Event{Kind: EventJoin, Node: NodeMeta{ID: 2}})
	closed := make(chan struct{})
	go func() { d.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while the callback was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	d.push(Event{Kind: EventJoin, Node: NodeMeta{ID: 3}})
	d.close() // idempotent
	got := r.snapshot()
	if len(got) != 1 || got[0].Node.ID != 1 {
		t.Errorf("delivered %+v, want only node 1's event", got)
	}
}

func TestDispatcherNilCallback(t *testing.T) {
	d := newDispatcher(nil)
	d.push(Event{Kind: EventJoin}) // must not block or panic
	d.close()
	d.close()
}

func TestEventKindString(t *testing.T) {
	for k, want := range map[EventKind]string{EventJoin: "join", EventUpdate: "update", EventLeave: "leave", EventFail: "fail", 0: "EventKind(0)"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", k, got, want)
		}
	}
}
