package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/metadata"
)

// __consumer_offsets is compacted: 300 commits of one group's offset
// leave a handful of records in its partition, and after a full restart
// (every view rebuilt from the cleaned log) the group's offset is the last
// one committed.
func TestConsumerOffsetsCompacted(t *testing.T) {
	fast := func(cfg *broker.Config) { cfg.CleanerBackoff, cfg.CleanInternalTopics = 200*time.Millisecond, true }
	c := testcluster.Start(t, 3, fast)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "oc"); err != nil {
		t.Fatal(err)
	}
	const commits = 300
	for i := range int64(commits) {
		commitSimple(t, adm, "compacted-group", "oc", i+1)
	}
	parts, _ := c.Running()[0].MetadataState().TopicPartitions(metadata.ConsumerOffsetsTopic)
	p := metadata.GroupPartition("compacted-group", parts)
	count := func() int {
		cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			metadata.ConsumerOffsetsTopic: {p: kgo.NewOffset().AtStart()}}))
		defer cl.Close()
		n := 0
		for empty := 0; empty < 2; {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			got := 0
			fs.EachRecord(func(*kgo.Record) { got++ })
			if n += got; got == 0 {
				empty++
			}
		}
		return n
	}
	eventually(t, time.Minute, "the group's commits cleaned away", func() bool { return count() <= 3 })

	restartAll(t, c, 3, fast)
	eventually(t, 30*time.Second, "the offset served after the restart", func() bool {
		offsets, err := adm.FetchOffsets(ctx, "compacted-group")
		if err != nil || offsets.Error() != nil {
			return false
		}
		o, ok := offsets.Lookup("oc", 0)
		if ok && o.At != commits {
			t.Fatalf("after the restart the group's offset is %d, want %d", o.At, commits)
		}
		return ok
	})
}
