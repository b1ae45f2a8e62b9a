package kafkaapi

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/changes"
	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// fakeBackend is an in-memory Backend: one broker, topics whose partitions
// commit a batch the moment it is produced (or, when held, when the test
// releases them). It serves topics, configs, groups and producer ids; the
// other roles are baseBackend's.
type fakeBackend struct {
	baseBackend
	mu           sync.Mutex // guards every field below
	broker       Broker
	clusterID    string
	topics       map[string]*fakeTopic
	autoCreate   bool
	defaultParts int32
	createCalls  int
	createErr    error // returned by CreateTopic if set
	nextPID      int64
	txn          map[string]ProducerIdentity
	pidErr       error // returned by InitProducerID if set
	lastPIDReq   InitProducerIDRequest
	maxTS        bool                         // partitions answer MaxTimestamp
	epochIndex   bool                         // partitions answer EpochEndOffset by a scan, not a search
	settle       func(p *fakePartition) error // if set, partitions settle with it
	txnParts     bool                         // partitions keep transaction state and take markers
	controllerID int32
	groups       fakeGroups        // answers the group APIs
	cluster      map[string]string // cluster-wide dynamic broker defaults
	alterCalls   int
	panicTopic   string // Partition panics for this topic, if set
}

type fakeTopic struct {
	id         [16]byte
	rf         int16
	partitions []*fakePartition
	configs    map[string]string
}

var _ Backend = (*fakeBackend)(nil)

func newFakeBackend(host string, port int32) *fakeBackend {
	return &fakeBackend{
		broker:       Broker{NodeID: 1, Host: host, Port: port},
		controllerID: 1,
		clusterID:    "fake-cluster",
		topics:       make(map[string]*fakeTopic),
		defaultParts: 2,
		nextPID:      1000,
		txn:          make(map[string]ProducerIdentity),
	}
}

// addTopic creates a topic directly and returns its partitions.
func (b *fakeBackend) addTopic(name string, partitions int) []*fakePartition {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.addTopicLocked(name, int32(partitions), 1).partitions
}

func (b *fakeBackend) addTopicLocked(name string, partitions int32, rf int16) *fakeTopic {
	t := &fakeTopic{rf: rf}
	t.id[0] = byte(len(b.topics) + 1)
	t.id[15] = 0xAB
	for range partitions {
		t.partitions = append(t.partitions, newFakePartition())
	}
	b.topics[name] = t
	return t
}

func (b *fakeBackend) Cluster() ClusterView {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := ClusterView{ClusterID: b.clusterID, ControllerID: b.controllerID, Brokers: []Broker{b.broker}}
	names := make([]string, 0, len(b.topics))
	for name := range b.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := b.topics[name]
		tv := TopicView{Name: name, ID: t.id}
		for i, p := range t.partitions {
			leader, epoch := p.leaderState()
			pv := PartitionView{Partition: int32(i), Leader: -1, LeaderEpoch: epoch,
				Replicas: []int32{b.broker.NodeID}, ISR: []int32{b.broker.NodeID}}
			if leader {
				pv.Leader = b.broker.NodeID
			}
			tv.Partitions = append(tv.Partitions, pv)
		}
		v.Topics = append(v.Topics, tv)
	}
	return v
}

func (b *fakeBackend) CreateTopic(_ context.Context, spec TopicSpec, validateOnly bool) (CreatedTopic, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.createCalls++
	if b.createErr != nil {
		return CreatedTopic{}, b.createErr
	}
	if _, ok := b.topics[spec.Name]; ok {
		return CreatedTopic{}, kerr.TopicAlreadyExists
	}
	if spec.Partitions == -1 {
		spec.Partitions = b.defaultParts
	}
	if spec.ReplicationFactor == -1 {
		spec.ReplicationFactor = 1
	}
	if spec.Partitions > 1000 { // keeps the fuzzer's memory bounded
		return CreatedTopic{}, kerr.InvalidPartitions
	}
	if spec.ReplicationFactor > 1 { // one broker
		return CreatedTopic{}, kerr.InvalidReplicationFactor
	}
	if validateOnly {
		return CreatedTopic{Partitions: spec.Partitions, ReplicationFactor: spec.ReplicationFactor}, nil
	}
	t := b.addTopicLocked(spec.Name, spec.Partitions, spec.ReplicationFactor)
	t.configs = maps.Clone(spec.Configs)
	return CreatedTopic{ID: t.id, Partitions: spec.Partitions, ReplicationFactor: spec.ReplicationFactor}, nil
}

func (b *fakeBackend) TopicConfigs(topic string) (map[string]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[topic]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	return maps.Clone(t.configs), nil
}

func (b *fakeBackend) ClusterConfigs() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.cluster)
}

func (b *fakeBackend) AlterTopicConfigs(_ context.Context, topic string, configs map[string]string, validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alterCalls++
	t, ok := b.topics[topic]
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	if !validateOnly {
		t.configs = maps.Clone(configs)
	}
	return nil
}

func (b *fakeBackend) AlterClusterConfigs(_ context.Context, configs map[string]string, validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alterCalls++
	if !validateOnly {
		b.cluster = maps.Clone(configs)
	}
	return nil
}

func (b *fakeBackend) AutoCreateTopics() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.autoCreate
}

func (b *fakeBackend) Partition(topic string, partition int32) (Partition, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panicTopic != "" && topic == b.panicTopic {
		panic("fakeBackend: injected panic for topic " + topic)
	}
	t, ok := b.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.partitions) {
		return nil, kerr.UnknownTopicOrPartition
	}
	if b.maxTS {
		return maxTSPartition{t.partitions[partition]}, nil
	}
	if b.epochIndex {
		return epochIndexPartition{t.partitions[partition]}, nil
	}
	if b.settle != nil {
		return settlingPartition{t.partitions[partition], b.settle}, nil
	}
	if b.txnParts {
		return txnPartition{t.partitions[partition]}, nil
	}
	return t.partitions[partition], nil
}

func (b *fakeBackend) Configs() []ConfigEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return []ConfigEntry{
		{Name: "broker.id", Value: strconv.Itoa(int(b.broker.NodeID)), Type: kmsg.ConfigTypeInt, Doc: "The node id."},
		{Name: "log.segment.bytes", Value: "1048576", Type: kmsg.ConfigTypeInt},
		{Name: "minikafka.producer.window", Value: "5", Type: kmsg.ConfigTypeInt},
	}
}

func (b *fakeBackend) InitProducerID(_ context.Context, req InitProducerIDRequest) (ProducerIdentity, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastPIDReq = req
	if b.pidErr != nil {
		return ProducerIdentity{}, b.pidErr
	}
	if req.TransactionalID != nil {
		id, ok := b.txn[*req.TransactionalID]
		if ok {
			id.Epoch++
		} else {
			id = ProducerIdentity{ID: b.nextPID}
			b.nextPID++
		}
		b.txn[*req.TransactionalID] = id
		return id, nil
	}
	id := ProducerIdentity{ID: b.nextPID}
	b.nextPID++
	return id, nil
}

func (b *fakeBackend) set(f func(b *fakeBackend)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

func (b *fakeBackend) createCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.createCalls
}

func (b *fakeBackend) hasTopic(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.topics[name]
	return ok
}

// fakePartition is an in-memory partition log. The wrappers below add
// what a test switches on (fakeBackend's flags); the rest is
// basePartition's.
type fakePartition struct {
	basePartition
	mu           sync.Mutex // guards every field below
	log          [][]byte   // committed batches, base offsets assigned
	hw           int64
	start        int64
	changed      changes.Signal // fired when hw moves
	leader       bool
	epoch        int32
	hold         bool           // Produce queues instead of committing
	held         []*fakeProduce // queued proposals, in Produce order
	produced     int            // Produce calls
	changedCalls int            // Changed calls
	failNext     error          // the next Produce's outcome, if set
	onProduce    func()         // called by Produce after queueing, without mu
	// txns is the producer table of the committed batches: the
	// transaction state txnPartition answers from.
	txns *producerstate.Table
}

type fakeProduce struct {
	batch []byte
	done  chan struct{} // closed when res/err are set
	res   ProduceResult
	err   error
}

var _ Partition = (*fakePartition)(nil)

func newFakePartition() *fakePartition {
	return &fakePartition{leader: true, epoch: 5, txns: producerstate.New(0)}
}

func (p *fakePartition) Produce(batch []byte) ProduceWait {
	fp := &fakeProduce{batch: batch, done: make(chan struct{})}
	p.mu.Lock()
	p.produced++
	hook := p.onProduce
	switch {
	case p.failNext != nil:
		fp.err = p.failNext
		p.failNext = nil
		close(fp.done)
	case p.hold:
		p.held = append(p.held, fp)
	default:
		p.commitLocked(fp)
	}
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	return func(ctx context.Context) (ProduceResult, error) {
		select {
		case <-fp.done: // a known outcome wins over an expired context
			return fp.res, fp.err
		default:
		}
		select {
		case <-fp.done:
			return fp.res, fp.err
		case <-ctx.Done():
			return ProduceResult{}, ctx.Err()
		}
	}
}

func (p *fakePartition) commitLocked(fp *fakeProduce) {
	h, err := record.ParseHeader(fp.batch)
	if err != nil {
		fp.err = err
		close(fp.done)
		return
	}
	record.SetBaseOffset(fp.batch, p.hw)
	record.SetLeaderEpoch(fp.batch, p.epoch)
	h.BaseOffset = p.hw
	p.txns.Record(h)
	p.log = append(p.log, fp.batch)
	fp.res = ProduceResult{BaseOffset: p.hw, LogStartOffset: p.start}
	p.hw += int64(h.Count())
	p.changed.Fire()
	close(fp.done)
}

// append commits a batch directly, as if produced; it returns the base offset.
func (p *fakePartition) append(batch []byte) int64 {
	fp := &fakeProduce{batch: batch, done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commitLocked(fp)
	return fp.res.BaseOffset
}

// release commits the held proposals in order and stops holding.
func (p *fakePartition) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fp := range p.held {
		p.commitLocked(fp)
	}
	p.held = nil
	p.hold = false
}

func (p *fakePartition) Read(offset int64, maxBytes int) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset < p.start || offset > p.hw {
		return nil, kerr.OffsetOutOfRange
	}
	var out []byte
	for _, b := range p.log {
		h, _ := record.ParseHeader(b)
		if h.LastOffset() < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

func (p *fakePartition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hw
}

func (p *fakePartition) LogStartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start
}

func (p *fakePartition) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.changedCalls++
	return p.changed.C()
}

func (p *fakePartition) WatchChanged(seen <-chan struct{}, wake func()) (stop func()) {
	return p.changed.Watch(seen, wake)
}

func (p *fakePartition) OffsetForTimestamp(ts int64) (TimestampOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.log {
		h, _ := record.ParseHeader(b)
		if h.MaxTimestamp >= ts {
			return TimestampOffset{Offset: h.BaseOffset, Timestamp: h.MaxTimestamp, LeaderEpoch: h.PartitionLeaderEpoch}, true
		}
	}
	return TimestampOffset{}, false
}

func (p *fakePartition) IsLeader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

func (p *fakePartition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// EpochEndOffset answers by a binary search over the batch headers (the
// epochIndex flag answers by a scan instead).
func (p *fakePartition) EpochEndOffset(epoch int32) (int32, int64, error) {
	return searchEpochEnd(p, epoch, p.LogStartOffset(), p.HighWatermark())
}

// searchEpochEnd answers what Partition.EpochEndOffset does by a binary
// search over the batch headers in [start, hw), whose leader epochs (Raft
// terms) never decrease along the log: O(log n) reads of one batch each.
func searchEpochEnd(p Partition, epoch int32, start, hw int64) (int32, int64, error) {
	// Batches before lo carry epochs <= epoch, batches from hi on larger
	// ones; both are batch boundaries.
	lo, hi := start, hw
	for lo < hi {
		h, err := batchAt(p, lo+(hi-lo)/2)
		if err != nil {
			return -1, -1, err
		}
		if h.PartitionLeaderEpoch > epoch {
			hi = max(h.BaseOffset, lo) // lo is inside a batch only at the log start
		} else {
			lo = h.NextOffset()
		}
	}
	if lo == start {
		return -1, lo, nil
	}
	h, err := batchAt(p, lo-1)
	if err != nil {
		return -1, -1, err
	}
	return h.PartitionLeaderEpoch, lo, nil
}

// ProduceVerified produces as Produce: the fake remembers no
// verification (TxnVerified is basePartition's false).
func (p *fakePartition) ProduceVerified(batch []byte, _ int64, _ int16, _ TxnGuard) ProduceWait {
	return p.Produce(batch)
}

func (p *fakePartition) leaderState() (bool, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader, p.epoch
}

func (p *fakePartition) produceCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produced
}

func (p *fakePartition) heldCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

func (p *fakePartition) changedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changedCalls
}

func (p *fakePartition) batches() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

func (p *fakePartition) set(f func(p *fakePartition)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// maxTSPartition answers MaxTimestamp.
type maxTSPartition struct{ *fakePartition }

func (p maxTSPartition) MaxTimestamp() (TimestampOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best TimestampOffset
	found := false
	for _, b := range p.log {
		h, _ := record.ParseHeader(b)
		if !found || h.MaxTimestamp > best.Timestamp {
			best = TimestampOffset{Offset: h.LastOffset(), Timestamp: h.MaxTimestamp, LeaderEpoch: h.PartitionLeaderEpoch}
			found = true
		}
	}
	return best, found
}

// epochIndexPartition answers EpochEndOffset by a scan of every batch.
type epochIndexPartition struct{ *fakePartition }

func (p epochIndexPartition) EpochEndOffset(epoch int32) (int32, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	floor := int32(-1)
	for _, b := range p.log {
		h, _ := record.ParseHeader(b)
		if h.NextOffset() <= p.start {
			continue
		}
		if h.PartitionLeaderEpoch > epoch {
			return floor, h.BaseOffset, nil
		}
		floor = h.PartitionLeaderEpoch
	}
	return floor, p.hw, nil
}

// settlingPartition settles with its function.
type settlingPartition struct {
	*fakePartition
	settle func(p *fakePartition) error
}

func (p settlingPartition) Settle(context.Context) error { return p.settle(p.fakePartition) }
