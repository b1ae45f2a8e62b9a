package broker_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// A request about one partition or one coordinator costs about the same
// whatever else the cluster holds: a transaction (its verification and
// markers look up leaders), FindCoordinator, a KIP-848 heartbeat, a
// Metadata request for one topic and an OffsetCommit by topic id, before
// and after a topic of many partitions is created beside them; so do the
// admin requests that name their topics (adminRequests). Lookups
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
		// The least of three rounds: a new topic's groups still settling
		// (elections, leader reports) allocate beside one round under
		// load, while a cost that grows with the cluster is in every one.
		least := math.Inf(1)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range ops {
				if err := op(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			runtime.ReadMemStats(&after)
			least = min(least, float64(after.Mallocs-before.Mallocs)/ops)
		}
		return least
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
	kinds := []costKind{
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
	kinds = append(kinds, adminRequests(ctx, admin)...)
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

// costKind is one kind of request TestPerRequestCostDoesNotGrowWithPartitions
// measures: op sends one and fails if the answer is not the expected one.
type costKind struct {
	name string
	op   func() error
}

// adminRequests are the admin requests about one topic, the cluster or
// the metadata quorum, each answered as a tool polling it would see:
// none of them should read any other topic's partitions.
func adminRequests(ctx context.Context, admin kmsg.Requestor) []costKind {
	send := func(req kmsg.Request, codes func(kmsg.Response) []int16, ok ...int16) func() error {
		return func() error {
			resp, err := admin.Request(ctx, req)
			if err != nil {
				return err
			}
			for _, c := range codes(resp) {
				if c != 0 && !slices.Contains(ok, c) {
					return fmt.Errorf("%T: error code %d", resp, c)
				}
			}
			return nil
		}
	}
	cluster := kmsg.NewPtrDescribeClusterRequest()
	quorum := kmsg.NewPtrDescribeQuorumRequest()
	qt := kmsg.NewDescribeQuorumRequestTopic()
	qt.Topic, qt.Partitions = "__cluster_metadata", []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	quorum.Topics = append(quorum.Topics, qt)
	configs := kmsg.NewPtrDescribeConfigsRequest()
	configs.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "work"}}
	describe := kmsg.NewPtrDescribeTopicPartitionsRequest()
	describe.Topics, describe.ResponsePartitionLimit = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "work"}}, 2000
	producers := kmsg.NewPtrDescribeProducersRequest()
	producers.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "work", Partitions: []int32{0}}}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.ValidateOnly = true
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "never-made", NumPartitions: 1, ReplicationFactor: 1}}
	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.ValidateOnly, grow.TimeoutMillis = true, 10000
	grow.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "work", Count: 2}}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 10000
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("no-such-topic")}, {TopicID: [16]byte{1, 2, 3}}}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.TimeoutMillis = 10000
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "work", Partitions: []int32{0}}}
	shares := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	shares.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "scale-share",
		Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "work", Partitions: []int32{0}}}}}
	return []costKind{
		{"DescribeCluster", send(cluster, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.DescribeClusterResponse).ErrorCode}
		})},
		{"DescribeQuorum", send(quorum, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.DescribeQuorumResponse).ErrorCode}
		})},
		{"DescribeConfigs of one topic", send(configs, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode}
		})},
		{"DescribeTopicPartitions of one topic", send(describe, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode}
		})},
		{"DescribeProducers", send(producers, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode}
		})},
		{"CreateTopics, validate only", send(create, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode}
		})},
		{"CreatePartitions, validate only", send(grow, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode}
		})},
		{"DeleteTopics of unknown topics", send(del, func(r kmsg.Response) []int16 {
			ts := r.(*kmsg.DeleteTopicsResponse).Topics
			return []int16{ts[0].ErrorCode, ts[1].ErrorCode}
		}, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code)},
		{"ElectLeaders of one partition", send(elect, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorCode}
		}, kerr.ElectionNotNeeded.Code)},
		{"DescribeShareGroupOffsets of one topic", send(shares, func(r kmsg.Response) []int16 {
			g := r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
			codes := []int16{g.ErrorCode}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					codes = append(codes, p.ErrorCode)
				}
			}
			return codes
		})},
	}
}
