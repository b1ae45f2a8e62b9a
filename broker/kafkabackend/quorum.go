package kafkabackend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/broker/controller"
	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/multiraft"
)

var _ kafkaapi.MetadataQuorum = (*Backend)(nil)

// quorumLeader is the part of the metadata group member that describes
// the group where it leads (*controller.Controller).
type quorumLeader interface {
	Quorum() (controller.Quorum, bool)
}

// Quorum describes the metadata group from its leader: this node's member
// where it leads, else the leader's node through DescribeQuorum.
func (b *Backend) Quorum(ctx context.Context) (kafkaapi.QuorumView, error) {
	if ql, ok := b.deps.Meta.(quorumLeader); ok {
		if q, leads := ql.Quorum(); leads {
			return quorumView(q), nil
		}
	}
	leader := b.deps.Meta.LeaderID()
	if leader < 0 || leader == b.cfg.NodeID {
		return kafkaapi.QuorumView{}, fmt.Errorf("%w: the metadata group has no leader now", kerr.NotLeaderForPartition)
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	kresp, err := b.deps.Coordinators.RequestNode(ctx, leader, req)
	if err != nil {
		return kafkaapi.QuorumView{}, fmt.Errorf("%w: node %d, the metadata leader, did not answer: %v", kerr.RequestTimedOut, leader, err)
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kafkaapi.QuorumView{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kafkaapi.QuorumView{}, fmt.Errorf("%w: node %d answered no partition", kerr.UnknownServerError, leader)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return kafkaapi.QuorumView{}, err
	}
	return kafkaapi.QuorumView{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark,
		Voters: fromReplicaStates(p.CurrentVoters), Observers: fromReplicaStates(p.Observers)}, nil
}

// quorumView turns the leader's view into the front end's: the leader
// has fetched and caught up now; a follower's log end is what it is known
// to match.
func quorumView(q controller.Quorum) kafkaapi.QuorumView {
	now := time.Now().UnixMilli()
	v := kafkaapi.QuorumView{LeaderID: q.Leader, LeaderEpoch: int32(q.Term), HighWatermark: int64(q.Commit)}
	member := func(id int32) kafkaapi.QuorumReplica {
		if id == q.Leader {
			return kafkaapi.QuorumReplica{NodeID: id, LogEndOffset: int64(q.LastIndex), LastFetch: now, LastCaughtUp: now}
		}
		r := kafkaapi.QuorumReplica{NodeID: id, LogEndOffset: -1, LastFetch: -1, LastCaughtUp: -1}
		if i := slices.IndexFunc(q.Followers, func(f multiraft.FollowerProgress) bool { return f.Node == id }); i >= 0 {
			f := q.Followers[i]
			r.LogEndOffset, r.LastFetch, r.LastCaughtUp = int64(f.Match), f.Contact.UnixMilli(), f.CaughtUp.UnixMilli()
		}
		return r
	}
	for _, id := range q.Voters {
		v.Voters = append(v.Voters, member(id))
	}
	for _, id := range q.NonVoters {
		v.Observers = append(v.Observers, member(id))
	}
	return v
}

func fromReplicaStates(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []kafkaapi.QuorumReplica {
	out := make([]kafkaapi.QuorumReplica, len(rs))
	for i, r := range rs {
		out[i] = kafkaapi.QuorumReplica{NodeID: r.ReplicaID, LogEndOffset: r.LogEndOffset,
			LastFetch: r.LastFetchTimestamp, LastCaughtUp: r.LastCaughtUpTimestamp}
	}
	return out
}
