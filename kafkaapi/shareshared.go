package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/sharepart"
)

// ShareGroups is an optional capability of a Backend, found by type
// assertion: the share partitions of KIP-932 share groups on the data
// partitions this node leads, and the node's share sessions. Without it
// ShareFetch and ShareAcknowledge answer UNSUPPORTED_VERSION.
type ShareGroups interface {
	// ShareManager holds the node's share partitions; every change it
	// makes is committed to __share_group_state before it returns.
	ShareManager() *sharepart.Manager
	// ShareSessions is the node's share-session cache.
	ShareSessions() *sharepart.Sessions
	// ShareLockDurationMs is share.record.lock.duration.ms.
	ShareLockDurationMs() int32
}

// ShareMembers is an optional capability of a Backend, found by type
// assertion: the share groups' membership, as their group coordinators
// know it. With it, ShareFetch and ShareAcknowledge answer a member its
// group does not have UNKNOWN_MEMBER_ID; without it, any member id is
// served (franz-go's kfake notes that Kafka checks only the id's form).
type ShareMembers interface {
	// ShareMemberKnown reports whether group has member now; an error
	// (COORDINATOR_NOT_AVAILABLE, say) is answered as it is.
	ShareMemberKnown(ctx context.Context, group, member string) (bool, error)
}

// maxShareMemberID is Kafka's bound on a share member id's length.
const maxShareMemberID = 36

// shareGroups returns the backend's ShareGroups, or nil.
func (s *Server) shareGroups() ShareGroups {
	sg, _ := s.backend.(ShareGroups)
	return sg
}

// shareCheck checks a share request's group and member: UNSUPPORTED_VERSION
// without the capability, INVALID_REQUEST for an empty or over-long id,
// GROUP_AUTHORIZATION_FAILED without READ on the group, UNKNOWN_MEMBER_ID
// for a member the group does not have (only if the backend knows the
// membership: ShareMembers).
func (s *Server) shareCheck(ctx context.Context, group, member *string) (ShareGroups, sharepart.SessionKey, error) {
	sg := s.shareGroups()
	switch {
	case sg == nil:
		return nil, sharepart.SessionKey{}, kerr.UnsupportedVersion
	case group == nil || *group == "" || member == nil || *member == "" || len(*member) > maxShareMemberID:
		return nil, sharepart.SessionKey{}, kerr.InvalidRequest
	case !s.authorizeGroup(ctx, acl.OpRead, *group):
		return nil, sharepart.SessionKey{}, kerr.GroupAuthorizationFailed
	}
	if sm, ok := s.backend.(ShareMembers); ok {
		known, err := sm.ShareMemberKnown(ctx, *group, *member)
		switch {
		case err != nil:
			return nil, sharepart.SessionKey{}, err
		case !known:
			return nil, sharepart.SessionKey{}, kerr.UnknownMemberID
		}
	}
	return sg, sharepart.SessionKey{Group: *group, Member: *member}, nil
}

// sharePart is a share partition's data partition resolved for a request.
type sharePart struct {
	key   sharepart.Key
	topic string
	p     Partition
}

// resolveShare finds the local leader replica of a share partition's data
// partition: UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED without READ on
// the topic, NOT_LEADER_OR_FOLLOWER, or the Partition lookup's error.
func (s *Server) resolveShare(ctx context.Context, group string, tp sharepart.TopicPartition) (sharePart, error) {
	topic, ok := s.topicName(tp.TopicID)
	if !ok {
		return sharePart{}, kerr.UnknownTopicID
	}
	if !s.authorizeTopic(ctx, acl.OpRead, topic) {
		return sharePart{}, kerr.TopicAuthorizationFailed
	}
	p, err := s.backend.Partition(topic, tp.Partition)
	if err != nil {
		return sharePart{}, err
	}
	if !p.IsLeader() {
		return sharePart{}, kerr.NotLeaderForPartition
	}
	if err := p.Settle(ctx); err != nil {
		return sharePart{}, err
	}
	key := sharepart.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	return sharePart{key: key, topic: topic, p: p}, nil
}

// shareError maps the share-partition errors to Kafka's codes.
func shareError(err error) error {
	switch {
	case errors.Is(err, sharepart.ErrInvalidRecordState):
		return fmt.Errorf("%w: %w", kerr.InvalidRecordState, err)
	case errors.Is(err, sharepart.ErrInvalidAck), errors.Is(err, sharepart.ErrSessionTooLarge):
		return fmt.Errorf("%w: %w", kerr.InvalidRequest, err)
	case errors.Is(err, sharepart.ErrSessionNotFound), errors.Is(err, sharepart.ErrSessionStale):
		return kerr.ShareSessionNotFound
	case errors.Is(err, sharepart.ErrSessionEpoch):
		return kerr.InvalidShareSessionEpoch
	case errors.Is(err, sharepart.ErrSessionLimit):
		return kerr.ShareSessionLimitReached
	}
	return err
}

// shareAcks is one partition's acknowledgements from a request.
type shareAcks struct {
	tp   sharepart.TopicPartition
	acks []sharepart.Ack
}

// acknowledge applies one partition's acknowledgements (all or none) for
// member; renew allows type 4 (KIP-1222, IsRenewAck).
func (s *Server) acknowledge(ctx context.Context, sg ShareGroups, k sharepart.SessionKey, a shareAcks, renew bool) error {
	if err := shareAckCheck(a, renew); err != nil {
		return err
	}
	sp, err := s.resolveShare(ctx, k.Group, a.tp)
	if err != nil {
		return err
	}
	err = sg.ShareManager().Do(ctx, sp.key, sp.p, func(p *sharepart.Partition, now int64) error {
		return p.AcknowledgeAll(k.Member, a.acks, now)
	})
	return shareError(err)
}

// shareAckCheck refuses type 4 (renew) unless the request renews.
func shareAckCheck(a shareAcks, renew bool) error {
	for _, b := range a.acks {
		if !renew && slices.Contains(b.Types, sharepart.AckRenew) {
			return kerr.InvalidRequest
		}
	}
	return nil
}

// releaseSession releases every record member holds on a closed
// session's partitions this node leads; errors are left to lock expiry.
func (s *Server) releaseSession(ctx context.Context, sg ShareGroups, k sharepart.SessionKey, parts []sharepart.TopicPartition) {
	for _, tp := range parts {
		sp, err := s.resolveShare(ctx, k.Group, tp)
		if err != nil {
			continue
		}
		_ = sg.ShareManager().Do(ctx, sp.key, sp.p, func(p *sharepart.Partition, _ int64) error {
			p.ReleaseMember(k.Member)
			return nil
		})
	}
}

// ackTypes converts wire acknowledge types; an unknown one is left for
// the share partition to refuse.
func ackTypes(ts []int8) []sharepart.AckType {
	out := make([]sharepart.AckType, len(ts))
	for i, t := range ts {
		out[i] = sharepart.AckType(t)
	}
	return out
}

// shareLeader is the leader hint of a partition this node does not lead:
// its leader, epoch and, if live, endpoint.
func (s *Server) shareLeader(ctx context.Context, topicID [16]byte, partition int32) (leader, epoch int32, b *Broker) {
	name, ok := s.topicName(topicID)
	if !ok {
		return -1, -1, nil
	}
	hints := leaderHints{s: s, ctx: ctx}
	leader, epoch = hints.leader(name, partition)
	brokers := hints.brokers()
	if j := slices.IndexFunc(brokers, func(b Broker) bool { return b.NodeID == leader }); j >= 0 {
		b = &brokers[j]
	}
	return leader, epoch, b
}
