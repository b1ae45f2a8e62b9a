package kafkaapi

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/sharepart"
)

// startShareAcknowledge answers ShareAcknowledge v0-2: acknowledgements
// of records a member acquired, within its share session (an epoch that
// moves the session on, or -1, which closes it after the
// acknowledgements and releases the member's other records). Epoch 0
// cannot open a session here: INVALID_SHARE_SESSION_EPOCH. Each
// partition's acknowledgements are committed to __share_group_state
// before the response is sent.
func (s *Server) startShareAcknowledge(req *kmsg.ShareAcknowledgeRequest) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		fail := func(err error) (kmsg.Response, error) {
			resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), errorMessage(err)
			return resp, nil
		}
		sg, k, err := s.shareCheck(ctx, req.GroupID, req.MemberID)
		if err != nil {
			return fail(err)
		}
		var parts []sharepart.TopicPartition
		switch req.ShareSessionEpoch {
		case 0:
			return fail(kerr.InvalidShareSessionEpoch)
		case -1:
			parts, err = sg.ShareSessions().Close(k)
		default:
			_, err = sg.ShareSessions().Next(k, req.ShareSessionEpoch, nil, nil)
		}
		if err != nil {
			return fail(shareError(err))
		}
		renew := req.Version >= 2 && req.IsRenewAck
		for _, t := range req.Topics {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				a := shareAcks{tp: sharepart.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}}
				for _, b := range p.AcknowledgementBatches {
					a.acks = append(a.acks, sharepart.Ack{First: b.FirstOffset, Last: b.LastOffset, Types: ackTypes(b.AcknowledgeTypes)})
				}
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition = p.Partition
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
				if err := s.acknowledge(ctx, sg, k, a, renew); err != nil {
					rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), errorMessage(err)
					s.ackLeaderHint(ctx, resp, t.TopicID, &rp)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if req.ShareSessionEpoch == -1 {
			s.releaseSession(ctx, sg, k, parts)
		}
		return resp, nil
	}
}

// ackLeaderHint gives a NOT_LEADER_OR_FOLLOWER partition its leader and
// the leader's endpoint.
func (s *Server) ackLeaderHint(ctx context.Context, resp *kmsg.ShareAcknowledgeResponse, topicID [16]byte, rp *kmsg.ShareAcknowledgeResponseTopicPartition) {
	if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
		return
	}
	leader, epoch, b := s.shareLeader(ctx, topicID, rp.Partition)
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
	if b == nil {
		return
	}
	for _, e := range resp.NodeEndpoints {
		if e.NodeID == b.NodeID {
			return
		}
	}
	e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
	e.NodeID, e.Host, e.Port = b.NodeID, b.Host, b.Port
	if b.Rack != "" {
		e.Rack = &b.Rack
	}
	resp.NodeEndpoints = append(resp.NodeEndpoints, e)
}
