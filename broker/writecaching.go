package broker

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

// applyWriteCaching gives lr's Raft group the flush interval that c asks
// for, when it differs from the last one. A store that always fsyncs
// refuses; the partition then stays fsync-on-commit, which is stricter,
// and the refusal is logged once. Internal topics (committed offsets)
// always fsync on commit: like Redpanda, write caching is for user topics.
func (lr *localReplica) applyWriteCaching(c topicconfig.Config) {
	flush := c.WriteCachingFlush()
	if metadata.IsInternal(lr.info.Topic) {
		flush = 0
	}
	lr.wcMu.Lock()
	defer lr.wcMu.Unlock()
	if lr.wc.set && lr.wc.flush == flush {
		return
	}
	took := lr.rep.Group().SetWriteCaching(flush)
	lr.wc.set, lr.wc.flush, lr.wc.cached = true, flush, took && flush > 0
	switch {
	case flush > 0 && !took && !lr.wc.refusalLogged:
		lr.wc.refusalLogged = true
		lr.logger.Info("write caching asked for, but this partition's Raft log store always fsyncs: it stays fsync-on-commit",
			"flush", flush) // lr.logger names the partition
	case took:
		lr.logger.Debug("write caching set", "flush", flush)
	}
}
