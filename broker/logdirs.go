package broker

import (
	"cmp"
	"path/filepath"
	"slices"

	"github.com/minikafka/minikafka-go/kafkaapi"
)

// logDirs is the node's one log directory, its data_dir, for
// DescribeLogDirs: the data disk's total and free bytes, and every local
// replica's log size. Its offset lag is 0: a replica's log holds only
// entries its state machine applied, so its end is its high watermark.
// A Raft log store that failed makes the directory KAFKA_STORAGE_ERROR.
func (n *Node) logDirs() []kafkaapi.LogDir {
	path, err := filepath.Abs(n.cfg.DataDir)
	if err != nil {
		path = n.cfg.DataDir
	}
	d := kafkaapi.LogDir{Path: path, TotalBytes: -1, UsableBytes: -1}
	if n.disk != nil {
		st := n.disk.State()
		d.TotalBytes, d.UsableBytes = st.Total, st.Free
	}
	if n.host != nil {
		d.Err = n.host.LogStoreErr()
	}
	if n.reps != nil {
		for _, r := range n.reps.All() {
			topic, p := r.TopicPartition()
			d.Replicas = append(d.Replicas, kafkaapi.ReplicaSize{Topic: topic, Partition: p, Size: r.Partition().LogSize()})
		}
	}
	slices.SortFunc(d.Replicas, func(a, b kafkaapi.ReplicaSize) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return []kafkaapi.LogDir{d}
}
