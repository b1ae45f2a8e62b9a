package broker

import (
	"context"
	"time"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition/compact"
	"github.com/minikafka/minikafka-go/record"
)

// WriteCaching reports the write-caching flush interval this node last
// gave its replica of topic/p's Raft group (0: fsync on commit) and
// whether the group took it (never, on a store that always fsyncs); ok is
// false when the node holds no such replica or has not set it yet.
func (n *Node) WriteCaching(topic string, p int32) (flush time.Duration, cached, ok bool) {
	lr, ok := n.reps.Get(topic, p)
	if !ok {
		return 0, false, false
	}
	return lr.WriteCaching()
}

// VerifyTxn asks, as this node would for a transactional batch, the
// coordinator of id whether topic/p is in producer pid's transaction.
func (n *Node) VerifyTxn(ctx context.Context, id string, pid int64, epoch int16, topic string, p int32) error {
	return n.backend.VerifyTxnPartitions(ctx, id, pid, epoch, []kafkaapi.TopicPartition{{Topic: topic, Partition: p}})[0]
}

// ReplicaLog returns this node's copy of topic/p's log below its high
// watermark, as stored batches, and that high watermark; ok is false when
// the node holds no such replica.
func (n *Node) ReplicaLog(topic string, p int32) (log []byte, hw int64, ok bool) {
	lr, ok := n.reps.Get(topic, p)
	if !ok {
		return nil, 0, false
	}
	hw = lr.Partition().HighWatermark()
	for off := int64(0); off < hw; {
		b, err := lr.Partition().Read(off, 1<<20)
		if err != nil || len(b) == 0 {
			return nil, 0, false
		}
		for rest := b; len(rest) > 0 && off < hw; {
			batch, r, h, err := record.Next(rest)
			if err != nil {
				return nil, 0, false
			}
			log, off, rest = append(log, batch...), h.NextOffset(), r
		}
	}
	return log, hw, true
}

// HasReplica reports whether this node runs a replica of topic/p.
func (n *Node) HasReplica(topic string, p int32) bool {
	_, ok := n.reps.Get(topic, p)
	return ok
}

// ACLCount is the number of ACL bindings in this node's metadata copy.
func (n *Node) ACLCount() int { return n.meta.State().ACLs().Len() }

// MetadataState is this node's copy of the cluster metadata.
func (n *Node) MetadataState() *metadata.Snapshot { return n.meta.State() }

// TokensEnabled reports whether a node with c serves delegation tokens.
func TokensEnabled(c *Config) bool { return c.tokensConfig().Enabled }

// MetadataLeader is the metadata group's leader as this node knows it, or
// -1.
func (n *Node) MetadataLeader() int32 { return n.meta.LeaderID() }

// MetaAppliedIndex is the metadata replica's applied index.
func (n *Node) MetaAppliedIndex() uint64 { return n.meta.Replication().AppliedIndex }

// ReplicaCleanings is how many cleanings this node's replica of topic/p
// has run since it started, and what they did.
func (n *Node) ReplicaCleanings(topic string, p int32) (int, compact.Stats) {
	lr, ok := n.reps.Get(topic, p)
	if !ok {
		return 0, compact.Stats{}
	}
	return lr.Partition().Cleanings()
}

// GossipCleanerBuild makes this node gossip a build that cleans dirty
// parts (this one) or, with dirtyPart false, an older one.
func (n *Node) GossipCleanerBuild(ctx context.Context, dirtyPart bool) error {
	meta := n.members.Local()
	meta.CleansDirtyPart = dirtyPart
	return n.members.UpdateMeta(ctx, meta)
}

// OlderCleaners are the other nodes this node has last seen gossip a
// build that refuses the cleanings of a dirty part.
func (n *Node) OlderCleaners() []int32 { return n.olderCleaners.list() }
