package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerMeta is a broker as metadata describes it.
type brokerMeta struct {
	id   int32
	host string
	port int32
	rack *string
}

func (b brokerMeta) addr() string { return net.JoinHostPort(b.host, strconv.Itoa(int(b.port))) }

// partMeta is a partition as metadata describes it.
type partMeta struct {
	leader                 int32 // -1 when there is none
	epoch                  int32 // leader epoch, -1 when unknown
	replicas, isr, offline []int32
	err                    error
}

// topicMeta is a topic as metadata describes it.
type topicMeta struct {
	id         [16]byte
	internal   bool
	partitions []partMeta // indexed by partition number
	err        error      // topic-level error (e.g. UNKNOWN_TOPIC_OR_PARTITION)
}

// cluster is what one client knows of the cluster: brokers, topic
// metadata, and one connection per broker. A background goroutine
// refreshes metadata when asked (trigger), at most once per RetryBackoff,
// and every MetadataMaxAge.
type cluster struct {
	cfg    *config
	log    *slog.Logger
	ctx    context.Context // ends dials and the refresh loop on close
	cancel context.CancelFunc

	mu         sync.Mutex // guards the fields below
	brokers    map[int32]brokerMeta
	controller int32
	clusterID  *string
	conns      map[connKey]*conn // current connections; seeds use node -1-i
	all        []*conn           // every connection whose goroutines may still run
	topics     map[string]*topicMeta
	interest   map[string]bool // topics every refresh asks for
	gen        int             // completed refreshes
	refreshing bool
	refreshErr error         // of the last refresh
	updated    chan struct{} // closed (and replaced) when a refresh completes
	closed     bool
	listeners  []func()
	rotate     int // where requestAny starts, so that failures spread
	// mostBrokers is the most brokers a Metadata answer listed: fewer now
	// means the last answer came from a broker that sees only part of the
	// cluster (cut off by a network partition), so requestAny asks the
	// seeds in turn with the brokers it lists.
	mostBrokers int

	trigger chan struct{} // capacity 1: please refresh soon
	wg      sync.WaitGroup
}

func newCluster(cfg *config) *cluster {
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{
		cfg: cfg, log: cfg.logger, ctx: ctx, cancel: cancel,
		brokers:    map[int32]brokerMeta{},
		controller: -1,
		conns:      map[connKey]*conn{},
		topics:     map[string]*topicMeta{},
		interest:   map[string]bool{},
		updated:    make(chan struct{}),
		trigger:    make(chan struct{}, 1),
	}
	c.wg.Add(1)
	go c.refreshLoop()
	return c
}

// close stops the refresh loop and closes every connection.
func (c *cluster) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	conns := c.all
	c.mu.Unlock()
	c.cancel()
	for _, cn := range conns {
		cn.close()
	}
	c.wg.Wait()
}

// onUpdate registers fn to run after every metadata refresh.
func (c *cluster) onUpdate(fn func()) {
	c.mu.Lock()
	c.listeners = append(c.listeners, fn)
	c.mu.Unlock()
}

// triggerRefresh asks for a metadata refresh soon, without waiting.
func (c *cluster) triggerRefresh() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// addInterest makes refreshes include the topics, and triggers one if a
// topic is new.
func (c *cluster) addInterest(topics ...string) {
	c.mu.Lock()
	added := false
	for _, t := range topics {
		if !c.interest[t] {
			c.interest[t] = true
			added = true
		}
	}
	c.mu.Unlock()
	if added {
		c.triggerRefresh()
	}
}

func (c *cluster) refreshLoop() {
	defer c.wg.Done()
	maxAge := time.NewTimer(c.cfg.metadataMaxAge)
	defer maxAge.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.trigger:
		case <-maxAge.C:
		}
		c.refresh()
		maxAge.Reset(c.cfg.metadataMaxAge)
		// Rate limit: a storm of NOT_LEADER answers asks for a refresh
		// each; one per backoff is enough.
		wait := time.NewTimer(c.cfg.retryBackoff)
		select {
		case <-c.ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
	}
}

// refresh asks one broker for the brokers and the interesting topics.
func (c *cluster) refresh() {
	c.mu.Lock()
	topics := make([]string, 0, len(c.interest))
	for t := range c.interest {
		topics = append(topics, t)
	}
	c.refreshing = true
	c.mu.Unlock()
	slices.Sort(topics)

	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.requestTimeout)
	resp, err := c.requestAny(ctx, req)
	cancel()

	c.mu.Lock()
	if err == nil {
		c.applyMetadataLocked(resp.(*kmsg.MetadataResponse))
	} else {
		c.log.Debug("metadata refresh failed", "err", err)
	}
	c.refreshErr = err
	c.refreshing = false
	c.gen++
	close(c.updated)
	c.updated = make(chan struct{})
	listeners := slices.Clone(c.listeners)
	c.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
}

// applyMetadataLocked merges a metadata response. A partition whose cached
// leader epoch is newer than the response's keeps the cached entry: the
// answering broker was behind (KIP-320). Called with c.mu.
func (c *cluster) applyMetadataLocked(resp *kmsg.MetadataResponse) {
	if len(resp.Brokers) > 0 {
		c.mostBrokers = max(c.mostBrokers, len(resp.Brokers))
		brokers := make(map[int32]brokerMeta, len(resp.Brokers))
		for _, b := range resp.Brokers {
			brokers[b.NodeID] = brokerMeta{id: b.NodeID, host: b.Host, port: b.Port, rack: b.Rack}
		}
		c.brokers = brokers
	}
	c.controller = resp.ControllerID
	c.clusterID = resp.ClusterID
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		name := *rt.Topic
		tm := &topicMeta{id: rt.TopicID, internal: rt.IsInternal, err: kafkaErr(rt.ErrorCode, nil)}
		if tm.err == nil {
			n := int32(0)
			for _, p := range rt.Partitions {
				n = max(n, p.Partition+1)
			}
			tm.partitions = make([]partMeta, n)
			for i := range tm.partitions {
				tm.partitions[i] = partMeta{leader: -1, epoch: -1, err: ErrLeaderNotAvailable}
			}
			old := c.topics[name]
			for _, p := range rt.Partitions {
				pm := partMeta{
					leader: p.Leader, epoch: p.LeaderEpoch,
					replicas: p.Replicas, isr: p.ISR, offline: p.OfflineReplicas,
					err: kafkaErr(p.ErrorCode, nil),
				}
				if old != nil && int(p.Partition) < len(old.partitions) {
					if prev := old.partitions[p.Partition]; prev.err == nil && prev.epoch > pm.epoch {
						pm = prev
					}
				}
				tm.partitions[p.Partition] = pm
			}
		}
		c.topics[name] = tm
	}
}

// waitRefresh triggers a refresh and waits for one that started after the
// call to complete; it returns that refresh's error.
func (c *cluster) waitRefresh(ctx context.Context) error {
	c.mu.Lock()
	target := c.gen + 1
	if c.refreshing {
		target++ // the one running may have started before our interest
	}
	ch := c.updated
	c.mu.Unlock()
	c.triggerRefresh()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return ErrClosed
		case <-ch:
		}
		c.mu.Lock()
		if c.gen >= target {
			err := c.refreshErr
			c.mu.Unlock()
			return err
		}
		ch = c.updated
		c.mu.Unlock()
		c.triggerRefresh()
	}
}

// knownPartitionCount returns the cached partition count of a topic.
func (c *cluster) knownPartitionCount(topic string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := c.topics[topic]
	if tm == nil || tm.err != nil || len(tm.partitions) == 0 {
		return 0, false
	}
	return len(tm.partitions), true
}

// partitionCount returns the topic's partition count, refreshing metadata
// until the topic is known or ctx ends.
func (c *cluster) partitionCount(ctx context.Context, topic string) (int, error) {
	var last error
	for {
		c.mu.Lock()
		tm := c.topics[topic]
		c.mu.Unlock()
		if tm != nil && tm.err == nil && len(tm.partitions) > 0 {
			return len(tm.partitions), nil
		}
		if tm != nil && tm.err != nil {
			last = tm.err
		}
		c.addInterest(topic)
		if err := c.waitRefresh(ctx); err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				if last != nil {
					return 0, fmt.Errorf("topic %q: %w (last metadata error: %w)", topic, err, last)
				}
				return 0, fmt.Errorf("topic %q: %w", topic, err)
			}
			last = err
		}
	}
}

// topic returns a copy of the cached metadata of a topic.
func (c *cluster) topic(name string) (topicMeta, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := c.topics[name]
	if tm == nil {
		return topicMeta{}, false
	}
	return *tm, true
}

// topicNames maps the id of every cached topic to its name.
func (c *cluster) topicNames() map[[16]byte]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[[16]byte]string, len(c.topics))
	for name, tm := range c.topics {
		if tm.err == nil && tm.id != ([16]byte{}) {
			out[tm.id] = name
		}
	}
	return out
}

// leader returns a partition's leader and leader epoch, if known.
func (c *cluster) leader(topic string, partition int32) (node, epoch int32, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := c.topics[topic]
	if tm == nil || tm.err != nil || partition < 0 || int(partition) >= len(tm.partitions) {
		return -1, -1, false
	}
	p := tm.partitions[partition]
	if p.leader < 0 {
		return -1, p.epoch, false
	}
	if _, known := c.brokers[p.leader]; !known {
		return -1, p.epoch, false
	}
	return p.leader, p.epoch, true
}

// controllerID returns the controller from the last metadata, refreshing
// once if it is unknown.
func (c *cluster) controllerID(ctx context.Context) (int32, error) {
	c.mu.Lock()
	id := c.controller
	c.mu.Unlock()
	if id >= 0 {
		return id, nil
	}
	if err := c.waitRefresh(ctx); err != nil {
		return -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.controller < 0 {
		return -1, ErrNotController
	}
	return c.controller, nil
}
