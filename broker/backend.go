package broker

import (
	"time"

	"github.com/minikafka/minikafka-go/broker/kafkabackend"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// backendConfig is the Kafka backend's part of the node's config.
func (n *Node) backendConfig() kafkabackend.Config {
	c := n.cfg
	return kafkabackend.Config{
		NodeID: c.NodeID, KafkaAddr: c.KafkaAddr, AdvertisedKafkaAddr: c.AdvertisedKafkaAddr,
		AdvertisedRaftAddr: c.AdvertisedRaftAddr, AdvertisedGossip: c.AdvertisedGossip, DataDir: c.DataDir,
		BootstrapExpect: c.BootstrapExpect,

		DefaultPartitions: c.DefaultPartitions, DefaultReplicationFactor: c.DefaultReplicationFactor,
		AutoCreateTopics: c.AutoCreateTopics, MaxPartitions: c.MaxPartitions, MaxNodeReplicas: c.MaxNodeReplicas,
		OffsetsTopicPartitions: c.OffsetsTopicPartitions, OffsetsTopicReplicationFactor: c.OffsetsTopicReplicationFactor,
		TxnTopicPartitions: c.TxnTopicPartitions, TxnTopicReplicationFactor: c.TxnTopicReplicationFactor,
		CleanInternalTopics: c.CleanInternalTopics,

		AuthorizationEnabled: c.AuthorizationEnabled, SuperUsers: c.SuperUsers,
		AllowEveryoneIfNoACLFound: c.AllowEveryoneIfNoACLFound,

		LeaderRebalanceInterval: c.LeaderRebalanceInterval, SegmentBytes: c.SegmentBytes,
		LogRetentionMs: c.LogRetentionMs, LogRetentionBytes: c.LogRetentionBytes,
		RetentionCheckInterval: c.RetentionCheckInterval, ProducerIDExpirationMs: c.ProducerIDExpirationMs,
		ProducerExpirationCheckInterval: c.ProducerExpirationCheckInterval,
		OffsetsRetention:                c.OffsetsRetention, OffsetsRetentionCheckInterval: c.OffsetsRetentionCheckInterval,
		TransactionalIDExpirationMs: c.TransactionalIDExpirationMs, TxnRemoveExpiredInterval: c.TxnRemoveExpiredInterval,
		MaxRequestBytes: c.MaxRequestBytes, MessageMaxBytes: c.MessageMaxBytes,
		TxnPartitionVerification: c.TxnPartitionVerification, WriteCachingDefault: c.WriteCachingDefault,
		LogFlushIntervalMs: c.LogFlushIntervalMs, ProducerWindow: c.ProducerWindow,

		TopicLeaders: c.Tuning.TopicLeaders, ProduceEnqueue: c.Tuning.ProduceEnqueue, MetaProposal: c.Tuning.MetaProposal,
		ReplicaLagMax: c.Tuning.ReplicaLagMax,
		Tokens:        c.tokensConfig(),
		Share:         c.ShareGroups,
	}
}

// newBackend makes the node's Kafka backend, wired to the node's parts.
// It runs once the metadata copy, gossip and the coordinators exist, and
// after listen, so that it reports the bound addresses.
func (n *Node) newBackend() *kafkabackend.Backend {
	return kafkabackend.New(n.backendConfig(), kafkabackend.Deps{
		Meta:                n.meta,
		Members:             n.members.Members,
		DownSince:           n.down.of,
		PartitionLeader:     n.PartitionLeader,
		Coordinators:        n.coords,
		Shares:              n.coords,
		Replica:             n.backendReplica,
		Configs:             n.configs,
		RefuseNewPartitions: n.refuseNewPartitions,
		DirtyRatios:         n.dirtyRatios,
		LogDirs:             n.logDirs,
	})
}

// dirtyRatios are the dirty ratios of the partitions of compacted topics
// this node leads.
func (n *Node) dirtyRatios() []kafkabackend.DirtyRatio {
	now := time.Now()
	var out []kafkabackend.DirtyRatio
	for _, r := range n.reps.Led() {
		if ratio, ok := r.DirtyRatio(now, n.cfg.CleanInternalTopics); ok {
			topic, p := r.TopicPartition()
			out = append(out, kafkabackend.DirtyRatio{Topic: topic, Partition: p, Ratio: ratio})
		}
	}
	return out
}

// TopicConfig is a topic's resolved configs as the node should act on
// them (kafkabackend.Resolver.Topic).
func (n *Node) TopicConfig(topic string) topicconfig.Config { return n.configs.Topic(topic) }

// ProducerIDExpiration is producer.id.expiration.ms: how long a producer
// id's state may stay idle before it may be expired.
func (n *Node) ProducerIDExpiration() time.Duration { return n.configs.ProducerIDExpiration() }

// clusterConfigs are the cluster-wide dynamic broker defaults.
func (n *Node) clusterConfigs() map[string]string { return n.configs.Cluster() }
