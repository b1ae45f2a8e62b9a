package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// kgo's share consumer (kgo.ShareGroup) joins a share group through our
// coordinator: ShareGroupDescribe shows its member, with the member id
// it made, holding every partition of the topic. (Its ShareFetches are
// another part of KIP-932.)
func TestShareGroupKgoMemberJoins(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.GroupShare = groupcoord.ShareConfig{SessionTimeout: 30 * time.Second, HeartbeatInterval: 200 * time.Millisecond}
	})
	cl := c.Client(t)
	createTopic(t, cl, "s2", 2, 1)
	sc := c.Client(t, kgo.ShareGroup("kg"), kgo.ConsumeTopics("s2"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // drives the share consumer; its fetches are not served here
		for ctx.Err() == nil {
			sc.PollFetches(ctx)
		}
	}()
	eventually(t, 30*time.Second, "the kgo member holds both partitions", func() bool {
		g, ok := shareDescribe(t, cl, "kg")
		if !ok || len(g.Members) != 1 || g.Members[0].MemberEpoch < 1 {
			return false
		}
		n := 0
		for _, tp := range g.Members[0].Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
		return n == 2 && g.Members[0].MemberID != ""
	})
}
