package broker_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// shareHeartbeat sends a ShareGroupHeartbeat v1 through kgo (which finds
// the group's coordinator), retrying what a client retries while a
// coordinator moves; it returns the answer that was not retriable.
func shareHeartbeat(t *testing.T, cl *kgo.Client, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	var resp *kmsg.ShareGroupHeartbeatResponse
	var last error
	defer func() {
		if resp == nil {
			t.Logf("last share heartbeat outcome: %v", last)
		}
	}()
	eventually(t, 60*time.Second, "a share heartbeat answered", func() bool {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = 1
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		last = err
		if errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
			errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.RequestTimedOut) || (err != nil && r == nil) {
			cl.ForceMetadataRefresh() // kgo keeps a halted coordinator until metadata drops it
			return false
		}
		resp = r
		return true
	})
	return resp
}

func shareDescribe(t *testing.T, cl *kgo.Client, group string) (kmsg.ShareGroupDescribeResponseGroup, bool) {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version, req.GroupIDs = 1, []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		cl.ForceMetadataRefresh()
		return kmsg.ShareGroupDescribeResponseGroup{}, false
	}
	return resp.Groups[0], true
}

// sharePartitions counts the partitions of an assignment in a heartbeat.
func sharePartitions(r *kmsg.ShareGroupHeartbeatResponse) []int32 {
	var out []int32
	if r.Assignment != nil {
		for _, tp := range r.Assignment.TopicPartitions {
			out = append(out, tp.Partitions...)
		}
	}
	return out
}

// Two members of a share group on a 3-node cluster split a 3-partition
// topic 2/1 by Kafka's simple assignor; ShareGroupDescribe and ListGroups
// show the group; halting the coordinator (the __consumer_offsets
// partition's leader) keeps the group, its epoch and the members' epochs
// on the new coordinator, without anyone rejoining.
func TestShareGroupHeartbeatDescribeAndFailover(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.GroupShare = groupcoord.ShareConfig{SessionTimeout: 30 * time.Second, HeartbeatInterval: 200 * time.Millisecond}
	})
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "s3", 3, 3)

	a := shareHeartbeat(t, cl, "sg", "member-a", 0, "s3")
	if a.ErrorCode != 0 || a.MemberEpoch != 1 || len(sharePartitions(a)) != 3 || a.HeartbeatIntervalMillis != 200 {
		t.Fatalf("a joins: %v epoch %d partitions %v interval %d", kerr.ErrorForCode(a.ErrorCode), a.MemberEpoch, sharePartitions(a), a.HeartbeatIntervalMillis)
	}
	b := shareHeartbeat(t, cl, "sg", "member-b", 0, "s3")
	a = shareHeartbeat(t, cl, "sg", "member-a", 1)
	pa, pb := sharePartitions(a), sharePartitions(b)
	all := slices.Sorted(slices.Values(append(slices.Clone(pa), pb...)))
	if b.MemberEpoch != 2 || a.MemberEpoch != 2 || len(pa) != 2 || len(pb) != 1 || !slices.Equal(all, []int32{0, 1, 2}) {
		t.Fatalf("a at %d with %v, b at %d with %v: want both at 2, sharing 0-2 as 2/1", a.MemberEpoch, pa, b.MemberEpoch, pb)
	}

	var before kmsg.ShareGroupDescribeResponseGroup
	eventually(t, 30*time.Second, "ShareGroupDescribe shows both members with their partitions", func() bool {
		var ok bool
		before, ok = shareDescribe(t, cl, "sg")
		if !ok || before.GroupState != "Stable" || before.GroupEpoch != 2 || before.Assignor != "simple" || len(before.Members) != 2 {
			return false
		}
		n := 0
		for _, m := range before.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if tp.Topic == "s3" {
					n += len(tp.Partitions)
				}
			}
		}
		return n == 3
	})
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version, lreq.TypesFilter = 5, []string{"share"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	listed, err := lreq.RequestWith(ctx, cl)
	cancel()
	if err != nil || len(listed.Groups) != 1 || listed.Groups[0].Group != "sg" || listed.Groups[0].GroupType != "share" {
		t.Fatalf("ListGroups of type share: %v %+v", err, listed)
	}

	c.HaltNode(int(groupCoordinator(t, adm, "sg")))
	a = shareHeartbeat(t, cl, "sg", "member-a", 2)
	b = shareHeartbeat(t, cl, "sg", "member-b", 2)
	if a.ErrorCode != 0 || b.ErrorCode != 0 || a.MemberEpoch != 2 || b.MemberEpoch != 2 {
		t.Fatalf("after the failover a: %v at %d, b: %v at %d; want both kept at epoch 2",
			kerr.ErrorForCode(a.ErrorCode), a.MemberEpoch, kerr.ErrorForCode(b.ErrorCode), b.MemberEpoch)
	}
	var after kmsg.ShareGroupDescribeResponseGroup
	eventually(t, 30*time.Second, "the new coordinator describes the group", func() bool {
		var ok bool
		after, ok = shareDescribe(t, cl, "sg")
		return ok
	})
	if after.GroupEpoch != before.GroupEpoch || len(after.Members) != 2 ||
		after.Members[0].MemberID != "member-a" || after.Members[1].MemberID != "member-b" {
		t.Fatalf("after the failover: epoch %d members %+v; want epoch %d, a and b", after.GroupEpoch, after.Members, before.GroupEpoch)
	}
	eventually(t, 30*time.Second, "the live replicas' views of the share group are byte-identical", func() bool {
		var first []byte
		nodes := c.Running()
		for i, nd := range nodes {
			snap, ok := nd.GroupViewSnapshot("sg")
			if !ok || (i > 0 && !bytes.Equal(snap, first)) {
				return false
			}
			first = snap
		}
		return len(nodes) == 2
	})
}
