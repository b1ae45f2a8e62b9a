package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/broker/coordhost"
	"github.com/minikafka/minikafka-go/broker/replicas"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/metrics"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/topicconfig"
)

// backend answers the Kafka front end from the node's state.
type backend struct{ n *Node }

var _ kafkaapi.Backend = (*backend)(nil)

func (b *backend) AutoCreateTopics() bool { return b.n.cfg.AutoCreateTopics }

// alive is the set of node ids gossip sees alive.
func (b *backend) alive() map[int32]bool {
	out := map[int32]bool{}
	for _, m := range b.n.members.Members() {
		out[m.ID] = true
	}
	return out
}

func (b *backend) Cluster() kafkaapi.ClusterView {
	n := b.n
	state := n.meta.State()
	alive := b.alive()
	view := kafkaapi.ClusterView{ClusterID: state.ClusterID(), ControllerID: n.meta.LeaderID()}
	for _, br := range state.Brokers() {
		// The controller is alive as far as Raft knows even when gossip
		// has not caught up; Kafka never names a controller it does not
		// list.
		if !alive[br.ID] && br.ID != view.ControllerID {
			continue
		}
		host, port, err := net.SplitHostPort(br.KafkaAddr)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		view.Brokers = append(view.Brokers, kafkaapi.Broker{NodeID: br.ID, Host: host, Port: int32(p), Endpoints: endpoints(br)})
	}
	for _, t := range state.Topics() {
		tv := kafkaapi.TopicView{Name: t.Name, ID: t.ID, Internal: metadata.IsInternal(t.Name)}
		for i, p := range t.Partitions {
			pv := kafkaapi.PartitionView{
				Partition:   int32(i),
				Leader:      p.Leader,
				LeaderEpoch: p.LeaderEpoch,
				Replicas:    slices.Clone(p.Replicas),
			}
			// A local replica knows the leader first hand.
			if lr, ok := n.reps.Get(t.Name, int32(i)); ok {
				if id, epoch, ok := lr.Partition().LeaderAndEpoch(); ok {
					pv.Leader, pv.LeaderEpoch = id, epoch
				} else {
					pv.Leader = -1
				}
			}
			if pv.Leader >= 0 && !alive[pv.Leader] {
				pv.Leader = -1
			}
			move, _ := state.Reassignment(t.Name, int32(i))
			for _, r := range p.Replicas {
				if alive[r] && !slices.Contains(move.Adding(), r) { // a replica being added is not in sync yet
					pv.ISR = append(pv.ISR, r)
				} else {
					pv.OfflineReplicas = append(pv.OfflineReplicas, r)
				}
			}
			tv.Partitions = append(tv.Partitions, pv)
		}
		view.Topics = append(view.Topics, tv)
	}
	return view
}

func (b *backend) CreateTopic(ctx context.Context, spec kafkaapi.TopicSpec, validateOnly bool) (kafkaapi.CreatedTopic, error) {
	n := b.n
	if err := n.refuseNewPartitions(); err != nil {
		return kafkaapi.CreatedTopic{}, err
	}
	parts, rf := spec.Partitions, spec.ReplicationFactor
	if parts == -1 {
		parts = n.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = n.cfg.DefaultReplicationFactor
	}
	if metadata.IsInternal(spec.Name) {
		return kafkaapi.CreatedTopic{}, fmt.Errorf("%w: %s is internal; the cluster creates it when first needed", kerr.InvalidRequest, spec.Name)
	}
	state := n.meta.State()
	cmd, err := b.placeTopic(state, spec.Name, parts, rf)
	if err != nil {
		return kafkaapi.CreatedTopic{}, err
	}
	cmd.Configs = spec.Configs
	if validateOnly {
		next, _, err := state.Apply(state.AppliedIndex()+1, cmd)
		if err != nil {
			return kafkaapi.CreatedTopic{}, fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
		}
		t, _ := next.Topic(spec.Name)
		return kafkaapi.CreatedTopic{ID: t.ID, Partitions: parts, ReplicationFactor: rf}, nil
	}
	if _, err := n.meta.Propose(ctx, cmd); err != nil {
		return kafkaapi.CreatedTopic{}, err
	}
	t, _ := n.meta.State().Topic(spec.Name)
	b.waitLeaders(ctx, spec.Name)
	return kafkaapi.CreatedTopic{ID: t.ID, Partitions: parts, ReplicationFactor: rf}, nil
}

// waitLeaders returns once every partition of topic has a leader, or
// shortly, so that a client's next Metadata finds the topic usable.
func (b *backend) waitLeaders(ctx context.Context, topic string) {
	wctx, cancel := context.WithTimeout(ctx, b.n.cfg.Tuning.TopicLeaders)
	defer cancel()
	b.n.meta.WaitFor(wctx, func(s *metadata.Snapshot) bool {
		t, ok := s.Topic(topic)
		if !ok {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
		return true
	})
}

// DeleteTopic deletes a topic through the metadata group; every node
// then removes its replicas (replicas.Set.removeDeleted), a node that is
// down when it returns.
func (b *backend) DeleteTopic(ctx context.Context, topic string) error {
	if metadata.IsInternal(topic) {
		return fmt.Errorf("%w: %s is internal and cannot be deleted", kerr.InvalidTopicException, topic)
	}
	if _, ok := b.n.meta.State().Topic(topic); !ok {
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	_, err := b.n.meta.Propose(ctx, metadata.DeleteTopic{Name: topic})
	return err
}

// CreatePartitions grows a topic, placing the new partitions' replicas on
// the live brokers as CreateTopic does. The internal topic keeps its
// partitions: groups are mapped to them by count.
func (b *backend) CreatePartitions(ctx context.Context, topic string, count int32, validateOnly bool) error {
	n := b.n
	if err := n.refuseNewPartitions(); err != nil {
		return err
	}
	if metadata.IsInternal(topic) {
		return fmt.Errorf("%w: the partitions of %s map groups to coordinators and cannot change", kerr.InvalidRequest, topic)
	}
	state := n.meta.State()
	t, ok := state.Topic(topic)
	if !ok {
		return fmt.Errorf("%w: topic %q does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	have := int32(len(t.Partitions))
	if count <= have {
		return fmt.Errorf("%w: topic %q has %d partitions; the new count must be larger", kerr.InvalidPartitions, topic, have)
	}
	if err := state.CheckPartitionLimit(topic, int(count-have), n.cfg.MaxPartitions); err != nil {
		return fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	rf := len(t.Partitions[0].Replicas)
	live := b.liveBrokers(state)
	if rf > len(live) {
		return fmt.Errorf("%w: replication factor %d is larger than the %d live brokers", kerr.InvalidReplicationFactor, rf, len(live))
	}
	assignment, err := metadata.Place(live, state.Load(), count-have, int16(rf))
	if err != nil {
		return fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
	}
	if err := state.CheckNodeReplicaLimit(topic, assignment, n.cfg.MaxNodeReplicas); err != nil {
		return fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	cmd := metadata.CreatePartitions{Topic: topic, Count: count, Assignment: assignment,
		MaxClusterPartitions: n.cfg.MaxPartitions, MaxNodeReplicas: n.cfg.MaxNodeReplicas}
	if validateOnly {
		if _, _, err := state.Apply(state.AppliedIndex()+1, cmd); err != nil {
			return fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
		}
		return nil
	}
	if _, err := n.meta.Propose(ctx, cmd); err != nil {
		return err
	}
	b.waitLeaders(ctx, topic)
	return nil
}

// placeTopic checks that a topic can be created now and places its
// replicas on the live brokers.
func (b *backend) placeTopic(state *metadata.Snapshot, name string, parts int32, rf int16) (metadata.CreateTopic, error) {
	if !state.Initialized() {
		return metadata.CreateTopic{}, fmt.Errorf("%w: the cluster is not formed yet", kerr.NotController)
	}
	if _, ok := state.Topic(name); ok {
		return metadata.CreateTopic{}, fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, name)
	}
	if err := state.CheckPartitionLimit(name, int(parts), b.n.cfg.MaxPartitions); err != nil {
		return metadata.CreateTopic{}, fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	live := b.liveBrokers(state)
	if int(rf) > len(live) {
		return metadata.CreateTopic{}, fmt.Errorf("%w: replication factor %d is larger than the %d live brokers",
			kerr.InvalidReplicationFactor, rf, len(live))
	}
	assignment, err := metadata.Place(live, state.Load(), parts, rf)
	if err != nil {
		return metadata.CreateTopic{}, fmt.Errorf("%w: %w", controller.ErrorCode(err), err)
	}
	if err := state.CheckNodeReplicaLimit(name, assignment, b.n.cfg.MaxNodeReplicas); err != nil {
		return metadata.CreateTopic{}, fmt.Errorf("%w: %w", kerr.PolicyViolation, err)
	}
	return metadata.CreateTopic{Name: name, Partitions: parts, ReplicationFactor: rf, Assignment: assignment,
		MaxClusterPartitions: b.n.cfg.MaxPartitions, MaxNodeReplicas: b.n.cfg.MaxNodeReplicas}, nil
}

// liveBrokers lists the registered brokers gossip sees alive.
func (b *backend) liveBrokers(state *metadata.Snapshot) []int32 {
	alive := b.alive()
	var live []int32
	for _, id := range state.BrokerIDs() {
		if alive[id] {
			live = append(live, id)
		}
	}
	return live
}

func (b *backend) Partition(topic string, p int32) (kafkaapi.Partition, error) {
	if lr, ok := b.n.reps.Get(topic, p); ok {
		rp := replicaPartition{r: lr.Partition(), enqueue: b.n.cfg.Tuning.ProduceEnqueue, cfg: lr.Config(), txn: lr.Extra().Verified(),
			traffic: lr.Traffic()}
		if metadata.IsInternal(topic) {
			return internalPartition{rp}, nil
		}
		return rp, nil
	}
	if _, ok := b.n.meta.State().Partition(topic, p); ok {
		return nil, fmt.Errorf("%w: node %d holds no replica of %s-%d", kerr.NotLeaderForPartition, b.n.cfg.NodeID, topic, p)
	}
	return nil, fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, p)
}

// Configs reports the node's config under Kafka's names, and ours under
// minikafka.*.
func (b *backend) Configs() []kafkaapi.ConfigEntry {
	c := b.n.cfg
	str, num, boolean := kmsg.ConfigTypeString, kmsg.ConfigTypeInt, kmsg.ConfigTypeBoolean
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []kafkaapi.ConfigEntry{
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
	}
}

// replicaPartition adapts a partition.Replica to the front end; enqueue
// bounds the wait for a slot in Raft's apply queue.
type replicaPartition struct {
	r       *partition.Replica
	enqueue time.Duration
	cfg     topicconfig.Config  // the topic's, when the partition was looked up
	txn     *coordhost.Verified // the replica's, shared by every lookup
	traffic *metrics.Traffic    // the replica's
}

var (
	_ kafkaapi.Partition = replicaPartition{}
	_ kafkaapi.Partition = internalPartition{}
)

// Fetched counts what a Fetch returned from the replica.
func (p replicaPartition) Fetched(batches []byte) { p.traffic.Fetched(batches) }

// LastStableOffset is the replica's last stable offset (transactions).
func (p replicaPartition) LastStableOffset() int64 { return p.r.LastStableOffset() }

// AbortedTxns lists the aborted transactions overlapping [from, to).
func (p replicaPartition) AbortedTxns(from, to int64) []kafkaapi.AbortedTxn {
	var out []kafkaapi.AbortedTxn
	for _, a := range p.r.AbortedTxns(from, to) {
		out = append(out, kafkaapi.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	return out
}

// WriteTxnMarker proposes a transaction marker now, in call order, and
// waits for it as Produce does; the producer's verification on the
// partition is forgotten. An internal topic's partitions take markers too
// (__consumer_offsets holds transactional offset commits).
func (p replicaPartition) WriteTxnMarker(m kafkaapi.TxnMarker) kafkaapi.ProduceWait {
	var prop *partition.Proposal
	p.txn.Marker(m.ProducerID, func() {
		prop = p.r.ProposeEndTxn(partition.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit}, p.enqueue)
	})
	return func(context.Context) (kafkaapi.ProduceResult, error) {
		res, err := prop.Wait()
		if err != nil {
			return kafkaapi.ProduceResult{}, err
		}
		if res.Err != nil {
			return kafkaapi.ProduceResult{}, res.Err
		}
		return kafkaapi.ProduceResult{BaseOffset: res.BaseOffset, LogStartOffset: res.LogStartOffset, LogAppendTime: -1}, nil
	}
}

// TxnVerified reports whether the producer's transaction is verified to
// hold the partition in this leader's term (coordhost.Verified.Check).
func (p replicaPartition) TxnVerified(producerID int64, epoch int16) (bool, kafkaapi.TxnGuard) {
	return p.txn.Check(p.r.LeaderEpoch(), producerID, epoch)
}

// ProduceVerified proposes a verified transactional batch unless a marker
// for its producer, or a new leader epoch, came after guard
// (coordhost.Verified.Produce says which error).
func (p replicaPartition) ProduceVerified(batch []byte, producerID int64, epoch int16, guard kafkaapi.TxnGuard) kafkaapi.ProduceWait {
	var wait kafkaapi.ProduceWait
	if err := p.txn.Produce(p.r.LeaderEpoch(), producerID, epoch, guard, func() { wait = p.Produce(batch) }); err != nil {
		return func(context.Context) (kafkaapi.ProduceResult, error) { return kafkaapi.ProduceResult{}, err }
	}
	return wait
}

// Settle waits until a new leader has applied its predecessors' entries
// (partition.Replica.Settle).
func (p replicaPartition) Settle(ctx context.Context) error {
	if err := p.r.Settle(ctx, p.enqueue); err != nil {
		return fmt.Errorf("%w: new leader not settled: %w", kerr.NotLeaderForPartition, err)
	}
	return nil
}

// EpochEndOffset answers OffsetForLeaderEpoch from the log's epoch index.
func (p replicaPartition) EpochEndOffset(epoch int32) (int32, int64, error) {
	return p.r.EpochEndOffset(epoch)
}

// Produce proposes the batch now, in call order. The wait does not end on
// ctx: Raft resolves every proposal, at the latest when the leader's lease
// runs out, and the answer then is the true outcome rather than a guess.
//
// A batch over the topic's max.message.bytes is MESSAGE_TOO_LARGE, as in
// Kafka; a LogAppendTime topic's batch carries this leader's clock.
func (p replicaPartition) Produce(batch []byte) kafkaapi.ProduceWait {
	if limit := p.cfg.MaxMessageBytes; limit > 0 && len(batch) > int(limit) {
		err := fmt.Errorf("%w: the batch is %d bytes, over the topic's max.message.bytes %d", kerr.MessageTooLarge, len(batch), limit)
		return func(context.Context) (kafkaapi.ProduceResult, error) { return kafkaapi.ProduceResult{}, err }
	}
	var prop *partition.Proposal
	if p.cfg.LogAppendTime {
		prop = p.r.ProposeLogAppendTime(batch, p.enqueue)
	} else {
		prop = p.r.Propose(batch, p.enqueue)
	}
	return func(ctx context.Context) (kafkaapi.ProduceResult, error) {
		res, err := prop.Wait()
		if err != nil {
			return kafkaapi.ProduceResult{}, err
		}
		if res.Err != nil {
			return kafkaapi.ProduceResult{}, res.Err
		}
		if !res.Duplicate {
			p.traffic.Produced(batch)
		}
		return kafkaapi.ProduceResult{BaseOffset: res.BaseOffset, LogStartOffset: res.LogStartOffset,
			LogAppendTime: res.LogAppendTime}, nil
	}
}

func (p replicaPartition) Read(offset int64, maxBytes int) ([]byte, error) {
	b, err := p.r.Read(offset, maxBytes)
	if errors.Is(err, seglog.ErrOffsetOutOfRange) {
		return nil, fmt.Errorf("%w: %w", kerr.OffsetOutOfRange, err)
	}
	return b, err
}

func (p replicaPartition) HighWatermark() int64     { return p.r.HighWatermark() }
func (p replicaPartition) LogStartOffset() int64    { return p.r.LogStartOffset() }
func (p replicaPartition) Changed() <-chan struct{} { return p.r.Changed() }
func (p replicaPartition) IsLeader() bool           { return p.r.IsLeader() }
func (p replicaPartition) LeaderEpoch() int32       { return p.r.LeaderEpoch() }
func (p replicaPartition) WatchChanged(seen <-chan struct{}, wake func()) (stop func()) {
	return p.r.WatchChanged(seen, wake)
}
func (p replicaPartition) OffsetForTimestamp(ts int64) (kafkaapi.TimestampOffset, bool) {
	off, maxTS, ok := p.r.OffsetForTimestamp(ts)
	return kafkaapi.TimestampOffset{Offset: off, Timestamp: maxTS, LeaderEpoch: -1}, ok
}

// MaxTimestamp answers none: the log keeps no index of its largest
// timestamp, so ListOffsets with timestamp -3 (KIP-734) gets offset -1.
func (p replicaPartition) MaxTimestamp() (kafkaapi.TimestampOffset, bool) {
	return kafkaapi.TimestampOffset{}, false
}

// internalPartition is a replica of an internal topic: clients read it, but
// only the cluster writes it (Kafka answers INVALID_TOPIC_EXCEPTION too).
type internalPartition struct{ replicaPartition }

func (p internalPartition) Produce([]byte) kafkaapi.ProduceWait {
	return func(context.Context) (kafkaapi.ProduceResult, error) {
		return kafkaapi.ProduceResult{}, fmt.Errorf("%w: clients may not write to an internal topic", kerr.InvalidTopicException)
	}
}

// ProduceVerified refuses as Produce does: the promoted method would
// propose through replicaPartition's Produce.
func (p internalPartition) ProduceVerified([]byte, int64, int16, kafkaapi.TxnGuard) kafkaapi.ProduceWait {
	return p.Produce(nil)
}

// DeleteRecords moves the log start offset up through Raft, unless the topic's cleanup.policy has no delete, as in
// Kafka.
func (p replicaPartition) DeleteRecords(ctx context.Context, offset int64) (int64, error) {
	if !slices.Contains(p.cfg.CleanupPolicy, replicas.CleanupDelete) {
		return 0, fmt.Errorf("%w: records cannot be deleted from a topic whose cleanup.policy is %v", kerr.PolicyViolation, p.cfg.CleanupPolicy)
	}
	return p.r.Trim(ctx, offset)
}

// DeleteRecords refuses: the cluster's own records are not the clients'
// to delete.
func (p internalPartition) DeleteRecords(context.Context, int64) (int64, error) {
	return 0, fmt.Errorf("%w: records of an internal topic cannot be deleted", kerr.InvalidTopicException)
}
