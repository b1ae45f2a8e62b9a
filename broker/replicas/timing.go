package replicas

import (
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// The internal topics' groups (coordinators' records: offsets, transaction
// states, share states) hold small entries, thousands of them per MiB. By
// raft's counts of a data partition (TrailingLogs 2048, a snapshot each
// SnapshotThreshold 4096) each such group held up to a MiB of entries in
// the node's shared log store: sixteen transaction-state groups filled the
// log budget, made the data partition trim in small steps and reached
// sstables, where compactions rewrote them (docs/performance.md,
// "Coordinator logs"). Their snapshot is small and so is the log a lagging
// follower would be sent, so they keep fewer.
const (
	internalSnapshotThreshold = 256
	internalTrailingLogs      = 64
)

// timingFor is the Raft timing of a partition of topic: t, with the
// counts of an internal topic bounded as above.
func timingFor(topic string, t multiraft.Timing) multiraft.Timing {
	if metadata.IsInternal(topic) {
		t.SnapshotThreshold = min(t.SnapshotThreshold, internalSnapshotThreshold)
		t.TrailingLogs = min(t.TrailingLogs, internalTrailingLogs)
	}
	return t
}
