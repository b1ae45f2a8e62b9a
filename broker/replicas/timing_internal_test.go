package replicas

import (
	"testing"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// Internal topics' groups keep few small entries; a data partition keeps
// the configured counts, and a configured count below the internal bound
// stays.
func TestTimingForInternalTopics(t *testing.T) {
	base := multiraft.DefaultTiming()
	for _, topic := range []string{metadata.TransactionStateTopic, metadata.ConsumerOffsetsTopic, metadata.ShareGroupStateTopic} {
		got := timingFor(topic, base)
		if got.SnapshotThreshold != internalSnapshotThreshold || got.TrailingLogs != internalTrailingLogs {
			t.Errorf("%s: snapshot threshold %d, trailing logs %d; want %d, %d", topic,
				got.SnapshotThreshold, got.TrailingLogs, internalSnapshotThreshold, internalTrailingLogs)
		}
		if got.SnapshotBytes != base.SnapshotBytes || got.HeartbeatTimeout != base.HeartbeatTimeout {
			t.Errorf("%s: other settings changed: %+v", topic, got)
		}
	}
	if got := timingFor("orders", base); got != base {
		t.Errorf("a data partition's timing changed: %+v, want %+v", got, base)
	}
	low := base
	low.SnapshotThreshold, low.TrailingLogs = 16, 4
	if got := timingFor(metadata.TransactionStateTopic, low); got != low {
		t.Errorf("configured counts below the bound changed: %+v, want %+v", got, low)
	}
}
