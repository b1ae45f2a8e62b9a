package kafkaapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// Election types of ElectLeaders v1+ (KIP-460).
const (
	electPreferred = 0
	electUnclean   = 1
)

// electionsInFlight bounds the leadership hand-overs one ElectLeaders
// runs at once.
const electionsInFlight = 8

// startElectLeaders answers ElectLeaders 0-2 as Kafka's controller does
// (ReplicationControlManager.electLeaders): it needs ALTER on the
// cluster, or CLUSTER_ACTION, which the nodes forwarding it to the
// partition's leader hold (Kafka forwards it in an Envelope, with the
// client's principal); each partition named (every partition when the list is null,
// leaving out those answered ELECTION_NOT_NEEDED) is elected within the
// request's timeout. A preferred election hands the leadership to the
// first replica (LeaderElection). An unclean one is not needed while the
// partition has a leader; without one, no replica can be elected outside
// a Raft quorum, so it answers ELIGIBLE_LEADERS_NOT_AVAILABLE, Kafka's
// answer when no replica may lead.
func (s *Server) startElectLeaders(req *kmsg.ElectLeadersRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		var err error
		if !s.authorizeCluster(ctx, acl.OpAlter) && !s.authorizeCluster(ctx, acl.OpClusterAction) {
			err = errClusterAuth
		} else if req.Version > 0 && req.ElectionType != electPreferred && req.ElectionType != electUnclean {
			err = fmt.Errorf("%w: unknown election type %d", kerr.InvalidRequest, req.ElectionType)
		}
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			for _, t := range req.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, electionResult(p, err))
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		ctx, cancel := s.withRequestTimeout(ctx, req.TimeoutMillis)
		defer cancel()
		all := req.Topics == nil
		topics := req.Topics
		view := s.metadataView(ctx, all)
		if all {
			for _, t := range view.Topics {
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic = t.Name
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, p.Partition)
				}
				topics = append(topics, rt)
			}
		}
		errs := s.elect(ctx, view.byName, topics, req.Version > 0 && req.ElectionType == electUnclean)
		for i, t := range topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				if !all || ErrorCode(errs[i][j]) != kerr.ElectionNotNeeded.Code {
					rt.Partitions = append(rt.Partitions, electionResult(p, errs[i][j]))
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// elect runs each partition's election, a few at a time, and returns
// their outcomes in request order.
func (s *Server) elect(ctx context.Context, byName topicByName, topics []kmsg.ElectLeadersRequestTopic, unclean bool) [][]error {
	le, _ := s.backend.(LeaderElection)
	errs := make([][]error, len(topics))
	slots := make(chan struct{}, electionsInFlight)
	var wg sync.WaitGroup
	for i, t := range topics {
		errs[i] = make([]error, len(t.Partitions))
		tv := byName(t.Topic)
		for j, p := range t.Partitions {
			switch {
			case tv == nil || p < 0 || int(p) >= len(tv.Partitions):
				errs[i][j] = kerr.UnknownTopicOrPartition
			case unclean && tv.Partitions[p].Leader >= 0:
				errs[i][j] = kerr.ElectionNotNeeded
			case unclean:
				errs[i][j] = fmt.Errorf("%w: a Raft group elects only from a quorum of its replicas", kerr.EligibleLeadersNotAvailable)
			case le == nil:
				errs[i][j] = kerr.PreferredLeaderNotAvailable
			default:
				slots <- struct{}{}
				wg.Go(func() {
					defer func() { <-slots }()
					errs[i][j] = le.ElectPreferred(ctx, t.Topic, p)
				})
			}
		}
	}
	wg.Wait()
	return errs
}

func electionResult(partition int32, err error) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition = partition
	rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
	return rp
}
