package testcluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/broker"
)

// StuckMove starts 4 nodes with topic "moving" (1 partition, 3 replicas)
// and a reassignment that cannot finish: the partition moves its first
// replica to spare, the node that held none, which is stopped first. It
// returns the cluster, the partition's replicas before the move and spare.
func StuckMove(t testing.TB) (c *Cluster, replicas []int32, spare int32) {
	t.Helper()
	c = Start(t, 4, func(cfg *broker.Config) { cfg.DefaultReplicationFactor = 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "moving"); err != nil {
		t.Fatal(err)
	}
	for len(replicas) != 3 && ctx.Err() == nil {
		if md, err := adm.Metadata(ctx, "moving"); err == nil {
			if p, ok := md.Topics["moving"].Partitions[0]; ok {
				replicas = p.Replicas
			}
		}
	}
	if len(replicas) != 3 {
		t.Fatalf("topic moving has replicas %v, want 3", replicas)
	}
	for spare = 1; slices.Contains(replicas, spare); spare++ {
	}
	c.StopNode(int(spare))
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moving", 0, []int32{spare, replicas[1], replicas[2]})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res["moving"][0].Err != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res)
	}
	return c, replicas, spare
}
