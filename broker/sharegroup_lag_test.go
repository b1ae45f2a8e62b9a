package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupOffsetsLag: on 3 nodes, DescribeShareGroupOffsets
// answers each share partition's lag as Kafka does, the records not yet
// done with: the high watermark (read from each partition's leader, most
// of them on other nodes) less the start offset less the accepted and
// rejected records past it. Released and in-flight records still lag.
// Every node answers the same, and so does kadm.
func TestShareGroupOffsetsLag(t *testing.T) {
	t.Parallel()
	c, cl, id, leaders := shareCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := newShareMember(t, cl, "m", id)
	held := map[int32]map[int64]shareRec{0: {}, 1: {}, 2: {}}
	eventually(t, 30*time.Second, "all 30 records acquired", func() bool {
		for _, r := range m.fetchAll(ctx, leaders, 50, 100*time.Millisecond) {
			held[r.p][r.off] = r
		}
		return len(held[0])+len(held[1])+len(held[2]) == 30
	})
	const accept, release, reject = 1, 2, 3
	ack := func(p int32, typ int8, offs ...int64) {
		t.Helper()
		for _, off := range offs {
			wantAckCode(t, m.ack(ctx, leaders[p], typ, held[p][off]), 0)
		}
	}
	// Partition 0: 0-2 accepted (the start moves to 3), 4 released, 5 and
	// 6 accepted and 8 rejected past the start; 3, 7 and 9 still held.
	// Lag 10 - 3 - 3: offsets 3, 4, 7 and 9.
	ack(0, accept, 0, 1, 2, 5, 6)
	ack(0, release, 4)
	ack(0, reject, 8)
	// Partition 1: everything accepted, lag 0. Partition 2: nothing done,
	// lag 10.
	ack(1, accept, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	want := map[int32][2]int64{0: {3, 4}, 1: {10, 0}, 2: {0, 10}} // start, lag

	for node := range int32(3) {
		node++
		var ps []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition
		eventually(t, 30*time.Second, "DescribeShareGroupOffsets answered", func() bool {
			req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			req.Version = 1
			rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			rg.GroupID = "sg"
			req.Groups = append(req.Groups, rg)
			resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
			if err != nil || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
				return false
			}
			ps = resp.Groups[0].Topics[0].Partitions
			for _, p := range ps {
				if p.ErrorCode != 0 {
					return false
				}
			}
			return true
		})
		for _, p := range ps {
			if w := want[p.Partition]; p.StartOffset != w[0] || p.Lag != w[1] {
				t.Fatalf("node %d, p%d (leader %d): start %d lag %d, want start %d lag %d", node, p.Partition, leaders[p.Partition], p.StartOffset, p.Lag, w[0], w[1])
			}
		}
	}

	adm := kadm.NewClient(c.Client(t))
	var desc kadm.DescribedShareGroupsOffsets
	eventually(t, 30*time.Second, "kadm DescribeShareGroupOffsets answered", func() bool {
		var err error
		desc, err = adm.DescribeShareGroupOffsets(ctx, "sg")
		return err == nil && desc["sg"].Err == nil
	})
	for p, w := range want {
		if o, ok := desc["sg"].Offsets.Lookup("sq", p); !ok || o.Err != nil || o.StartOffset != w[0] || o.Lag != w[1] {
			t.Fatalf("kadm p%d: %+v (found %v), want start %d lag %d", p, o, ok, w[0], w[1])
		}
	}
}
