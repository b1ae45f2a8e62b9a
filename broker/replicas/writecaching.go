package replicas

import (
	"time"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// Write caching (the topic config write.caching) is applied to each local
// replica's Raft group, leader and followers alike, when the replica opens
// and whenever its topic's resolved configs change: every replica of a
// partition acknowledges in the same mode once its node has the change.

// writeCaching is the mode last asked of a replica's Raft group.
type writeCaching struct {
	set    bool          // SetWriteCaching was called at least once
	flush  time.Duration // what it was given; 0 is fsync on commit
	cached bool          // the group took flush > 0: it acknowledges before fsync
	// refusalLogged: the store's refusal to cache was logged already.
	refusalLogged bool
}

// WriteCaching reports the flush interval last given to the replica's Raft
// group (0: fsync on commit), whether the group took it (never, on a store
// that always fsyncs), and whether one was given yet.
func (r *Replica[E]) WriteCaching() (flush time.Duration, cached, set bool) {
	r.wcMu.Lock()
	defer r.wcMu.Unlock()
	return r.wc.flush, r.wc.cached, r.wc.set
}

// applyWriteCaching gives the replica's Raft group the flush interval that
// c asks for, when it differs from the last one. A store that always
// fsyncs refuses; the partition then stays fsync-on-commit, which is
// stricter, and the refusal is logged once. Internal topics (committed
// offsets) always fsync on commit: like Redpanda, write caching is for
// user topics.
func (r *Replica[E]) applyWriteCaching(c topicconfig.Config) {
	flush := c.WriteCachingFlush()
	if metadata.IsInternal(r.info.Topic) {
		flush = 0
	}
	r.wcMu.Lock()
	defer r.wcMu.Unlock()
	if r.wc.set && r.wc.flush == flush {
		return
	}
	took := r.rep.Group().SetWriteCaching(flush)
	r.wc.set, r.wc.flush, r.wc.cached = true, flush, took && flush > 0
	switch {
	case flush > 0 && !took && !r.wc.refusalLogged:
		r.wc.refusalLogged = true
		r.logger.Info("write caching asked for, but this partition's Raft log store always fsyncs: it stays fsync-on-commit",
			"flush", flush) // r.logger names the partition
	case took:
		r.logger.Debug("write caching set", "flush", flush)
	}
}
