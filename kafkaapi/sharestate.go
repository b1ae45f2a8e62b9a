package kafkaapi

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// ShareStates is an optional capability of a Backend, found by type
// assertion: this node's share coordinator, the __share_group_state
// partitions it leads, which the data partitions' leaders on other nodes
// read and write with ReadShareGroupState and WriteShareGroupState.
// Without it those answer UNSUPPORTED_VERSION.
type ShareStates interface {
	// ShareStateRead returns key's snapshot (false if none was written)
	// for the data partition's leader of leaderEpoch (-1: none), whose
	// predecessors' writes it fences from then on. Errors:
	// kerr.NotCoordinator if this node does not lead key's partition,
	// kerr.CoordinatorLoadInProgress.
	ShareStateRead(ctx context.Context, key sharepart.Key, leaderEpoch int32) (sharepart.Snapshot, bool, error)
	// ShareStateWrite commits s as key's snapshot. Errors as
	// ShareStateRead, and kerr.FencedLeaderEpoch, kerr.FencedStateEpoch
	// for a snapshot older than the stored one.
	ShareStateWrite(ctx context.Context, key sharepart.Key, s sharepart.Snapshot) error
}

// shareStates is the backend's ShareStates for an inter-node request:
// UNSUPPORTED_VERSION without it, CLUSTER_AUTHORIZATION_FAILED without
// CLUSTER_ACTION.
func (s *Server) shareStates(ctx context.Context) (ShareStates, error) {
	st, _ := s.backend.(ShareStates)
	switch {
	case st == nil:
		return nil, kerr.UnsupportedVersion
	case !s.authorizeCluster(ctx, acl.OpClusterAction):
		return nil, kerr.ClusterAuthorizationFailed
	}
	return st, nil
}

// startReadShareGroupState answers ReadShareGroupState v0, an inter-node
// request (CLUSTER_ACTION). A share partition with no state is answered
// with StartOffset -1. Like a write, it runs as it arrives (startAsync):
// data partitions' leaders send many on one connection, and one held at
// a loading or moving coordinator must not hold those behind it.
func (s *Server) startReadShareGroupState(req *kmsg.ReadShareGroupStateRequest, rc requestInfo) responder {
	return s.startAsync(rc, kmsg.ReadShareGroupState, func(ctx context.Context, _ func(func() error) error) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		st, fail := s.shareStates(ctx)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.StartOffset = p.Partition, -1
				err := fail
				if err == nil {
					var snap sharepart.Snapshot
					var ok bool
					snap, ok, err = st.ShareStateRead(ctx, sharepart.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, p.LeaderEpoch)
					rp.StateEpoch = snap.StateEpoch
					if ok {
						rp.StartOffset = snap.StartOffset
						for _, b := range snap.Batches {
							rb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
							rb.FirstOffset, rb.LastOffset, rb.DeliveryState, rb.DeliveryCount = b.First, b.Last, int8(b.State), b.DeliveryCount
							rp.StateBatches = append(rp.StateBatches, rb)
						}
					}
				}
				rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	})
}

// startWriteShareGroupState answers WriteShareGroupState v0-1, an
// inter-node request (CLUSTER_ACTION): each partition's state batches
// are its whole snapshot. It runs as it arrives (startAsync), as each
// write waits for a commit.
func (s *Server) startWriteShareGroupState(req *kmsg.WriteShareGroupStateRequest, rc requestInfo) responder {
	return s.startAsync(rc, kmsg.WriteShareGroupState, func(ctx context.Context, _ func(func() error) error) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		st, fail := s.shareStates(ctx)
		for _, t := range req.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				err := fail
				if err == nil {
					snap := sharepart.Snapshot{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
					for _, b := range p.StateBatches {
						snap.Batches = append(snap.Batches, sharepart.Batch{First: b.FirstOffset, Last: b.LastOffset, State: sharepart.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
					}
					err = snap.Check()
					if err != nil {
						err = fmt.Errorf("%w: %w", kerr.InvalidRequest, err)
					} else {
						err = st.ShareStateWrite(ctx, sharepart.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}, snap)
					}
				}
				rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	})
}

// startShareAPI starts a request of the share-group APIs, or returns nil
// if req is of another API.
func (s *Server) startShareAPI(req kmsg.Request, rc requestInfo) responder {
	switch req := req.(type) {
	case *kmsg.ShareFetchRequest:
		return s.startShareFetch(req, rc)
	case *kmsg.ShareAcknowledgeRequest:
		return s.startShareAcknowledge(req)
	case *kmsg.ReadShareGroupStateRequest:
		return s.startReadShareGroupState(req, rc)
	case *kmsg.WriteShareGroupStateRequest:
		return s.startWriteShareGroupState(req, rc)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return s.startDescribeShareGroupOffsets(req)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return s.startAlterShareGroupOffsets(req)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return s.startDeleteShareGroupOffsets(req)
	}
	return nil
}

// ShareState is a share partition's persisted state as read for an
// admin: OK is false when it has none.
type ShareState struct {
	Snapshot sharepart.Snapshot
	OK       bool
	Err      error
}

// ShareOffsets is an optional capability of a Backend, found by type
// assertion: the persisted state of a share group's share partitions,
// wherever their share coordinators are, for DescribeShareGroupOffsets.
type ShareOffsets interface {
	// ReadShareStates reads group's share partitions tps, answering in
	// their order.
	ReadShareStates(ctx context.Context, group string, tps []sharepart.TopicPartition) []ShareState
	// ResetShareStates makes each of group's share partitions tps start
	// again at starts[i], or have no state for -1, forgetting every
	// record's state; it answers an error for each, in their order.
	ResetShareStates(ctx context.Context, group string, tps []sharepart.TopicPartition, starts []int64) []error
	// LatestOffsets asks the leaders of parts for their high watermarks,
	// as Kafka's group coordinator does for a share partition's lag
	// (ListOffsets LATEST, read_uncommitted): at most one request per
	// leader node. It answers in parts' order.
	LatestOffsets(ctx context.Context, parts []TopicPartition) []LatestOffset
}

// LatestOffset is a partition's high watermark, or why it is unknown.
type LatestOffset struct {
	Offset int64
	Err    error
}
