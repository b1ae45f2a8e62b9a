package client

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Admin creates and describes topics and describes the cluster. Create it
// with NewAdmin; it is safe for concurrent use. Every call retries
// retriable errors (with RetryBackoff) until ctx ends.
type Admin struct {
	cfg *config
	cl  *cluster
}

// NewAdmin validates the options and creates an admin client. It does not
// contact a broker until the first call.
func NewAdmin(opts ...Opt) (*Admin, error) {
	cfg, err := newConfig(anyOpt, opts)
	if err != nil {
		return nil, err
	}
	return &Admin{cfg: cfg, cl: newCluster(cfg)}, nil
}

// Close releases the admin client's connections.
func (a *Admin) Close() { a.cl.close() }

// BrokerDetail is one broker of the cluster.
type BrokerDetail struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string // empty if none
}

// PartitionDetail is one partition as the cluster's metadata describes it.
type PartitionDetail struct {
	Partition   int32
	Leader      int32 // -1 when there is none
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	Err         error // a partition-level error, such as LEADER_NOT_AVAILABLE
}

// TopicDetail is one topic: its partitions, in partition order, or the
// error the cluster gave for it (ErrUnknownTopicOrPartition if missing).
type TopicDetail struct {
	Name       string
	ID         [16]byte
	Internal   bool
	Partitions []PartitionDetail
	Err        error
}

// ClusterDetail is the cluster: its brokers (by node id), the controller
// and, from DescribeCluster, every topic (by name).
type ClusterDetail struct {
	ClusterID  string
	Controller int32
	Brokers    []BrokerDetail
	Topics     []TopicDetail
}

// retry runs fn until it succeeds, fails with a non-retriable error, or
// ctx ends (then it returns the last error along with ctx's).
func (a *Admin) retry(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !IsRetriable(err) {
			return err
		}
		a.cl.triggerRefresh()
		d := min(a.cfg.retryBackoff<<min(attempt-1, 10), a.cfg.retryBackoffMax)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// metadata asks any broker for the given topics (nil: every topic).
func (a *Admin) metadata(ctx context.Context, topics []string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	var resp *kmsg.MetadataResponse
	err := a.askAny(ctx, req, func(r kmsg.Response) error {
		resp = r.(*kmsg.MetadataResponse)
		return nil
	})
	return resp, err
}

// CreateTopic creates a topic on the controller. replicationFactor -1 and
// partitions -1 ask for the broker's defaults. An existing topic gives
// ErrTopicAlreadyExists. It returns when the controller has created the
// topic; metadata on other brokers may lag briefly.
func (a *Admin) CreateTopic(ctx context.Context, topic string, partitions int32, replicationFactor int16, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(a.cfg.requestTimeout / time.Millisecond)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = partitions
	rt.ReplicationFactor = replicationFactor
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		c.Value = kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	return a.controllerRequest(ctx, req, func(resp kmsg.Response) (int, int16, *string) {
		r := resp.(*kmsg.CreateTopicsResponse)
		if len(r.Topics) != 1 {
			return len(r.Topics), 0, nil
		}
		return 1, r.Topics[0].ErrorCode, r.Topics[0].ErrorMessage
	})
}

// controllerRequest sends a request about one topic to the controller,
// retrying as retry does, and returns the topic's error. result gives the
// number of topics answered and the first one's error code and message.
// A failed try asks metadata for the controller again (askController).
func (a *Admin) controllerRequest(ctx context.Context, req kmsg.Request, result func(kmsg.Response) (int, int16, *string)) error {
	return a.askController(ctx, req, func(resp kmsg.Response) error {
		n, code, msg := result(resp)
		if n != 1 {
			return fmt.Errorf("client: %s answered %d topics", kmsg.Key(req.Key()).Name(), n)
		}
		return kafkaErr(code, msg)
	})
}

// DeleteTopic deletes a topic and its records on every replica. A topic
// that does not exist gives ErrUnknownTopicOrPartition.
func (a *Admin) DeleteTopic(ctx context.Context, topic string) error {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = int32(a.cfg.requestTimeout / time.Millisecond)
	req.TopicNames = []string{topic}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	return a.controllerRequest(ctx, req, func(resp kmsg.Response) (int, int16, *string) {
		r := resp.(*kmsg.DeleteTopicsResponse)
		if len(r.Topics) != 1 {
			return len(r.Topics), 0, nil
		}
		return 1, r.Topics[0].ErrorCode, r.Topics[0].ErrorMessage
	})
}

// CreatePartitions grows topic to count partitions (Kafka's
// CreatePartitions); the brokers place the new replicas. A count not above
// the current one gives ErrInvalidPartitions.
func (a *Admin) CreatePartitions(ctx context.Context, topic string, count int32) error {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(a.cfg.requestTimeout / time.Millisecond)
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	return a.controllerRequest(ctx, req, func(resp kmsg.Response) (int, int16, *string) {
		r := resp.(*kmsg.CreatePartitionsResponse)
		if len(r.Topics) != 1 {
			return len(r.Topics), 0, nil
		}
		return 1, r.Topics[0].ErrorCode, r.Topics[0].ErrorMessage
	})
}

// ListTopics returns the names of the topics, sorted, without the
// internal ones (as Kafka's Admin lists them by default).
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	return a.listTopics(ctx, false)
}

// ListAllTopics is ListTopics with the internal topics too (such as
// __consumer_offsets, which holds the groups' committed offsets).
func (a *Admin) ListAllTopics(ctx context.Context) ([]string, error) {
	return a.listTopics(ctx, true)
}

func (a *Admin) listTopics(ctx context.Context, internal bool) ([]string, error) {
	resp, err := a.metadata(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 && (internal || !t.IsInternal) {
			names = append(names, *t.Topic)
		}
	}
	slices.Sort(names)
	return names, nil
}

// DescribeTopics describes the topics, in the order asked. A topic that
// does not exist has Err set (ErrUnknownTopicOrPartition); that is not an
// error of the call.
func (a *Admin) DescribeTopics(ctx context.Context, topics ...string) ([]TopicDetail, error) {
	resp, err := a.metadata(ctx, append([]string{}, topics...))
	if err != nil {
		return nil, err
	}
	byName := map[string]TopicDetail{}
	for _, t := range topicDetails(resp) {
		byName[t.Name] = t
	}
	out := make([]TopicDetail, len(topics))
	for i, name := range topics {
		t, ok := byName[name]
		if !ok {
			t = TopicDetail{Name: name, Err: ErrUnknownTopicOrPartition}
		}
		out[i] = t
	}
	return out, nil
}

// DescribeCluster describes the brokers, the controller, and every topic
// with its partitions' leaders, leader epochs, replicas and ISR.
func (a *Admin) DescribeCluster(ctx context.Context) (*ClusterDetail, error) {
	resp, err := a.metadata(ctx, nil)
	if err != nil {
		return nil, err
	}
	d := &ClusterDetail{Controller: resp.ControllerID, Topics: topicDetails(resp)}
	if resp.ClusterID != nil {
		d.ClusterID = *resp.ClusterID
	}
	for _, b := range resp.Brokers {
		bd := BrokerDetail{NodeID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			bd.Rack = *b.Rack
		}
		d.Brokers = append(d.Brokers, bd)
	}
	slices.SortFunc(d.Brokers, func(x, y BrokerDetail) int { return int(x.NodeID) - int(y.NodeID) })
	return d, nil
}

// topicDetails converts a metadata response, topics sorted by name and
// partitions by number.
func topicDetails(resp *kmsg.MetadataResponse) []TopicDetail {
	var out []TopicDetail
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		td := TopicDetail{Name: *t.Topic, ID: t.TopicID, Internal: t.IsInternal, Err: kafkaErr(t.ErrorCode, nil)}
		for _, p := range t.Partitions {
			td.Partitions = append(td.Partitions, PartitionDetail{
				Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas, Err: kafkaErr(p.ErrorCode, nil),
			})
		}
		slices.SortFunc(td.Partitions, func(x, y PartitionDetail) int { return int(x.Partition) - int(y.Partition) })
		out = append(out, td)
	}
	slices.SortFunc(out, func(x, y TopicDetail) int {
		switch {
		case x.Name < y.Name:
			return -1
		case x.Name > y.Name:
			return 1
		}
		return 0
	})
	return out
}

// askController sends req to the controller, each attempt bounded by the
// request timeout, and hands the response to check; a retriable error
// from either is tried again (Admin.retry), after asking metadata for the
// controller again.
func (a *Admin) askController(ctx context.Context, req kmsg.Request, check func(kmsg.Response) error) error {
	return a.retry(ctx, func() error {
		node, err := a.cl.controllerID(ctx)
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
		defer cancel()
		resp, err := a.cl.request(rctx, node, req, 0)
		if err == nil {
			err = check(resp)
		}
		if err != nil {
			a.cl.mu.Lock()
			a.cl.controller = -1 // ask metadata again
			a.cl.mu.Unlock()
		}
		return err
	})
}

// askAny sends req to any broker, each attempt bounded by the request
// timeout, and hands the response to check; a retriable error from
// either is tried again (Admin.retry).
func (a *Admin) askAny(ctx context.Context, req kmsg.Request, check func(kmsg.Response) error) error {
	return a.retry(ctx, func() error {
		rctx, cancel := context.WithTimeout(ctx, a.cfg.requestTimeout)
		defer cancel()
		resp, err := a.cl.requestAny(rctx, req)
		if err != nil {
			return err
		}
		return check(resp)
	})
}
