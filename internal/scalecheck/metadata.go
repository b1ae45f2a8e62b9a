package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

// leaderInfo is a partition's leader and leader epoch as Metadata reports them.
type leaderInfo struct {
	leader, epoch int32
}

// createTopic creates one topic, retrying while the cluster is not ready
// (no controller yet). An existing topic is an error: its partitions would
// already be led.
func createTopic(ctx context.Context, cl *kgo.Client, name string, parts, rf int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(parts), int16(rf)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 60000
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			if err == nil {
				return nil
			}
			if errors.Is(err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("topic %s already exists; use another -topic or start from an empty cluster (make cluster-stop clean cluster)", name)
			}
			if !kerr.IsRetriable(err) {
				if msg := resp.Topics[0].ErrorMessage; msg != nil {
					return fmt.Errorf("create topic %s: %w (%s)", name, err, *msg)
				}
				return fmt.Errorf("create topic %s: %w", name, err)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create topic %s: %w (last error %v)", name, ctx.Err(), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitLed polls Metadata until all n partitions of topic have a leader.
func waitLed(ctx context.Context, cl *kgo.Client, topic string, n int) (map[tp]leaderInfo, error) {
	start, report := time.Now(), time.Now().Add(10*time.Second)
	for {
		l, err := allLeaders(ctx, cl, []string{topic})
		if err == nil && len(l) == n {
			return l, nil
		}
		if time.Now().After(report) {
			fmt.Printf("  %v: %d of %d partitions of %s led\n", time.Since(start).Round(time.Second), len(l), n, topic)
			report = report.Add(10 * time.Second)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("topic %s: only %d of %d partitions have leaders: %w", topic, len(l), n, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allLeaders returns the led partitions of topics. With a nil cl it asks
// a new client seeded with brokers (used when the default client may be
// connected to a node about to die).
func allLeaders(ctx context.Context, cl *kgo.Client, topics []string, brokers ...string) (map[tp]leaderInfo, error) {
	if cl == nil {
		c, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cl = c
	}
	resp, err := topicsMetadata(ctx, cl, topics)
	if err != nil {
		return nil, err
	}
	out := map[tp]leaderInfo{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader >= 0 && p.ErrorCode == 0 {
				out[tp{*t.Topic, p.Partition}] = leaderInfo{p.Leader, p.LeaderEpoch}
			}
		}
	}
	return out, nil
}

// topicsMetadata asks cl for the Metadata of topics.
func topicsMetadata(ctx context.Context, cl *kgo.Client, topics []string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, mt)
	}
	return req.RequestWith(ctx, cl)
}

// countPartitions counts every partition of every topic in the cluster.
func countPartitions(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrMetadataRequest() // nil Topics: all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	return n, nil
}

// offPreferred counts the partitions of topics whose leader is not their
// preferred replica (the first of their replicas), and those without a
// leader.
func offPreferred(ctx context.Context, cl *kgo.Client, topics []string) (int, error) {
	resp, err := topicsMetadata(ctx, cl, topics)
	if err != nil {
		return 0, err
	}
	off := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				off++
			}
		}
	}
	return off, nil
}

// waitPreferred waits, for at most limit, until every partition of topics
// is led by its preferred replica: nodes hand leadership back to them
// every leader_rebalance_interval, and the idle sample that follows
// should not count those moves. It prints how long that took.
func waitPreferred(ctx context.Context, cl *kgo.Client, topics []string, limit time.Duration) error {
	start := time.Now()
	first := -1
	for {
		off, err := offPreferred(ctx, cl, topics)
		if err != nil {
			return err
		}
		if first < 0 {
			first = off
		}
		if off == 0 {
			if first > 0 {
				fmt.Printf("leaders: %d partitions were not led by their preferred replica; all are after %v more\n",
					first, time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if time.Since(start) > limit {
			fmt.Printf("leaders: %d partitions still not led by their preferred replica after %v; sampling anyway\n", off, limit)
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}
