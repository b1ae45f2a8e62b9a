package broker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// One CreateTopics request for many topics creates them all within the
// request's own timeout, as a Kafka controller does in one batch (Kafka
// Streams and infrastructure tools create dozens at once). Each topic used
// to wait for its partitions' first election before the next one was
// proposed, about 0.8 s each: a request of 100 topics ran out of its 30 s
// with 39 of them led, the others answered without a leader. The topics
// are proposed one by one and their leaders awaited once, together; so
// are the new partitions of one CreatePartitions request for many topics.
func TestCreateTopicsOfManyTopicsInOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 100 Raft groups")
	}
	// The leaders' bound well inside the request's timeout: a loaded
	// machine's elections must not fail the test, the order of waits must.
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.Tuning.TopicLeaders = 20 * time.Second })
	admin := c.Client(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	const topics = 100
	for i := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("many-%03d", i), 1, 1
		req.Topics = append(req.Topics, rt)
	}
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int16
	for _, rt := range resp.Topics {
		codes = append(codes, rt.ErrorCode)
	}
	requireNoErrors(t, "CreateTopics", codes)
	requireLed(t, admin, topics, 1, "CreateTopics")

	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.TimeoutMillis = 30000
	for i := range topics {
		grow.Topics = append(grow.Topics, kmsg.CreatePartitionsRequestTopic{Topic: fmt.Sprintf("many-%03d", i), Count: 2})
	}
	gresp, err := grow.RequestWith(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	codes = codes[:0]
	for _, rt := range gresp.Topics {
		codes = append(codes, rt.ErrorCode)
	}
	requireNoErrors(t, "CreatePartitions", codes)
	requireLed(t, admin, topics, 2, "CreatePartitions")
}

// A Metadata request naming many missing topics auto-creates them all
// and waits once for their leaders, within a client's request timeout
// (Java's request.timeout.ms, 30 s): each used to wait for its own first
// election in turn, about 0.8 s each.
func TestMetadataAutoCreatesManyTopicsInOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 60 Raft groups")
	}
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.Tuning.TopicLeaders = 20 * time.Second })
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	const topics = 60
	for i := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("many-%03d", i))
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := req.RequestWith(ctx, c.Client(t)); err != nil {
		t.Fatalf("Metadata auto-creating %d topics: %v", topics, err)
	}
	requireLed(t, c.Client(t), topics, 1, "Metadata")
}

// requireNoErrors fails the test if any topic of step was answered with
// an error, counting them by error code.
func requireNoErrors(t *testing.T, step string, codes []int16) {
	t.Helper()
	failed := map[int16]int{}
	for _, c := range codes {
		if c != 0 {
			failed[c]++
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%s of %d topics, failed by error code: %v", step, len(codes), failed)
	}
}

// requireLed checks that each of the topics many-000... has parts
// partitions, every one with a leader, once step answered.
func requireLed(t *testing.T, admin kmsg.Requestor, topics, parts int, step string) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest() // every topic, with its leaders
	mresp, err := md.RequestWith(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	led := 0
	for _, mt := range mresp.Topics {
		if mt.Topic == nil || !strings.HasPrefix(*mt.Topic, "many-") || len(mt.Partitions) != parts {
			continue
		}
		if !slices.ContainsFunc(mt.Partitions, func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader < 0 }) {
			led++
		}
	}
	if led != topics {
		t.Errorf("%d of %d topics have %d partitions, each with a leader, after %s answered", led, topics, parts, step)
	}
}
