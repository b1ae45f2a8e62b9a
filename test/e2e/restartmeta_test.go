package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

// TestRestartedNodeNeverDeniesATopic kills -9 a node, creates a topic
// while it is down, and restarts it, round after round, while a poller
// asks the restarted node for every topic made so far every 20 ms from
// the moment its process starts. A node must not answer before its
// metadata has caught up: no answer may say that an existing topic does
// not exist, or give it a zero id (before b3b2ffc a restarted node did
// for 100-300 ms).
func TestRestartedNodeNeverDeniesATopic(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	c := startCluster(ctx, t)
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...), client.RequestTimeout(10*time.Second))
	must(t, err)
	defer adm.Close()
	topics := []string{"before-any-restart"}
	must(t, adm.CreateTopic(ctx, topics[0], 1, 3, nil))
	must(t, c.WaitReady(ctx, topics[0]))

	answers := 0
	for round := range rounds(3, 9) {
		id := 1 + round%3
		must(t, c.Kill(id))
		topic := fmt.Sprintf("made-while-%d-down-%d", id, round)
		must(t, adm.CreateTopic(ctx, topic, 1, 2, nil))
		topics = append(topics, topic)

		pctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var n int
		var denied []string
		wg.Go(func() { n, denied = pollTopics(pctx, c, id, topics) })
		err := c.StartNode(ctx, id)
		time.Sleep(2 * time.Second) // answers after the first, too
		stop()
		wg.Wait()
		must(t, err)
		if len(denied) > 0 {
			t.Fatalf("round %d: restarted node %d denied existing topics in %d of %d answers, first: %s", round, id, len(denied), n, denied[0])
		}
		if n == 0 {
			t.Fatalf("round %d: restarted node %d never answered Metadata", round, id)
		}
		answers += n
		must(t, c.WaitReady(ctx, topics...))
	}
	t.Logf("%d Metadata answers of restarted nodes, none denying a topic", answers)
}

// pollTopics asks node id for topics every 20 ms until ctx ends, and
// returns how many answers came and a description of each that did not
// describe every topic with its id (refused connections, which a node
// that has not opened its port yet gives, are not answers).
func pollTopics(ctx context.Context, c *Cluster, id int, topics []string) (answers int, denied []string) {
	for ctx.Err() == nil {
		if md, err := c.Metadata(ctx, id, topics...); err == nil {
			answers++
			for _, rt := range md.Topics {
				if rt.ErrorCode != 0 || rt.TopicID == [16]byte{} {
					name := ""
					if rt.Topic != nil {
						name = *rt.Topic
					}
					denied = append(denied, fmt.Sprintf("topic %q: error %d, id %x", name, rt.ErrorCode, rt.TopicID))
				}
			}
			if len(md.Topics) != len(topics) {
				denied = append(denied, fmt.Sprintf("%d topics answered of %d", len(md.Topics), len(topics)))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return answers, denied
}
