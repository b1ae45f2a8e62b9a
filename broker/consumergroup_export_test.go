package broker

import "github.com/minikafka/minikafka-go/metadata"

// GroupViewSnapshot is this node's replica of group's __consumer_offsets
// partition, as its View's snapshot bytes; ok is false when the node
// holds no such replica.
func (n *Node) GroupViewSnapshot(group string) (snapshot []byte, ok bool) {
	parts, exists := n.meta.State().TopicPartitions(metadata.ConsumerOffsetsTopic)
	if !exists {
		return nil, false
	}
	lr, held := n.reps.Get(metadata.ConsumerOffsetsTopic, metadata.GroupPartition(group, parts))
	if !held || lr.Extra().View() == nil {
		return nil, false
	}
	return lr.Extra().View().AppendSnapshot(nil), true
}
