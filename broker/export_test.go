package broker

import "time"

// WriteCaching reports the write-caching flush interval this node last
// gave its replica of topic/p's Raft group (0: fsync on commit) and
// whether the group took it (never, on a store that always fsyncs); ok is
// false when the node holds no such replica or has not set it yet.
func (n *Node) WriteCaching(topic string, p int32) (flush time.Duration, cached, ok bool) {
	lr, ok := n.reps.get(topic, p)
	if !ok {
		return 0, false, false
	}
	lr.wcMu.Lock()
	defer lr.wcMu.Unlock()
	return lr.wc.flush, lr.wc.cached, lr.wc.set
}
