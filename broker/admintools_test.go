package broker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// describePages pages through DescribeTopicPartitions, limit partitions
// at a time, and returns every partition answered, as "topic-p", with
// its answer, and the pages it took.
func describePages(t *testing.T, cl *kgo.Client, topics []string, limit int32) (map[string]kmsg.DescribeTopicPartitionsResponseTopicPartition, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages := 1; ; pages++ {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DescribeTopicPartitions: %v", err)
		}
		n := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %s: %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			for _, p := range rt.Partitions {
				out[fmt.Sprintf("%s-%d", *rt.Topic, p.Partition)] = p
				n++
			}
		}
		if n > int(limit) {
			t.Fatalf("page %d holds %d partitions, over the limit %d", pages, n, limit)
		}
		if resp.NextCursor == nil {
			return out, pages
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

// DescribeTopicPartitions (KIP-966) pages through every partition with a
// cursor, two at a time, and answers each as Metadata does (leader,
// epoch, replicas, ISR); a named unknown topic and a cursor outside the
// named topics are refused as Kafka refuses them.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	cl := c.Client(t)
	createTopic(t, cl, "dtp-a", 3, 3)
	createTopic(t, cl, "dtp-b", 2, 2)
	createTopic(t, cl, "dtp-c", 1, 1)
	want := map[string]partitionInfo{}
	for _, topic := range []string{"dtp-a", "dtp-b", "dtp-c"} {
		eventually(t, 20*time.Second, "leaders of "+topic, func() bool {
			md := metadataOf(t, cl, topic)
			for p, info := range md {
				want[fmt.Sprintf("%s-%d", topic, p)] = info
			}
			return len(md) > 0 && !slices.ContainsFunc(slices.Collect(maps.Values(md)), func(i partitionInfo) bool { return i.leader < 0 })
		})
	}

	// Each broker learns leaders on its own; the broker that answers may
	// be a moment behind the one Metadata came from, as in Kafka.
	var got map[string]kmsg.DescribeTopicPartitionsResponseTopicPartition
	var pages int
	eventually(t, 20*time.Second, "DescribeTopicPartitions to name Metadata's leaders", func() bool {
		got, pages = describePages(t, cl, []string{"dtp-c", "dtp-a", "dtp-b", "dtp-a"}, 2)
		for key, w := range want {
			if p, ok := got[key]; ok && p.LeaderID != w.leader {
				return false
			}
		}
		return true
	})
	if len(got) != 6 || pages != 3 {
		t.Fatalf("%d partitions in %d pages, want 6 in 3: %v", len(got), pages, got)
	}
	for key, w := range want {
		p, ok := got[key]
		if !ok {
			t.Fatalf("%s not answered", key)
		}
		if p.LeaderID != w.leader || p.LeaderEpoch != w.epoch || !slices.Equal(p.Replicas, w.replicas) {
			t.Fatalf("%s: leader %d epoch %d replicas %v, Metadata says %+v", key, p.LeaderID, p.LeaderEpoch, p.Replicas, w)
		}
		if len(p.ISR) != len(p.Replicas) || len(p.OfflineReplicas) != 0 {
			t.Fatalf("%s: ISR %v offline %v of replicas %v", key, p.ISR, p.OfflineReplicas, p.Replicas)
		}
	}
	// Every topic, the internal ones included, one partition a page.
	all, _ := describePages(t, cl, nil, 1)
	for key := range want {
		if _, ok := all[key]; !ok {
			t.Fatalf("all topics: %s missing", key)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range []string{"dtp-a", "nosuch"} {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 2 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		resp.Topics[0].TopicID == ([16]byte{}) || resp.Topics[0].AuthorizedOperations <= 0 {
		t.Fatalf("a known and an unknown topic: %+v, %v", resp, err)
	}
	req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "dtp-b"}
	resp, err = req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a cursor outside the named topics: %+v, %v, want INVALID_REQUEST", resp, err)
	}
}

// DescribeLogDirs, through kadm, reports each node's data_dir with its
// replicas' log sizes (the same on every replica once written) and, to a
// raw v4 request, the disk's total and usable bytes; a named partition
// narrows the answer to it.
func TestDescribeLogDirs(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "dirs", 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := values(40, "dirs")
	for i, r := range recs {
		r.Topic, r.Partition = "dirs", int32(i%2)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var all kadm.DescribedAllLogDirs
	eventually(t, 20*time.Second, "equal log sizes on every replica", func() bool {
		var err error
		all, err = adm.DescribeAllLogDirs(ctx, nil)
		if err != nil || len(all) != 3 {
			return false
		}
		for p := int32(0); p < 2; p++ {
			var sizes []int64
			for _, d := range all.Sorted() {
				if dp, ok := d.Topics["dirs"][p]; ok {
					sizes = append(sizes, dp.Size)
				}
			}
			if len(sizes) != 3 || sizes[0] == 0 || len(slices.Compact(sizes)) != 1 {
				return false
			}
		}
		return true
	})
	for _, d := range all.Sorted() {
		want, _ := filepath.Abs(c.DataDir(int(d.Broker)))
		if d.Dir != want || d.Err != nil {
			t.Fatalf("node %d: dir %q (%v), want %q", d.Broker, d.Dir, d.Err, want)
		}
		if dp := d.Topics["dirs"][0]; dp.OffsetLag != 0 || dp.IsFuture {
			t.Fatalf("node %d: %+v, want lag 0, not future", d.Broker, dp)
		}
	}
	one, err := adm.DescribeBrokerLogDirs(ctx, 2, kadm.TopicsSet{"dirs": {1: {}}})
	if err != nil || len(one) != 1 {
		t.Fatalf("DescribeBrokerLogDirs: %v, %v", one, err)
	}
	for _, d := range one {
		if len(d.Topics) != 1 || len(d.Topics["dirs"]) != 1 || d.Topics["dirs"][1].Size == 0 {
			t.Fatalf("asked for dirs-1 only: %+v", d.Topics)
		}
	}

	req := kmsg.NewPtrDescribeLogDirsRequest()
	kresp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeLogDirsResponse)
	if resp.Version != 5 || resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("DescribeLogDirs v5: %+v, %v", resp, err)
	}
	if d := resp.Dirs[0]; d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes || d.IsCordoned {
		t.Fatalf("disk: total %d usable %d, cordoned %v", d.TotalBytes, d.UsableBytes, d.IsCordoned)
	}
}

// ElectLeaders, through kadm: with the preferred replica's node restarted
// (so another replica leads), a preferred election hands the leadership
// back to it, wherever the request lands; asked again, or for an unclean
// election of a partition with a leader, it is not needed; an unknown
// partition is refused.
func TestElectLeaders(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.DefaultReplicationFactor = 3
		cfg.LeaderRebalanceInterval = 0 // only ElectLeaders moves leaders back
	})
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "elect", 1, 3)
	var pref int32
	eventually(t, 20*time.Second, "a leader", func() bool {
		md := metadataOf(t, cl, "elect")
		if p, ok := md[0]; ok && p.leader >= 0 {
			pref = p.replicas[0]
			return true
		}
		return false
	})
	c.StopNode(int(pref))
	if l, _ := c.Leader("elect", 0, 20*time.Second); l < 0 || l == pref {
		t.Fatalf("leader %d after stopping %d", l, pref)
	}
	c.StartNode(int(pref))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	one := kadm.TopicsSet{"elect": {0: {}}}
	// Sent to the preferred replica's node, which does not lead: it asks
	// the leader's node, which hands the leadership over.
	eventually(t, 30*time.Second, "the preferred replica back in sync and elected", func() bool {
		req := kmsg.NewPtrElectLeadersRequest()
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "elect", []int32{0}
		req.Topics = append(req.Topics, rt)
		kresp, err := cl.Broker(int(pref)).Request(ctx, req)
		if err != nil { // a connection from before the restart
			t.Logf("ElectLeaders: %v", err)
			return false
		}
		resp := kresp.(*kmsg.ElectLeadersResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ElectLeaders: %+v", resp)
		}
		r := resp.Topics[0].Partitions[0]
		t.Logf("preferred election: %v", kerr.ErrorForCode(r.ErrorCode))
		return r.ErrorCode == 0
	})
	if l, _ := c.Leader("elect", 0, 10*time.Second); l != pref {
		t.Fatalf("leader %d after the election, want %d", l, pref)
	}
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		res, err := adm.ElectLeaders(ctx, how, one)
		if err != nil || res["elect"][0].Err != kerr.ElectionNotNeeded {
			t.Fatalf("election %d again: %+v, %v, want ELECTION_NOT_NEEDED", how, res, err)
		}
	}
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"elect": {5: {}}, "nosuch": {0: {}}})
	if err != nil || res["elect"][5].Err != kerr.UnknownTopicOrPartition || res["nosuch"][0].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("unknown partitions: %+v, %v", res, err)
	}
	// Every partition: those that need no election are left out.
	all, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil || len(all["elect"]) != 0 {
		t.Fatalf("all partitions: %+v, %v", all, err)
	}
}

// DescribeProducers, through kadm, lists an idempotent producer (its
// last sequence, no transaction) and a transactional one with its open
// transaction's first offset; a follower answers the same, as Kafka's
// do; an unknown topic is refused.
func TestDescribeProducers(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "prods", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "prods", Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx := c.Client(t, kgo.TransactionalID("prods-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	defer tx.EndTransaction(ctx, kgo.TryAbort)
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "prods", Value: []byte("t")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	d, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"prods": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	p := d["prods"].Partitions[0]
	if p.Err != nil || len(p.ActiveProducers) != 2 {
		t.Fatalf("prods-0: %+v", p)
	}
	ps := p.ActiveProducers.Sorted()
	idem, txn := ps[0], ps[1]
	if idem.CurrentTxnStartOffset >= 0 { // producer ids are not handed out in order
		idem, txn = txn, idem
	}
	if idem.LastSequence != 2 || idem.CurrentTxnStartOffset != -1 || idem.LastTimestamp <= 0 || idem.ProducerEpoch != 0 {
		t.Fatalf("idempotent producer %+v, want last sequence 2, no transaction", idem)
	}
	if txn.LastSequence != 0 || txn.CurrentTxnStartOffset != 3 {
		t.Fatalf("transactional producer %+v, want last sequence 0, transaction from offset 3", txn)
	}

	leader, _ := c.Leader("prods", 0, 10*time.Second)
	follower := leader%3 + 1
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "prods", []int32{0}
	req.Topics = append(req.Topics, rt)
	rt.Topic = "nosuch"
	req.Topics = append(req.Topics, rt)
	eventually(t, 10*time.Second, "the follower's producers", func() bool {
		kresp, err := cl.Broker(int(follower)).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.DescribeProducersResponse)
		if len(resp.Topics) != 2 || resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("follower %d: %+v", follower, resp)
		}
		fp := resp.Topics[0].Partitions[0]
		return fp.ErrorCode == 0 && len(fp.ActiveProducers) == 2 &&
			fp.ActiveProducers[0].CurrentTxnStartOffset+fp.ActiveProducers[1].CurrentTxnStartOffset == 3-1
	})
}

// The admin tools' APIs check Kafka's ACLs: a user with no ACLs sees no
// topic in DescribeTopicPartitions (a named one is refused), and is
// refused DescribeLogDirs, ElectLeaders, DescribeQuorum and
// DescribeClientQuotas (CLUSTER) and
// DescribeProducers (READ on the topic); the super user is not.
func TestAdminToolAPIsACLs(t *testing.T) {
	t.Parallel()
	c, tlsCfg := aclCluster(t, 1)
	admin := userClient(t, c, tlsCfg, "admin", "admin-secret")
	createTopic(t, admin, "acl-a", 1, 1)
	alice := userClient(t, c, tlsCfg, "alice", "alice-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if got, _ := describePages(t, admin, []string{"acl-a"}, 10); len(got) != 1 {
		t.Fatalf("admin: DescribeTopicPartitions %v", got)
	}
	if got, _ := describePages(t, alice, nil, 10); len(got) != 0 {
		t.Fatalf("alice sees partitions %v", got)
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "acl-a"}}
	resp, err := req.RequestWith(ctx, alice)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code ||
		len(resp.Topics[0].Partitions) != 0 || resp.Topics[0].TopicID != ([16]byte{}) {
		t.Fatalf("alice, named topic: %+v, %v", resp, err)
	}

	one := kadm.TopicsSet{"acl-a": {0: {}}}
	if _, err := kadm.NewClient(alice).DescribeAllLogDirs(ctx, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice: DescribeLogDirs %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := kadm.NewClient(alice).ElectLeaders(ctx, kadm.ElectPreferredReplica, one); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice: ElectLeaders %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	pr := kmsg.NewPtrDescribeProducersRequest()
	pr.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "acl-a", Partitions: []int32{0}}}
	// To the node itself: kgo finds no leader for a topic alice may not see.
	kresp, err := alice.Broker(1).Request(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if presp := kresp.(*kmsg.DescribeProducersResponse); presp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice: DescribeProducers %+v", presp)
	}

	qr := kmsg.NewPtrDescribeQuorumRequest()
	qr.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{}}}}
	if qresp, err := qr.RequestWith(ctx, alice); err != nil || qresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice: DescribeQuorum %+v, %v", qresp, err)
	}

	if _, err := kadm.NewClient(alice).DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice: DescribeClientQuotas %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	adm := kadm.NewClient(admin)
	if dirs, err := adm.DescribeAllLogDirs(ctx, one); err != nil || len(dirs) != 1 {
		t.Fatalf("admin: DescribeLogDirs %v, %v", dirs, err)
	}
	if res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, one); err != nil || res["acl-a"][0].Err != kerr.ElectionNotNeeded {
		t.Fatalf("admin: ElectLeaders %+v, %v", res, err)
	}
	if d, err := adm.DescribeProducers(ctx, one); err != nil || d["acl-a"].Partitions[0].Err != nil {
		t.Fatalf("admin: DescribeProducers %+v, %v", d, err)
	}

	// CLUSTER_ACTION, which a node forwarding them holds, is enough for
	// ElectLeaders and DescribeQuorum.
	mustCreateACLs(t, adm, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpClusterAction).
		ResourcePatternType(kadm.ACLPatternLiteral))
	eventually(t, 10*time.Second, "alice's CLUSTER_ACTION", func() bool {
		res, err := kadm.NewClient(alice).ElectLeaders(ctx, kadm.ElectPreferredReplica, one)
		return err == nil && res["acl-a"][0].Err == kerr.ElectionNotNeeded
	})
	if qresp, err := qr.RequestWith(ctx, alice); err != nil || qresp.ErrorCode != 0 || qresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alice with CLUSTER_ACTION: DescribeQuorum %+v, %v", qresp, err)
	}
}

// DescribeQuorum describes the metadata Raft group from its leader, the
// same on every node (the others ask the leader's node): three voters
// that match the leader's log, the controller as leader; another topic
// is unknown.
func TestDescribeQuorum(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quorum := func(node int32, topic string) *kmsg.DescribeQuorumResponse {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		kresp, err := cl.Broker(int(node)).Request(ctx, req)
		if err != nil {
			t.Fatalf("node %d: %v", node, err)
		}
		return kresp.(*kmsg.DescribeQuorumResponse)
	}
	for node := int32(1); node <= 3; node++ {
		eventually(t, 20*time.Second, fmt.Sprintf("node %d's answer", node), func() bool {
			resp := quorum(node, "__cluster_metadata")
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("node %d: %+v", node, resp)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.CurrentVoters) != 3 || p.HighWatermark <= 0 || p.LeaderEpoch <= 0 ||
				p.LeaderID != controllerID(t, cl) || len(resp.Nodes) != 3 {
				t.Logf("node %d: %+v", node, resp)
				return false
			}
			for _, v := range p.CurrentVoters {
				if v.LogEndOffset < p.HighWatermark || v.LastFetchTimestamp <= 0 || v.LastCaughtUpTimestamp <= 0 {
					t.Logf("node %d: voter %+v behind the high watermark %d", node, v, p.HighWatermark)
					return false
				}
			}
			return true
		})
	}
	resp := quorum(1, "other")
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("another topic: %+v", resp)
	}
}

// controllerID is the controller Metadata names.
func controllerID(t *testing.T, cl *kgo.Client) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ControllerID
}

// DescribeClientQuotas, through kadm: a cluster where no quota is set
// describes none; a filter Kafka refuses is refused the same way.
func TestDescribeClientQuotas(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1)
	adm := kadm.NewClient(c.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}})
	if err != nil || len(got) != 0 {
		t.Fatalf("users: %+v, %v", got, err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, true, nil); err != nil {
		t.Fatalf("every entity: %v", err)
	}
	bad := []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: kmsg.QuotasMatchTypeAny}, {Type: "user", MatchType: kmsg.QuotasMatchTypeAny}}
	if _, err := adm.DescribeClientQuotas(ctx, false, bad); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("ip beside user: %v, want INVALID_REQUEST", err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "group", MatchType: kmsg.QuotasMatchTypeAny}}); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("entity type group: %v, want UNSUPPORTED_VERSION", err)
	}
}
