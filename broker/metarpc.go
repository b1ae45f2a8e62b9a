package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/internal/frame"
	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/multiraft"
)

// The metadata group accepts proposals only on its leader. Any node that
// needs a metadata change (create a topic, allocate a producer id, report a
// partition leader) forwards the encoded command to the leader on a stream
// of the Raft port's service "rpc/meta", one request per stream, each a
// frame (internal/frame):
//
//	request:  metadata.Encode(command)
//	response: JSON metaReply
//
// The rate is low (topic creations and producer starts), so no stream is
// kept between calls.
const metaRPCService = "rpc/meta"

// metaReply is what the leader answers to a forwarded command.
type metaReply struct {
	// Index is the Raft index at which the command was applied; the
	// caller waits until its own copy has applied it, then reads its
	// local state.
	Index uint64 `json:"index"`
	// Code is a Kafka error code (0 = none) and Message its detail.
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
	// ProducerID and Epoch answer AllocateProducerID.
	ProducerID int64 `json:"producer_id,omitempty"`
	Epoch      int16 `json:"epoch,omitempty"`
	// Users answers AlterScramCredentials: each user's outcome.
	Users []userReply `json:"users,omitempty"`
	// ACLs answers CreateACLs (one per binding) and DeleteACLs (one per
	// filter, with the bindings it removed).
	ACLs []aclReply `json:"acls,omitempty"`
}

// aclReply is one binding's or filter's outcome.
type aclReply struct {
	Code    int16         `json:"code"`
	Message string        `json:"message,omitempty"`
	Removed []acl.Binding `json:"removed,omitempty"`
}

// userReply is one user's outcome of AlterScramCredentials.
type userReply struct {
	User    string `json:"user"`
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// ErrNoMetaLeader means the metadata group has no leader right now.
var ErrNoMetaLeader = fmt.Errorf("broker: metadata group has no leader: %w", kerr.NotController)

// applyLocal proposes an encoded command on this node, which must be the
// metadata leader, and turns the outcome into a reply.
func (n *Node) applyLocal(cmd []byte, timeout time.Duration) metaReply {
	index, resp, err := n.meta.group.Propose(cmd, timeout).Wait()
	if err != nil {
		code := kerr.NotController
		if errors.Is(err, multiraft.ErrEnqueueTimeout) {
			code = kerr.RequestTimedOut
		}
		return metaReply{Code: code.Code, Message: err.Error()}
	}
	r := metaReply{Index: index}
	switch v := resp.(type) {
	case error:
		e := metaErrorCode(v)
		r.Code, r.Message = e.Code, v.Error()
	case metadata.ProducerIdentity:
		r.ProducerID, r.Epoch = v.ProducerID, v.Epoch
	case *metadata.ProducerIdentity:
		r.ProducerID, r.Epoch = v.ProducerID, v.Epoch
	case metadata.AlterScramCredentialsResult:
		for _, u := range v.Users {
			ur := userReply{User: u.User}
			if u.Err != nil {
				ur.Code, ur.Message = metaErrorCode(u.Err).Code, u.Err.Error()
			}
			r.Users = append(r.Users, ur)
		}
	case metadata.CreateACLsResult:
		for _, e := range v.Errs {
			r.ACLs = append(r.ACLs, aclErrorReply(e))
		}
	case metadata.DeleteACLsResult:
		for i, e := range v.Errs {
			ar := aclErrorReply(e)
			ar.Removed = v.Removed[i]
			r.ACLs = append(r.ACLs, ar)
		}
	}
	return r
}

func aclErrorReply(err error) aclReply {
	if err == nil {
		return aclReply{}
	}
	return aclReply{Code: metaErrorCode(err).Code, Message: err.Error()}
}

// proposeMeta gets cmd applied by the metadata leader, wherever it is,
// retrying while there is no leader, and waits until this node's copy of
// the metadata has applied it. Kafka-level failures come back as errors
// wrapping *kerr.Error.
func (n *Node) proposeMeta(ctx context.Context, cmd metadata.Command) (metaReply, error) {
	enc, err := metadata.Encode(cmd)
	if err != nil {
		return metaReply{}, fmt.Errorf("broker: encode %T: %w", cmd, err)
	}
	backoff := n.cfg.Tuning.MetaRetryMin
	for {
		r, err := n.forwardOnce(ctx, enc)
		if err == nil && r.Code == kerr.NotController.Code {
			err = fmt.Errorf("%w: %s", ErrNoMetaLeader, r.Message)
		}
		if err == nil {
			if r.Code != 0 {
				return r, fmt.Errorf("%w: %s", kerr.ErrorForCode(r.Code), r.Message)
			}
			if _, werr := n.meta.fsm.WaitFor(ctx, func(s *metadata.Snapshot) bool { return s.AppliedIndex() >= r.Index }); werr != nil {
				return r, fmt.Errorf("%w: waiting for local metadata: %w", kerr.RequestTimedOut, werr)
			}
			return r, nil
		}
		n.logger.Debug("metadata proposal not delivered; retrying", "err", err)
		select {
		case <-ctx.Done():
			return metaReply{}, fmt.Errorf("%w: %w (last: %w)", kerr.RequestTimedOut, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, n.cfg.Tuning.MetaRetryMax)
	}
}

// forwardOnce sends one encoded command to the current leader (or applies
// it here if this node leads).
func (n *Node) forwardOnce(ctx context.Context, enc []byte) (metaReply, error) {
	timeout := n.cfg.Tuning.MetaForward
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), minWait)
	}
	g := n.meta.group
	if g.IsLeader() {
		return n.applyLocal(enc, timeout), nil
	}
	_, addr, ok := g.Leader()
	if !ok {
		return metaReply{}, ErrNoMetaLeader
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := n.host.Dial(dctx, addr, metaRPCService)
	if err != nil {
		return metaReply{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(dctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(frame.Append(nil, enc)); err != nil {
		return metaReply{}, err
	}
	b, err := frame.Read(conn, 0, uint32(n.cfg.Tuning.MaxMetaFrame))
	if err != nil {
		return metaReply{}, err
	}
	var rep metaReply
	if err := json.Unmarshal(b, &rep); err != nil {
		return metaReply{}, fmt.Errorf("broker: bad metadata reply: %w", err)
	}
	return rep, nil
}

// serveMetaRPC answers forwarded commands until l is closed. It is owned
// by the Node (n.wg).
func (n *Node) serveMetaRPC(l net.Listener) {
	defer n.wg.Done()
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			defer conn.Close()
			stop := context.AfterFunc(n.ctx, func() { conn.Close() })
			defer stop()
			conn.SetDeadline(time.Now().Add(n.cfg.Tuning.MetaServe))
			enc, err := frame.Read(conn, 0, uint32(n.cfg.Tuning.MaxMetaFrame))
			if err != nil {
				return
			}
			rep := n.serveMetaCommand(conn, enc)
			b, _ := json.Marshal(rep)
			conn.Write(frame.Append(nil, b))
		}()
	}
}

// serveMetaCommand answers one forwarded command: decoded, allowed for
// the peer (peerMayPropose), then applied if this node leads.
func (n *Node) serveMetaCommand(conn net.Conn, enc []byte) metaReply {
	cmd, err := metadata.Decode(enc)
	if err != nil {
		return metaReply{Code: kerr.InvalidRequest.Code, Message: err.Error()}
	}
	peer, _ := multiraft.PeerNode(conn)
	if err := peerMayPropose(peer, cmd); err != nil {
		n.logger.Warn("refused a forwarded metadata command", "peer", peer, "err", err)
		return metaReply{Code: kerr.ClusterAuthorizationFailed.Code, Message: err.Error()}
	}
	if !n.meta.group.IsLeader() {
		return metaReply{Code: kerr.NotController.Code, Message: "not the metadata leader"}
	}
	return n.applyLocal(enc, n.cfg.Tuning.MetaApply)
}

// metaErrorCode maps a metadata FSM error to the Kafka error a client sees.
func metaErrorCode(err error) *kerr.Error {
	switch {
	case errors.Is(err, metadata.ErrTopicExists):
		return kerr.TopicAlreadyExists
	case errors.Is(err, metadata.ErrInvalidTopic):
		return kerr.InvalidTopicException
	case errors.Is(err, metadata.ErrInvalidPartitions):
		return kerr.InvalidPartitions
	case errors.Is(err, metadata.ErrPartitionLimit):
		return kerr.PolicyViolation
	case errors.Is(err, metadata.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor
	case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment
	case errors.Is(err, metadata.ErrInvalidConfig):
		return kerr.InvalidConfig
	case errors.Is(err, metadata.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, metadata.ErrInvalidTransactionalID):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrClusterNotInitialized):
		return kerr.NotController
	case errors.Is(err, metadata.ErrInvalidLeader):
		return kerr.InvalidRequest
	case errors.Is(err, metadata.ErrScramNotFound):
		return kerr.ResourceNotFound
	case errors.Is(err, metadata.ErrUnsupportedScramMechanism):
		return kerr.UnsupportedSaslMechanism
	case errors.Is(err, metadata.ErrUnacceptableCredential), errors.Is(err, metadata.ErrInvalidScramUser):
		return kerr.UnacceptableCredential
	case errors.Is(err, metadata.ErrDuplicateScramResource):
		return kerr.DuplicateResource
	case errors.Is(err, metadata.ErrNoReassignment):
		return kerr.NoReassignmentInProgress
	case errors.Is(err, metadata.ErrReassignmentChanged):
		return kerr.InvalidRequest
	case errors.Is(err, acl.ErrInvalid):
		return kerr.InvalidRequest
	case errors.Is(err, acl.ErrTooMany):
		return kerr.PolicyViolation
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}
