package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// metadataTopic is Kafka's name for the metadata log, whose partition 0
// DescribeQuorum describes; here it stands for the metadata Raft group.
const metadataTopic = "__cluster_metadata"

// startDescribeQuorum answers DescribeQuorum 0-2 for the metadata group
// (MetadataQuorum), as Kafka's KafkaRaftClient does: DESCRIBE on the
// cluster (or CLUSTER_ACTION, which nodes asking the leader's node hold); a request for anything but __cluster_metadata-0 answers
// UNKNOWN_TOPIC_OR_PARTITION for each partition it names; no leader
// answers NOT_LEADER_OR_FOLLOWER. Offsets are Raft log indexes, the
// epoch is the group's term; v2's nodes carry each member's Kafka
// listeners (a node has no separate controller listener).
func (s *Server) startDescribeQuorum(req *kmsg.DescribeQuorumRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		if !s.authorizeCluster(ctx, acl.OpDescribe) && !s.authorizeCluster(ctx, acl.OpClusterAction) {
			resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, errorMessage(errClusterAuth)
			return resp, nil
		}
		if len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopic ||
			len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
			for _, t := range req.Topics {
				rt := kmsg.NewDescribeQuorumResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, quorumPartitionError(p.Partition, kerr.UnknownTopicOrPartition))
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = metadataTopic
		q, err := s.quorum(ctx)
		if err != nil {
			rt.Partitions = append(rt.Partitions, quorumPartitionError(0, err))
			resp.Topics = append(resp.Topics, rt)
			return resp, nil
		}
		rp := kmsg.NewDescribeQuorumResponseTopicPartition()
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = q.LeaderID, q.LeaderEpoch, q.HighWatermark
		rp.CurrentVoters, rp.Observers = replicaStates(q.Voters), replicaStates(q.Observers)
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		resp.Nodes = s.quorumNodes(ctx, q)
		return resp, nil
	}
}

// quorum asks the backend for the metadata group within the request
// timeout.
func (s *Server) quorum(ctx context.Context) (QuorumView, error) {
	mq, ok := s.backend.(MetadataQuorum)
	if !ok {
		return QuorumView{}, kerr.NotLeaderForPartition
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	return mq.Quorum(ctx)
}

func quorumPartitionError(partition int32, err error) kmsg.DescribeQuorumResponseTopicPartition {
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = partition, ErrorCode(err), errorMessage(err)
	return rp
}

func replicaStates(rs []QuorumReplica) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(rs))
	for _, r := range rs {
		st := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		st.ReplicaID, st.LogEndOffset = r.NodeID, r.LogEndOffset
		st.LastFetchTimestamp, st.LastCaughtUpTimestamp = r.LastFetch, r.LastCaughtUp
		out = append(out, st)
	}
	return out
}

// quorumNodes are the listeners of the group's members that the cluster
// view lists.
func (s *Server) quorumNodes(ctx context.Context, q QuorumView) []kmsg.DescribeQuorumResponseNode {
	byID := map[int32]Broker{}
	for _, b := range onConnListener(ctx, s.clusterBrokers()).Brokers {
		byID[b.NodeID] = b
	}
	var out []kmsg.DescribeQuorumResponseNode
	for _, r := range append(append([]QuorumReplica(nil), q.Voters...), q.Observers...) {
		b, ok := byID[r.NodeID]
		if !ok {
			continue
		}
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = r.NodeID
		for _, e := range b.Endpoints {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = e.Listener, e.Host, uint16(e.Port)
			n.Listeners = append(n.Listeners, l)
		}
		out = append(out, n)
	}
	return out
}
