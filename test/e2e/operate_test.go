package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/client"
)

// Operating a cluster under load (issue 17): growing it and moving
// partitions onto the new node with kadm, decommissioning a node, and a
// node lost for good replaced without operator action. Each ends with the
// checker: nothing acknowledged lost or duplicated, and every partition's
// replicas (wherever they now are) byte-identical.

// startClusterOf starts nodes nodes, initial of them at once.
func startClusterOf(ctx context.Context, t *testing.T, nodes, initial int, args ...string) *Cluster {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := Start(sctx, t, Options{Binary: nodeBinary, Args: args, Nodes: nodes, Initial: initial})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	return c
}

// awaitNoMoves waits until no partition of the cluster, internal ones
// included, is moving, and returns when that was seen.
func awaitNoMoves(ctx context.Context, t *testing.T, adm *kadm.Client) time.Time {
	t.Helper()
	for {
		if n, err := movesInProgress(ctx, adm); err == nil && n == 0 {
			return time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("partitions still moving: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// movesInProgress counts the moves in progress of every topic (kadm asks
// about the partitions it names).
func movesInProgress(ctx context.Context, adm *kadm.Client) (int, error) {
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return 0, err
	}
	set := kadm.TopicsSet{}
	for _, td := range topics {
		for _, p := range td.Partitions {
			set.Add(td.Topic, p.Partition)
		}
	}
	l, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return 0, err
	}
	return len(l.Sorted()), nil
}

func kadmFor(t *testing.T, seeds []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestGrowAndReassignUnderLoad grows three nodes to four under produce
// load and moves half the partitions onto the new node with kadm; the
// long run goes on moving pairs of partitions to the node that lacks them.
func TestGrowAndReassignUnderLoad(t *testing.T) {
	ctx := testContext(t, 6*time.Minute)
	c := startClusterOf(ctx, t, 4, 3)
	const topic = "grow"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 4, 100)
	must(t, c.StartNode(ctx, 4))
	must(t, c.WaitReady(ctx, topic))
	adm := kadmFor(t, c.Seeds())
	for i := range rounds(1, 6) {
		before, err := c.ReplicaSets(ctx, topic)
		must(t, err)
		req := kadm.AlterPartitionAssignmentsReq{}
		moved := map[int32]int{} // partition -> the node it moves onto
		for _, p := range []int32{int32(2*i) % 4, int32(2*i+1) % 4} {
			target := slices.Clone(before[p])
			for id := 1; id <= 4; id++ {
				if !slices.Contains(target, id) {
					moved[p] = id
				}
			}
			target[0] = moved[p] // it takes the first replica's place, preferred leadership included
			req.Assign(topic, p, toInt32s(target))
		}
		from := time.Now()
		res, err := adm.AlterPartitionAssignments(ctx, req)
		must(t, err)
		res.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
			if r.Err != nil {
				t.Fatalf("%s[%d]: %v %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
			}
		})
		l.sum.Fault("reassign")
		to := awaitNoMoves(ctx, t, adm)
		p99 := l.sum.Moved("reassign", from, to, l.h.Attempts())
		t.Logf("moved %v in %v; produce p99 meanwhile %v", moved, to.Sub(from).Round(time.Millisecond), p99.Round(time.Millisecond))
		awaitReplicaSets(ctx, t, c, topic, func(sets map[int32][]int) bool {
			for p, id := range moved {
				if !slices.Contains(sets[p], id) || slices.Contains(sets[p], before[p][0]) || len(sets[p]) != 3 {
					return false
				}
			}
			return true
		})
		must(t, l.w.WaitAcked(ctx, -1, time.Now(), 50))
	}
	l.finish(ctx, t)
}

// TestDecommissionUnderLoad drains a node of a four-node cluster under
// load (client.PlanDrain, as minikafka node decommission does), stops it,
// and checks that nothing names it and nothing was lost.
func TestDecommissionUnderLoad(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	c := startClusterOf(ctx, t, 4, 4)
	const topic = "drain"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 4, 100)
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	must(t, err)
	defer adm.Close()
	const gone = 2
	cluster, err := adm.DescribeCluster(ctx)
	must(t, err)
	moves, err := client.PlanDrain(cluster, gone)
	must(t, err)
	from := time.Now()
	must(t, adm.Reassign(ctx, moves...))
	l.sum.Fault("decommission")
	to := awaitNoMoves(ctx, t, kadmFor(t, c.Seeds()))
	p99 := l.sum.Moved("decommission", from, to, l.h.Attempts())
	t.Logf("drained node %d (%d partitions) in %v; produce p99 meanwhile %v", gone, len(moves), to.Sub(from).Round(time.Millisecond), p99.Round(time.Millisecond))
	after := awaitReplicaSets(ctx, t, c, topic, func(sets map[int32][]int) bool { return replacedEverywhere(sets, gone) })
	waitGone(ctx, t, c, gone, topic, len(after))
	must(t, c.Stop(ctx, gone))
	must(t, l.w.WaitAcked(ctx, -1, time.Now(), 50))
	l.finish(ctx, t)
}

// TestNodeLostForGood kills -9 a node of four and deletes its data: within
// node_unavailable_timeout every partition it held is back to three
// replicas on the others, without operator action. The long run starts
// five nodes and loses two, one after the other.
func TestNodeLostForGood(t *testing.T) {
	ctx := testContext(t, 6*time.Minute)
	nodes, losses := rounds(4, 5), rounds(1, 2)
	c := startClusterOf(ctx, t, nodes, nodes, "--node-unavailable-timeout", "3s")
	const topic = "lost"
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: topic}, 4, 100)
	adm := kadmFor(t, c.Seeds())
	for range losses {
		before, err := c.ReplicaSets(ctx, topic)
		must(t, err)
		gone := before[0][1] // a follower of partition 0
		from := time.Now()
		must(t, c.Kill(gone))
		must(t, os.RemoveAll(c.Node(gone).DataDir))
		l.sum.Fault("node-lost")
		awaitReplaced(ctx, t, c, topic, gone)
		to := awaitNoMoves(ctx, t, adm)
		p99 := l.sum.Moved("replace", from, to, l.h.Attempts())
		t.Logf("node %d replaced %v after its kill; produce p99 meanwhile %v", gone, to.Sub(from).Round(time.Millisecond), p99.Round(time.Millisecond))
		must(t, l.w.WaitAcked(ctx, -1, time.Now(), 50))
	}
	l.finish(ctx, t)
}

// awaitReplaced waits until no partition of topic names gone and each has
// three replicas.
func awaitReplaced(ctx context.Context, t *testing.T, c *Cluster, topic string, gone int) {
	t.Helper()
	awaitReplicaSets(ctx, t, c, topic, func(sets map[int32][]int) bool { return replacedEverywhere(sets, gone) })
}

// awaitReplicaSets waits, up to 90 s, until every running node's Metadata
// shows replicas of topic's partitions for which ok holds (a node's copy
// of the metadata may lag the one that answered that no move is left),
// and returns them.
func awaitReplicaSets(ctx context.Context, t *testing.T, c *Cluster, topic string, ok func(map[int32][]int) bool) map[int32][]int {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var sets map[int32][]int
	for {
		if sets = c.agreedReplicaSets(rctx, topic); sets != nil && ok(sets) {
			return sets
		}
		select {
		case <-rctx.Done():
			t.Fatalf("replicas of %s not as expected: %v", topic, sets)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// replacedEverywhere reports whether no partition names node and each
// has three replicas.
func replacedEverywhere(sets map[int32][]int, node int) bool {
	for _, rs := range sets {
		if len(rs) != 3 || slices.Contains(rs, node) {
			return false
		}
	}
	return len(sets) > 0
}

// waitGone waits until node holds no replica directory of topic's
// partitions: it removed what it no longer holds.
func waitGone(ctx context.Context, t *testing.T, c *Cluster, node int, topic string, partitions int) {
	t.Helper()
	err := poll(ctx, fmt.Sprintf("node %d to remove its replicas of %s", node, topic), func() (bool, error) {
		for p := range int32(partitions) {
			if _, err := os.Stat(ReplicaDir(c.Node(node).DataDir, topic, p)); err == nil {
				return false, nil
			}
		}
		return true, nil
	})
	must(t, err)
}

func toInt32s(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}
