package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
)

// Metadata asks node id for the cluster's metadata: the brokers and the
// named topics (none if topics is empty).
func (c *Cluster) Metadata(ctx context.Context, id int, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := Request(rctx, c.nodes[id-1].KafkaAddr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// ReplicaSets returns the replicas of each of topic's partitions, as the
// first running node's Metadata lists them.
func (c *Cluster) ReplicaSets(ctx context.Context, topic string) (map[int32][]int, error) {
	running := c.Running()
	if len(running) == 0 {
		return nil, ErrNotRunning
	}
	md, err := c.Metadata(ctx, running[0], topic)
	if err != nil {
		return nil, err
	}
	out, ok := replicaSets(md)
	if !ok {
		return nil, fmt.Errorf("e2e: node %d: topic %q not described", running[0], topic)
	}
	return out, nil
}

// replicaSets reads the replicas of each partition of a Metadata answer's
// one topic; false if it does not describe exactly one topic.
func replicaSets(md *kmsg.MetadataResponse) (map[int32][]int, bool) {
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		return nil, false
	}
	out := map[int32][]int{}
	for _, p := range md.Topics[0].Partitions {
		for _, r := range p.Replicas {
			out[p.Partition] = append(out[p.Partition], int(r))
		}
	}
	return out, true
}

// agreedReplicaSets returns the replicas of topic's partitions if every
// running node's Metadata lists the same, else nil.
func (c *Cluster) agreedReplicaSets(ctx context.Context, topic string) map[int32][]int {
	var agreed map[int32][]int
	for _, id := range c.Running() {
		md, err := c.Metadata(ctx, id, topic)
		if err != nil {
			return nil
		}
		sets, ok := replicaSets(md)
		if !ok {
			return nil
		}
		if agreed != nil && !maps.EqualFunc(agreed, sets, slices.Equal[[]int]) {
			return nil
		}
		agreed = sets
	}
	return agreed
}

// PartitionLeader is a partition's leader as metadata reports it.
type PartitionLeader struct {
	Node  int   // the leader's node id
	Epoch int32 // its leader epoch (the Raft term)
}

// leaders asks every running, unpaused node for topic's leaders and
// returns them if all agree and every partition's leader is one of them.
func (c *Cluster) leaders(ctx context.Context, topic string) ([]PartitionLeader, error) {
	return c.leadersAmong(ctx, topic, c.Running())
}

// leadersAmong is leaders asking only the nodes running (a side of a
// network partition).
func (c *Cluster) leadersAmong(ctx context.Context, topic string, running []int) ([]PartitionLeader, error) {
	if len(running) == 0 {
		return nil, ErrNotRunning
	}
	var agreed []PartitionLeader
	for _, id := range running {
		md, err := c.Metadata(ctx, id, topic)
		if err != nil {
			return nil, err
		}
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) == 0 {
			return nil, fmt.Errorf("node %d: topic %q not ready", id, topic)
		}
		ls := make([]PartitionLeader, len(md.Topics[0].Partitions))
		for _, p := range md.Topics[0].Partitions {
			if p.Partition < 0 || int(p.Partition) >= len(ls) {
				return nil, fmt.Errorf("node %d: partition %d of %d", id, p.Partition, len(ls))
			}
			if p.ErrorCode != 0 || p.Leader < 0 || !slices.Contains(running, int(p.Leader)) {
				return nil, fmt.Errorf("node %d: %s[%d] has no running leader (leader %d, code %d)", id, topic, p.Partition, p.Leader, p.ErrorCode)
			}
			ls[p.Partition] = PartitionLeader{Node: int(p.Leader), Epoch: p.LeaderEpoch}
		}
		if agreed == nil {
			agreed = ls
		} else if !slices.Equal(agreed, ls) {
			return nil, fmt.Errorf("nodes disagree on %s's leaders: %v vs %v (node %d)", topic, agreed, ls, id)
		}
	}
	return agreed, nil
}

// Leaders waits until every running, unpaused node reports the same
// leader and epoch for every partition of topic, each leader being one of
// them, and returns the leaders by partition.
func (c *Cluster) Leaders(ctx context.Context, topic string) ([]PartitionLeader, error) {
	var out []PartitionLeader
	err := poll(ctx, "leaders of "+topic, func() (bool, error) {
		ls, err := c.leaders(ctx, topic)
		if err != nil {
			return false, nil
		}
		out = ls
		return true, nil
	})
	return out, err
}

// LeadersAmong is Leaders asking only the nodes ids (one side of a network
// partition), each leader being one of them.
func (c *Cluster) LeadersAmong(ctx context.Context, topic string, ids []int) ([]PartitionLeader, error) {
	var out []PartitionLeader
	err := poll(ctx, fmt.Sprintf("leaders of %s among %v", topic, ids), func() (bool, error) {
		ls, err := c.leadersAmong(ctx, topic, ids)
		if err != nil {
			return false, nil
		}
		out = ls
		return true, nil
	})
	return out, err
}

// Leader is Leaders for one partition.
func (c *Cluster) Leader(ctx context.Context, topic string, partition int32) (PartitionLeader, error) {
	ls, err := c.Leaders(ctx, topic)
	if err != nil {
		return PartitionLeader{}, err
	}
	if int(partition) >= len(ls) {
		return PartitionLeader{}, fmt.Errorf("e2e: %s has %d partitions, not %d", topic, len(ls), partition+1)
	}
	return ls[partition], nil
}

// WaitReady waits until every running, unpaused node answers Metadata
// listing all of them as brokers and naming a controller, and every
// partition of each topic has an agreed, running leader (Leaders).
func (c *Cluster) WaitReady(ctx context.Context, topics ...string) error {
	err := poll(ctx, "cluster ready", func() (bool, error) {
		running := c.Running()
		for _, id := range running {
			md, err := c.Metadata(ctx, id)
			if err != nil || md.ControllerID < 0 {
				return false, nil
			}
			var brokers []int
			for _, b := range md.Brokers {
				brokers = append(brokers, int(b.NodeID))
			}
			for _, want := range running {
				if !slices.Contains(brokers, want) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, t := range topics {
		if _, err := c.Leaders(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// CreateTopic creates a topic and waits until it is ready everywhere.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions int32, replicationFactor int16) error {
	return c.CreateTopicWith(ctx, topic, partitions, replicationFactor, nil)
}

// CreateTopicWith creates a topic with topic configs (write.caching, ...)
// and waits until it is ready everywhere. A topic that exists already is
// left as it is.
func (c *Cluster) CreateTopicWith(ctx context.Context, topic string, partitions int32, replicationFactor int16, configs map[string]string) error {
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...), client.RequestTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, topic, partitions, replicationFactor, configs); err != nil && !errors.Is(err, client.ErrTopicAlreadyExists) {
		return fmt.Errorf("e2e: create topic %s: %w", topic, err)
	}
	return c.WaitReady(ctx, topic)
}

// pollInterval is how often poll looks again.
const pollInterval = 50 * time.Millisecond

// ErrTimeout matches a *WaitError.
var ErrTimeout = errors.New("e2e: condition not met in time")

// WaitError is a condition that did not hold before its context ended.
type WaitError struct {
	What string
	Err  error // the context's error
}

func (e *WaitError) Error() string { return fmt.Sprintf("e2e: waiting for %s: %v", e.What, e.Err) }

// Unwrap gives ErrTimeout and the context's error.
func (e *WaitError) Unwrap() []error { return []error{ErrTimeout, e.Err} }

// poll calls cond every pollInterval until it returns true or an error, or
// ctx ends.
func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return &WaitError{What: what, Err: ctx.Err()}
		case <-t.C:
		}
	}
}
