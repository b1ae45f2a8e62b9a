package broker

import (
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/membership"
)

// downSince remembers since when this node has seen each other node
// fail or leave gossip, for the "down since" of the status page, the
// metrics and cluster status. A registered broker never seen alive since
// this node started counts as down since the start.
type downSince struct {
	start time.Time
	mu    sync.Mutex // guards since
	since map[int32]time.Time
}

func newDownSince(start time.Time) *downSince {
	return &downSince{start: start, since: map[int32]time.Time{}}
}

// note records a membership event at now.
func (d *downSince) note(ev membership.Event, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ev.Kind {
	case membership.EventJoin, membership.EventUpdate:
		d.since[ev.Node.ID] = time.Time{} // alive: seen since the start
	case membership.EventLeave, membership.EventFail:
		d.since[ev.Node.ID] = now
	}
}

// of is since when node id has been down: when it last failed or left,
// or this node's start if it was never seen alive since.
func (d *downSince) of(id int32) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.since[id]; ok && !t.IsZero() {
		return t
	}
	return d.start
}
