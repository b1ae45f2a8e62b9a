package kafkabackend

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/metadata"
)

// condMeta is a stateMeta whose WaitFor counts the allocations of one
// check of its condition against the state.
type condMeta struct {
	stateMeta
	allocs *float64
	held   *bool
}

func (m condMeta) WaitFor(_ context.Context, cond func(*metadata.Snapshot) bool) (*metadata.Snapshot, error) {
	*m.held = cond(m.s)
	*m.allocs = testing.AllocsPerRun(10, func() { cond(m.s) })
	return m.s, nil
}

// CreateTopics waits for the new topics' leaders by checking the state on
// every metadata change, thousands of them while a big topic's leaders
// report: a check copies nothing (it once copied every named topic).
func TestWaitTopicLeadersChecksWithoutCopies(t *testing.T) {
	b := leaderBackend(t, 2000) // "big": a quarter of its partitions without a leader
	var allocs float64
	var held bool
	b.deps.Meta = condMeta{stateMeta: b.deps.Meta.(stateMeta), allocs: &allocs, held: &held}
	b.WaitTopicLeaders(t.Context(), []string{"big"})
	if held {
		t.Fatal("the leaders of a topic with unled partitions were taken as known")
	}
	if allocs != 0 {
		t.Fatalf("one check of a 2000-partition topic's leaders allocated %v times", allocs)
	}
}

// DescribeConfigs and AlterConfigs read a topic's configs: what that costs
// does not grow with its partitions (it once copied every partition).
func TestTopicConfigsCostNoPartitions(t *testing.T) {
	allocs := func(n int) float64 {
		b := leaderBackend(t, n)
		if _, err := b.TopicConfigs("big"); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(10, func() { _, _ = b.TopicConfigs("big") })
	}
	if small, big := allocs(2), allocs(2000); big > small {
		t.Fatalf("a topic's configs: %v allocations with 2000 partitions, %v with 2", big, small)
	}
	if _, err := leaderBackend(t, 2).TopicConfigs("nope"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("configs of a topic that does not exist: %v", err)
	}
}
