package broker

import "github.com/minikafka/minikafka-go/metadata"

// GroupInView reports what this node's replica of group's
// __consumer_offsets partition holds of it: the number of its committed
// offsets and whether the group is known at all; ok is false when the
// node holds no such replica.
func (n *Node) GroupInView(group string) (offsets int, known, ok bool) {
	parts, exists := n.meta.State().TopicPartitions(metadata.ConsumerOffsetsTopic)
	if !exists {
		return 0, false, false
	}
	lr, held := n.reps.Get(metadata.ConsumerOffsetsTopic, metadata.GroupPartition(group, parts))
	if !held || lr.Extra().View() == nil {
		return 0, false, false
	}
	return len(lr.Extra().View().Offsets(group)), lr.Extra().View().HasGroup(group), true
}

// TxnInView reports whether this node's replica of id's
// __transaction_state partition holds id, and its producer id; ok is false
// when the node holds no such replica.
func (n *Node) TxnInView(id string) (producerID int64, known, ok bool) {
	parts, exists := n.meta.State().TopicPartitions(metadata.TransactionStateTopic)
	if !exists {
		return 0, false, false
	}
	lr, held := n.reps.Get(metadata.TransactionStateTopic, metadata.TxnPartition(id, parts))
	if !held || lr.Extra().TxnView() == nil {
		return 0, false, false
	}
	m, known := lr.Extra().TxnView().Txn(id)
	return m.ProducerID, known, true
}
