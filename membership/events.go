package membership

import (
	"strconv"
	"sync"
)

// EventKind says what happened to a member.
type EventKind uint8

// Event kinds. The zero value is not a kind.
const (
	// EventJoin: a node became alive (including this node, first, at New).
	EventJoin EventKind = iota + 1
	// EventUpdate: an alive node changed its NodeMeta.
	EventUpdate
	// EventLeave: a node left gracefully (it called Leave).
	EventLeave
	// EventFail: a node was declared dead without having left.
	EventFail
)

func (k EventKind) String() string {
	switch k {
	case EventJoin:
		return "join"
	case EventUpdate:
		return "update"
	case EventLeave:
		return "leave"
	case EventFail:
		return "fail"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one membership change. Node is the member's metadata: the new
// one for EventJoin and EventUpdate, the last known one for EventLeave and
// EventFail.
type Event struct {
	Kind EventKind
	Node NodeMeta
}

// dispatcher hands events to a callback from one goroutine, in push order.
// push never blocks on the callback, so memberlist (which reports changes
// while holding its node lock) is never held up by a slow consumer: the
// queue grows instead. Membership changes are rare, so it stays small.
type dispatcher struct {
	fn func(Event)

	mu      sync.Mutex // guards queue and stopped
	queue   []Event    // pushed, not yet taken by run
	stopped bool       // set by close; push then drops events

	wake chan struct{} // capacity 1: "the queue may be non-empty"
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns
}

// newDispatcher starts the delivery goroutine; with a nil fn it starts
// nothing and drops every event.
func newDispatcher(fn func(Event)) *dispatcher {
	d := &dispatcher{
		fn:   fn,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	if fn == nil {
		d.stopped = true
		close(d.done)
		return d
	}
	go d.run()
	return d
}

func (d *dispatcher) push(e Event) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.queue = append(d.queue, e)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default: // a wake-up is already pending; run will see this event too
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		select {
		case <-d.stop: // close was called: deliver nothing more
			return
		case <-d.wake: // events were pushed
		}
		for {
			e, ok := d.next()
			if !ok {
				break
			}
			d.fn(e)
		}
	}
}

// next pops the oldest event; false when the queue is empty or closed.
func (d *dispatcher) next() (Event, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || len(d.queue) == 0 {
		return Event{}, false
	}
	e := d.queue[0]
	d.queue[0] = Event{}
	d.queue = d.queue[1:]
	if len(d.queue) == 0 {
		d.queue = nil // let the backing array go
	}
	return e, true
}

// close drops undelivered events, waits for a callback in progress to
// return and for the goroutine to end. It must not be called from the
// callback. Idempotent.
func (d *dispatcher) close() {
	d.mu.Lock()
	already := d.stopped
	d.stopped = true
	d.queue = nil
	d.mu.Unlock()
	if !already {
		close(d.stop)
	}
	<-d.done
}
