package kafkabackend

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/broker/replicas"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// TopicConfigs returns a topic's overrides from the local metadata view.
// The internal topics are compacted (as Kafka creates them, with
// cleanup.policy=compact) unless the node is told not to clean them.
func (b *Backend) TopicConfigs(topic string) (map[string]string, error) {
	state := b.deps.Meta.State()
	if _, ok := state.TopicID(topic); !ok {
		return nil, fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	configs := state.TopicConfigs(topic) // a copy, without the partitions
	if metadata.IsInternal(topic) && b.cfg.CleanInternalTopics {
		if configs == nil {
			configs = map[string]string{}
		}
		configs["cleanup.policy"] = replicas.CleanupCompact
	}
	return configs, nil
}

// ClusterConfigs returns the cluster-wide dynamic broker defaults from the
// local metadata view.
func (b *Backend) ClusterConfigs() map[string]string { return b.deps.Configs.Cluster() }

// AlterTopicConfigs replaces a topic's overrides through the metadata
// group, which validates them again at their log position.
func (b *Backend) AlterTopicConfigs(ctx context.Context, topic string, configs map[string]string, validateOnly bool) error {
	return b.checkAndPropose(ctx, metadata.AlterConfigs{Resource: metadata.ConfigTopic, Topic: topic, Configs: configs}, validateOnly)
}

// AlterClusterConfigs replaces the cluster-wide dynamic broker defaults
// through the metadata group.
func (b *Backend) AlterClusterConfigs(ctx context.Context, configs map[string]string, validateOnly bool) error {
	return b.checkAndPropose(ctx, metadata.AlterConfigs{Resource: metadata.ConfigClusterDefaults, Configs: configs}, validateOnly)
}

// checkAndPropose checks cmd against the current state (all validateOnly
// does) and proposes it; the metadata leader may be another node.
func (b *Backend) checkAndPropose(ctx context.Context, cmd metadata.Command, validateOnly bool) error {
	state := b.deps.Meta.State()
	if !state.Initialized() {
		return fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	if _, _, err := state.Apply(state.AppliedIndex()+1, cmd); err != nil {
		return fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
	}
	if validateOnly {
		return nil
	}
	_, err := b.deps.Meta.Propose(ctx, cmd)
	return err
}

// Configs reports the node's config under Kafka's names, and ours under
// minikafka.*.
func (b *Backend) Configs() []kafkaapi.ConfigEntry { return configEntries(b.cfg) }

// StaticConfigs are the node's static configs by their Kafka names, as
// DescribeConfigs reports them (Backend.Configs); they are the last
// fallback of a Resolver.
func StaticConfigs(c Config) map[string]string {
	m := make(map[string]string)
	for _, e := range configEntries(c) {
		m[e.Name] = e.Value
	}
	return m
}

// NodeCapacityConfig is the broker config (DescribeConfigs of a broker)
// that reports max_partition_replicas_per_node.
const NodeCapacityConfig = "minikafka.max.partition.replicas.per.node"

// DirtyRatiosConfig is the read-only broker config (DescribeConfigs of a
// broker) that reports the dirty ratio of each partition of a compacted
// topic the node leads, as topic:partition=ratio, comma-separated.
const DirtyRatiosConfig = "minikafka.log.cleaner.dirty.ratios"

// BrokersDownConfig is the read-only broker config that lists the
// registered brokers the node sees down, as id=since (RFC 3339, UTC),
// comma-separated, by id.
const BrokersDownConfig = "minikafka.brokers.down"

// DirtyRatio is the dirty ratio of a partition the node leads
// (replicas.Replica.DirtyRatio).
type DirtyRatio struct {
	Topic     string
	Partition int32
	Ratio     float64
}

var _ kafkaapi.NodeStatus = (*Backend)(nil)

// StatusConfigs reports the node's figures that change as it runs:
// DirtyRatiosConfig, sorted by topic then partition, ratios to three
// decimals (topic names hold neither ':' nor ',' nor '='), and
// BrokersDownConfig.
func (b *Backend) StatusConfigs() []kafkaapi.ConfigEntry {
	return []kafkaapi.ConfigEntry{b.dirtyRatios(), b.brokersDown()}
}

// brokersDown is the BrokersDownConfig entry.
func (b *Backend) brokersDown() kafkaapi.ConfigEntry {
	var down []kafkaapi.DownBroker
	if b.deps.Meta != nil { // without a metadata copy, no broker is registered
		down = b.downBrokers(b.deps.Meta.State(), b.alive())
	}
	slices.SortFunc(down, func(x, y kafkaapi.DownBroker) int { return cmp.Compare(x.NodeID, y.NodeID) })
	parts := make([]string, len(down))
	for i, d := range down {
		parts[i] = fmt.Sprintf("%d=%s", d.NodeID, d.Since.UTC().Format(time.RFC3339))
	}
	return kafkaapi.ConfigEntry{Name: BrokersDownConfig, Value: strings.Join(parts, ","), Type: kmsg.ConfigTypeList,
		Doc: "Registered brokers this node sees down (gossip), with since when (id=RFC 3339 time)."}
}

// dirtyRatios is the DirtyRatiosConfig entry.
func (b *Backend) dirtyRatios() kafkaapi.ConfigEntry {
	var ratios []DirtyRatio
	if b.deps.DirtyRatios != nil {
		ratios = b.deps.DirtyRatios()
	}
	slices.SortFunc(ratios, func(x, y DirtyRatio) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%s:%d=%.3f", r.Topic, r.Partition, r.Ratio)
	}
	return kafkaapi.ConfigEntry{Name: DirtyRatiosConfig, Value: strings.Join(parts, ","), Type: kmsg.ConfigTypeList,
		Doc: "Dirty ratio of each partition of a compacted topic this node leads, as its cleaner weighs it now (topic:partition=ratio)."}
}

// configEntries are c under Kafka's names, and ours under minikafka.*.
func configEntries(c Config) []kafkaapi.ConfigEntry {
	str, num, boolean := kmsg.ConfigTypeString, kmsg.ConfigTypeInt, kmsg.ConfigTypeBoolean
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	return append([]kafkaapi.ConfigEntry{
		{Name: "broker.id", Value: itoa(int64(c.NodeID)), Type: num},
		{Name: "node.id", Value: itoa(int64(c.NodeID)), Type: num},
		{Name: "listeners", Value: "PLAINTEXT://" + c.KafkaAddr, Type: kmsg.ConfigTypeList},
		{Name: "advertised.listeners", Value: "PLAINTEXT://" + c.AdvertisedKafkaAddr, Type: kmsg.ConfigTypeList},
		{Name: "log.dirs", Value: c.DataDir, Type: str},
		{Name: "num.partitions", Value: itoa(int64(c.DefaultPartitions)), Type: num},
		{Name: "default.replication.factor", Value: itoa(int64(c.DefaultReplicationFactor)), Type: num},
		{Name: "auto.create.topics.enable", Value: strconv.FormatBool(c.AutoCreateTopics), Type: boolean},
		{Name: "auto.leader.rebalance.enable", Value: strconv.FormatBool(c.LeaderRebalanceInterval > 0), Type: boolean},
		{Name: "leader.imbalance.check.interval.seconds", Value: itoa(int64(c.LeaderRebalanceInterval.Seconds())), Type: kmsg.ConfigTypeLong},
		{Name: "log.segment.bytes", Value: itoa(c.SegmentBytes), Type: num},
		{Name: "log.retention.ms", Value: itoa(c.LogRetentionMs), Type: kmsg.ConfigTypeLong},
		{Name: "log.retention.bytes", Value: itoa(c.LogRetentionBytes), Type: kmsg.ConfigTypeLong},
		{Name: "log.retention.check.interval.ms", Value: itoa(c.RetentionCheckInterval.Milliseconds()), Type: kmsg.ConfigTypeLong},
		{Name: "producer.id.expiration.ms", Value: itoa(c.ProducerIDExpirationMs), Type: num},
		{Name: "producer.id.expiration.check.interval.ms", Value: itoa(c.ProducerExpirationCheckInterval.Milliseconds()), Type: num},
		{Name: "offsets.retention.minutes", Value: itoa(int64(c.OffsetsRetention / time.Minute)), Type: num},
		{Name: "offsets.retention.check.interval.ms", Value: itoa(c.OffsetsRetentionCheckInterval.Milliseconds()), Type: kmsg.ConfigTypeLong},
		{Name: "transactional.id.expiration.ms", Value: itoa(c.TransactionalIDExpirationMs), Type: num},
		{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Value: itoa(c.TxnRemoveExpiredInterval.Milliseconds()), Type: num},
		{Name: "socket.request.max.bytes", Value: itoa(int64(c.MaxRequestBytes)), Type: num},
		{Name: "message.max.bytes", Value: itoa(int64(c.MessageMaxBytes)), Type: num},
		{Name: "transaction.partition.verification.enable", Value: strconv.FormatBool(c.TxnPartitionVerification), Type: boolean},
		{Name: topicconfig.WriteCachingDefault, Value: strconv.FormatBool(c.WriteCachingDefault), Type: boolean},
		{Name: "log.flush.interval.ms", Value: itoa(c.LogFlushIntervalMs), Type: kmsg.ConfigTypeLong},
		{Name: "minikafka.raft.addr", Value: c.AdvertisedRaftAddr, Type: str},
		{Name: "minikafka.gossip.addr", Value: c.AdvertisedGossip, Type: str},
		{Name: "minikafka.bootstrap.expect", Value: itoa(int64(c.BootstrapExpect)), Type: num},
		{Name: "minikafka.producer.window", Value: itoa(int64(c.ProducerWindow)), Type: num},
		{Name: "minikafka.max.partitions", Value: itoa(int64(c.MaxPartitions)), Type: num},
		{Name: NodeCapacityConfig, Value: itoa(int64(c.MaxNodeReplicas)), Type: num},
	}, shareConfigEntries(c.Share)...)
}
