package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// On a 3-node cluster with a classic, a KIP-848 consumer and a share
// group, DescribeGroups answers as Kafka 4.x: at v6 the consumer and the
// share group are GROUP_ID_NOT_FOUND "Group … is not a classic group." and
// an unknown group "Group … not found.", all Dead; at v5 the same three are
// Dead without an error; the classic group is described at both.
func TestDescribeGroupsNonClassicVersions(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, fastConsumerGroups)
	cl := c.Client(t)
	v5 := kversion.Stable()
	v5.SetMaxKeyVersion(kmsg.DescribeGroups.Int16(), 5)
	cl5 := c.Client(t, kgo.MaxVersions(v5))
	createTopic(t, cl, "dg3", 3, 3)

	classic, consumer := joinGroup(t, c, "dg-classic", "dg3"), joinGroup(t, c, "dg-848", "dg3", serverSide...)
	eventually(t, 60*time.Second, "each group's member holds the 3 partitions", func() bool {
		classic.pollRetry(t)
		consumer.pollRetry(t)
		return len(classic.owned()) == 3 && len(consumer.owned()) == 3
	})
	if r := shareHeartbeat(t, cl, "dg-share", "member-s", 0, "dg3"); r.ErrorCode != 0 {
		t.Fatalf("share join: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	describe := func(cl *kgo.Client) map[string]kmsg.DescribeGroupsResponseGroup {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"dg-classic", "dg-848", "dg-share", "dg-absent"}
		out := map[string]kmsg.DescribeGroupsResponseGroup{}
		eventually(t, 30*time.Second, "DescribeGroups answers every group", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := req.RequestWith(ctx, cl)
			if err != nil {
				return false
			}
			for _, g := range r.Groups {
				out[g.Group] = g
			}
			return len(out) == 4 && out["dg-classic"].State == "Stable"
		})
		return out
	}
	for _, g := range []string{"dg-848", "dg-share", "dg-absent"} {
		d5 := describe(cl5)[g]
		if d5.ErrorCode != 0 || d5.State != "Dead" || len(d5.Members) != 0 {
			t.Fatalf("v5 %s: %v state %q members %d, want Dead without an error", g, kerr.ErrorForCode(d5.ErrorCode), d5.State, len(d5.Members))
		}
	}
	d6 := describe(cl)
	for g, msg := range map[string]string{"dg-848": "Group dg-848 is not a classic group.",
		"dg-share": "Group dg-share is not a classic group.", "dg-absent": "Group dg-absent not found."} {
		d := d6[g]
		if d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" || d.ErrorMessage == nil || *d.ErrorMessage != msg {
			t.Fatalf("v6 %s: %v state %q message %v, want GROUP_ID_NOT_FOUND, Dead, %q", g, kerr.ErrorForCode(d.ErrorCode), d.State, d.ErrorMessage, msg)
		}
	}
	if d := describe(cl5)["dg-classic"]; d.ErrorCode != 0 || len(d.Members) != 1 || d.ProtocolType != "consumer" {
		t.Fatalf("v5 classic: %+v", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := kadm.NewClient(cl).DescribeGroups(ctx, "dg-classic", "dg-848")
	if err != nil {
		t.Fatal(err)
	}
	if ds["dg-classic"].Err != nil || len(ds["dg-classic"].Members) != 1 || !errors.Is(ds["dg-848"].Err, kerr.GroupIDNotFound) ||
		ds["dg-848"].ErrMessage != "Group dg-848 is not a classic group." {
		t.Fatalf("kadm: classic %v with %d members; consumer %v %q", ds["dg-classic"].Err, len(ds["dg-classic"].Members), ds["dg-848"].Err, ds["dg-848"].ErrMessage)
	}
}
