package broker

import (
	"github.com/minikafka/minikafka-go/broker/coordhost"
	"github.com/minikafka/minikafka-go/broker/replicas"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// localReplica is one of the node's partition replicas, with the node's
// own state of it (coordhost.State).
type localReplica = coordhost.Replica

// PartitionGroup is the name of the Raft group of partition p of the topic
// whose id is topicID (metadata.TopicID's String form).
func PartitionGroup(topicID string, p int32) string { return replicas.PartitionGroup(topicID, p) }

// newReplicaSet makes the node's replica host, wired to the node's parts.
func (n *Node) newReplicaSet() *replicas.Set[coordhost.State] {
	c := n.cfg
	return replicas.New(n.ctx, replicas.Config{
		NodeID: c.NodeID, Dir: n.partitionsDir(), Raft: c.PartitionRaft, LogStore: c.PartitionLogStore,
		SegmentBytes: c.SegmentBytes, CacheKeepBytes: c.PageCacheKeepBytes, FS: c.PartitionFS, MaxOpenFiles: c.PartitionMaxOpenFiles,
		ProducerWindow: c.ProducerWindow, MaxProducers: c.MaxProducers, CleanerThreads: c.CleanerThreads,
		CleanerMapBytes: c.CleanerDedupeBufferSize / int64(c.CleanerThreads),
		Tuning: replicas.Tuning{ReconcileRetry: c.Tuning.ReconcileRetry, OpenParallelism: c.Tuning.OpenParallelism,
			ReassignInterval: c.Tuning.ReassignInterval, ReassignStep: c.Tuning.ReassignStep,
			Proposal: c.Tuning.ProduceEnqueue},
	}, replicas.Deps[coordhost.State]{
		Host:         n.host,
		Meta:         n.meta,
		TopicConfig:  n.TopicConfig,
		Resolve:      n.addrs.resolve,
		Attach:       coordhost.Attach,
		OnLeader:     n.coords.OnLeader,
		Admit:        n.admitBatch,
		SnapshotRoom: n.disk.Admit,
		OnFsync:      n.metrics.ObserveFsync,
		Logger:       n.logger,
	})
}
