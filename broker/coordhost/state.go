package coordhost

import (
	"github.com/minikafka/minikafka-go/broker/replicas"
	"github.com/minikafka/minikafka-go/groupcoord"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/sharepart"
	"github.com/minikafka/minikafka-go/txncoord"
)

// Replica is one of the node's partition replicas (broker/replicas), with
// the node's own State of it.
type Replica = replicas.Replica[State]

// State is the node's own state of a replica, filled as it opens (Attach).
type State struct {
	// view is the materialised view of a __consumer_offsets replica's
	// records (nil for other topics), which its coordinator serves from.
	view *groupcoord.View
	// txnView is the materialised view of a __transaction_state
	// replica's records (nil for other topics).
	txnView *txncoord.View
	// shareView is the materialised view of a __share_group_state
	// replica's records (nil for other topics).
	shareView *sharepart.View
	// verified remembers, while this node leads, the transactions
	// verified to hold the partition (verified.go).
	verified Verified
}

// View is the group view of a __consumer_offsets replica; nil for other
// topics.
func (s *State) View() *groupcoord.View { return s.view }

// TxnView is the transaction view of a __transaction_state replica; nil
// for other topics.
func (s *State) TxnView() *txncoord.View { return s.txnView }

// Verified is the replica's memory of the transactions verified to hold
// the partition while this node leads it.
func (s *State) Verified() *Verified { return &s.verified }

// Attach gives a replica of an internal topic the view its records build,
// and returns the sink that feeds it (the replica host's Deps.Attach).
func Attach(lr *Replica) partition.RecordSink {
	st := lr.Extra()
	switch topic, _ := lr.TopicPartition(); topic {
	case metadata.ConsumerOffsetsTopic:
		st.view = groupcoord.NewView()
		return viewSink{view: st.view, logger: lr.Logger()}
	case metadata.TransactionStateTopic:
		st.txnView = txncoord.NewView()
		return txnViewSink{view: st.txnView, logger: lr.Logger()}
	case metadata.ShareGroupStateTopic:
		st.shareView = sharepart.NewView()
		return shareViewSink{view: st.shareView, logger: lr.Logger()}
	}
	return nil
}
