package broker_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A request about one partition or one coordinator costs about the same
// whatever else the cluster holds: a transaction (its verification and
// markers look up leaders), FindCoordinator, a KIP-848 heartbeat, a
// Metadata request for one topic and an OffsetCommit by topic id, before
// and after a topic of many partitions is created beside them. Lookups
// that built the whole cluster view per call made each transaction cost
// thousands of allocations more per thousand partitions, and each
// heartbeat copied every topic's partitions; this is the scenario that
// finds that kind. Allocations are counted for the whole process, the
// client's included, so the bound is loose.
func TestPerRequestCostDoesNotGrowWithPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("creates hundreds of partitions")
	}
	c := testcluster.Start(t, 1)
	admin := c.Client(t)
	createTopic(t, admin, "work", 1, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.DefaultProduceTopic("work"),
		kgo.TransactionalID("scale-cost"), kgo.RequestRetries(200))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 16)
	ctx := context.Background()
	eventually(t, time.Minute, "a first transaction", func() bool { return oneBatch(ctx, cl, true, value) == nil })

	const ops = 20
	measure := func(name string, op func() error) float64 {
		eventually(t, time.Minute, name+" answered", func() bool { return op() == nil }) // creates what it needs
		for range 3 {
			if err := op(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range ops {
			if err := op(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / ops
	}
	findCoordinator := func(keyType int8, key string) func() error {
		return func() error {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorType = key, keyType
			resp, err := req.RequestWith(ctx, admin)
			if err == nil && resp.ErrorCode != 0 {
				err = fmt.Errorf("error code %d", resp.ErrorCode)
			}
			return err
		}
	}
	epoch := int32(0)
	heartbeat := func() error { // KIP-848: hashes the subscribed topics' metadata each time
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "scale-group", "scale-member-0000000001", epoch
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{"work"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{} // owns none: empty, not null
		resp, err := req.RequestWith(ctx, admin)
		if err == nil && resp.ErrorCode != 0 {
			err = fmt.Errorf("error code %d", resp.ErrorCode)
		}
		if err == nil {
			epoch = resp.MemberEpoch
		}
		return err
	}
	commitByID := func() error { // OffsetCommit v10 (KIP-848) names topics by id
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("work")
		md.Topics = append(md.Topics, mt)
		mresp, err := md.RequestWith(ctx, admin)
		if err != nil || len(mresp.Topics) != 1 {
			return fmt.Errorf("metadata: %v", err)
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 10, "scale-simple", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = mresp.Topics[0].TopicID
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, admin)
		if err == nil && (len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0) {
			err = fmt.Errorf("commit answered %+v", resp.Topics)
		}
		return err
	}
	kinds := []struct {
		name string
		op   func() error
	}{
		{"transaction", func() error { return oneBatch(ctx, cl, true, value) }},
		{"FindCoordinator group", findCoordinator(0, "g")},
		{"FindCoordinator transaction", findCoordinator(1, "scale-cost")},
		{"ConsumerGroupHeartbeat", heartbeat},
		{"Metadata and OffsetCommit by topic id", commitByID},
		{"Metadata for one topic", func() error {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("work")
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, admin)
			if err == nil && (len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0) {
				err = fmt.Errorf("topics %+v", resp.Topics)
			}
			return err
		}},
	}
	base := make([]float64, len(kinds))
	for i, k := range kinds {
		base[i] = measure(k.name, k.op)
	}
	createTopic(t, admin, "ballast", 400, 1)
	for i, k := range kinds {
		got := measure(k.name, k.op)
		t.Logf("%s: %.0f allocations before the ballast, %.0f after", k.name, base[i], got)
		if got > 1.2*base[i]+150 {
			t.Errorf("%s: %.0f allocations per call beside 400 more partitions, %.0f before", k.name, got, base[i])
		}
	}
}
