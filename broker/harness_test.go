package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// The tests mostly wait on a cluster's timers (elections, expiries,
// cleanings): one at a time they kept a quarter of a CPU busy. So most
// call t.Parallel; those that do not either read the process's
// allocation counts or need leaders that stay put, which a loaded machine
// moves (see each).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testcluster.GoleakOptions()...)
}

func createTopic(t testing.TB, cl *kgo.Client, name string, parts int32, rf int16) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 15000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		code, msg := resp.Topics[0].ErrorCode, ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		switch {
		case code == 0:
			return
		case code == kerr.TopicAlreadyExists.Code:
			// kgo retried after NOT_CONTROLLER (the metadata leader moved)
			// although the first attempt had committed; every test names
			// its topics afresh in its own cluster.
			t.Logf("CreateTopics %s: already exists (a retried create)", name)
			return
		case code == kerr.InvalidReplicationFactor.Code && ctx.Err() == nil:
			// Under load gossip may suspect a broker for a moment, and the
			// controller places replicas only on the brokers it sees alive.
			t.Logf("CreateTopics %s: %s; retrying", name, msg)
			time.Sleep(200 * time.Millisecond)
		default:
			t.Fatalf("CreateTopics %s: error code %d (%s)", name, code, msg)
		}
	}
}

// partitionInfo is one partition as Metadata reports it.
type partitionInfo struct {
	leader, epoch int32
	replicas      []int32
	group         string // its Raft group's name
}

func metadataOf(t *testing.T, cl *kgo.Client, topic string) map[int32]partitionInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	out := map[int32]partitionInfo{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode == 0 {
				out[p.Partition] = partitionInfo{leader: p.Leader, epoch: p.LeaderEpoch, replicas: p.Replicas,
					group: broker.PartitionGroup(metadata.TopicID(tp.TopicID).String(), p.Partition)}
			}
		}
	}
	return out
}

// topicMetadata sends a Metadata request for topic alone with r (the
// client, or one of its brokers).
func topicMetadata(ctx context.Context, r kmsg.Requestor, topic string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req.RequestWith(ctx, r)
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// whileRetriable calls f again while it returns a retriable Kafka error
// (a coordinator or leader not yet known, as on a fresh cluster), as a
// client would, and fails the test on any other error or once ctx ends.
func whileRetriable(ctx context.Context, t testing.TB, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		if !kerr.IsRetriable(err) || ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func values(n int, prefix string) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i % 13)), Value: []byte(fmt.Sprintf("%s-%06d", prefix, i))}
	}
	return recs
}

// consumeAll reads every record of topic from the start until want have
// arrived.
func consumeAll(t *testing.T, seeds []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(out), want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// nameTopicsByID sets the id of each topic of a hand-built Produce (with
// its name), so that it reads the same at whatever version the client
// sends it: by name up to v12, by id from v13.
func nameTopicsByID(t testing.TB, cl *kgo.Client, req *kmsg.ProduceRequest) {
	t.Helper()
	for i := range req.Topics {
		rt := &req.Topics[i]
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(rt.Topic)
		md.Topics, md.AllowAutoTopicCreation = append(md.Topics, mt), false
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := md.RequestWith(ctx, cl)
		cancel()
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("metadata of %s: %v", rt.Topic, err)
		}
		rt.TopicID = resp.Topics[0].TopicID
	}
}
