package controller

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
//	response: JSON Reply
//
// The rate is low (topic creations and producer starts), so no stream is
// kept between calls.
const rpcService = "rpc/meta"

// Reply is what the leader answers to a forwarded command.
type Reply struct {
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
	Users []UserReply `json:"users,omitempty"`
	// ExpiryMs answers CreateDelegationToken and UpdateDelegationToken:
	// the token's expiry.
	ExpiryMs int64 `json:"expiry_ms,omitempty"`
	// ACLs answers CreateACLs (one per binding) and DeleteACLs (one per
	// filter, with the bindings it removed).
	ACLs []ACLReply `json:"acls,omitempty"`
}

// ACLReply is one binding's or filter's outcome.
type ACLReply struct {
	Code    int16         `json:"code"`
	Message string        `json:"message,omitempty"`
	Removed []acl.Binding `json:"removed,omitempty"`
}

// UserReply is one user's outcome of AlterScramCredentials.
type UserReply struct {
	User    string `json:"user"`
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// ErrNoLeader means the metadata group has no leader right now.
var ErrNoLeader = fmt.Errorf("broker: metadata group has no leader: %w", kerr.NotController)

// applyLocal proposes an encoded command on this node, which must be the
// metadata leader, and turns the outcome into a reply.
func (c *Controller) applyLocal(cmd []byte, timeout time.Duration) Reply {
	index, resp, err := c.group.Propose(cmd, timeout).Wait()
	if err != nil {
		code := kerr.NotController
		if errors.Is(err, multiraft.ErrEnqueueTimeout) {
			code = kerr.RequestTimedOut
		}
		return Reply{Code: code.Code, Message: err.Error()}
	}
	r := Reply{Index: index}
	switch v := resp.(type) {
	case error:
		e := ErrorCode(v)
		r.Code, r.Message = e.Code, v.Error()
	case metadata.ProducerIdentity:
		r.ProducerID, r.Epoch = v.ProducerID, v.Epoch
	case *metadata.ProducerIdentity:
		r.ProducerID, r.Epoch = v.ProducerID, v.Epoch
	case metadata.AlterScramCredentialsResult:
		for _, u := range v.Users {
			ur := UserReply{User: u.User}
			if u.Err != nil {
				ur.Code, ur.Message = ErrorCode(u.Err).Code, u.Err.Error()
			}
			r.Users = append(r.Users, ur)
		}
	case metadata.DelegationTokenResult:
		r.ExpiryMs = v.ExpiryMs
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

func aclErrorReply(err error) ACLReply {
	if err == nil {
		return ACLReply{}
	}
	return ACLReply{Code: ErrorCode(err).Code, Message: err.Error()}
}

// Propose gets cmd applied by the metadata leader, wherever it is,
// retrying while there is no leader, and waits until this node's copy of
// the metadata has applied it. Kafka-level failures come back as errors
// wrapping *kerr.Error. Once ctx has ended nothing more is proposed (a
// request past its deadline changes nothing): REQUEST_TIMED_OUT.
func (c *Controller) Propose(ctx context.Context, cmd metadata.Command) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, fmt.Errorf("%w: %w", kerr.RequestTimedOut, err)
	}
	enc, err := metadata.Encode(cmd)
	if err != nil {
		return Reply{}, fmt.Errorf("broker: encode %T: %w", cmd, err)
	}
	backoff := c.cfg.Tuning.RetryMin
	for {
		r, err := c.forwardOnce(ctx, enc)
		if err == nil && r.Code == kerr.NotController.Code {
			err = fmt.Errorf("%w: %s", ErrNoLeader, r.Message)
		}
		if err == nil {
			if r.Code != 0 {
				return r, fmt.Errorf("%w: %s", kerr.ErrorForCode(r.Code), r.Message)
			}
			if _, werr := c.fsm.WaitFor(ctx, func(s *metadata.Snapshot) bool { return s.AppliedIndex() >= r.Index }); werr != nil {
				return r, fmt.Errorf("%w: waiting for local metadata: %w", kerr.RequestTimedOut, werr)
			}
			return r, nil
		}
		c.logger.Debug("metadata proposal not delivered; retrying", "err", err)
		select {
		case <-ctx.Done():
			return Reply{}, fmt.Errorf("%w: %w (last: %w)", kerr.RequestTimedOut, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, c.cfg.Tuning.RetryMax)
	}
}

// forwardOnce sends one encoded command to the current leader (or applies
// it here if this node leads).
func (c *Controller) forwardOnce(ctx context.Context, enc []byte) (Reply, error) {
	timeout := c.cfg.Tuning.Forward
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), c.cfg.Tuning.MinWait)
	}
	g := c.group
	if g.IsLeader() {
		return c.applyLocal(enc, timeout), nil
	}
	_, addr, ok := g.Leader()
	if !ok {
		return Reply{}, ErrNoLeader
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := c.deps.Raft.Dial(dctx, addr, rpcService)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(dctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(frame.Append(nil, enc)); err != nil {
		return Reply{}, err
	}
	b, err := frame.Read(conn, 0, uint32(c.cfg.Tuning.MaxFrame))
	if err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.Unmarshal(b, &rep); err != nil {
		return Reply{}, fmt.Errorf("broker: bad metadata reply: %w", err)
	}
	return rep, nil
}

// serveRPC answers forwarded commands until the listener is closed (Close).
// It and each connection's goroutine are owned by the Controller (c.wg).
func (c *Controller) serveRPC() {
	defer c.wg.Done()
	for {
		conn, err := c.rpc.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer conn.Close()
			stop := context.AfterFunc(c.ctx, func() { conn.Close() })
			defer stop()
			conn.SetDeadline(time.Now().Add(c.cfg.Tuning.Serve))
			enc, err := frame.Read(conn, 0, uint32(c.cfg.Tuning.MaxFrame))
			if err != nil {
				return
			}
			rep := c.serveCommand(conn, enc)
			b, _ := json.Marshal(rep)
			conn.Write(frame.Append(nil, b))
		}()
	}
}

// serveCommand answers one forwarded command: decoded, allowed for the
// peer (peerMayPropose), then applied if this node leads.
func (c *Controller) serveCommand(conn net.Conn, enc []byte) Reply {
	cmd, err := metadata.Decode(enc)
	if err != nil {
		return Reply{Code: kerr.InvalidRequest.Code, Message: err.Error()}
	}
	peer, _ := multiraft.PeerNode(conn)
	if err := peerMayPropose(peer, cmd); err != nil {
		c.logger.Warn("refused a forwarded metadata command", "peer", peer, "err", err)
		return Reply{Code: kerr.ClusterAuthorizationFailed.Code, Message: err.Error()}
	}
	if !c.group.IsLeader() {
		return Reply{Code: kerr.NotController.Code, Message: "not the metadata leader"}
	}
	return c.applyLocal(enc, c.cfg.Tuning.Apply)
}
