package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/metadata"
)

// The metadata group accepts proposals only on its leader. Any node that
// needs a metadata change (create a topic, allocate a producer id, report a
// partition leader) forwards the encoded command to the leader over the
// mux channel "rpc/meta":
//
//	request:  u32 length | metadata.Encode(command)
//	response: u32 length | JSON metaReply
//
// One connection carries one request at a time; the client keeps none
// open between calls (the rate is low: topic creations and producer
// starts).
const metaRPCChannel = "rpc/meta"

// maxMetaFrame bounds one forwarded command or reply.
const maxMetaFrame = 4 << 20

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
}

// ErrNoMetaLeader means the metadata group has no leader right now.
var ErrNoMetaLeader = fmt.Errorf("broker: metadata group has no leader: %w", kerr.NotController)

// applyLocal proposes an encoded command on this node, which must be the
// metadata leader, and turns the outcome into a reply.
func (n *Node) applyLocal(cmd []byte, timeout time.Duration) metaReply {
	f := n.meta.group.Raft.Apply(cmd, timeout)
	if err := f.Error(); err != nil {
		code := kerr.NotController
		if errors.Is(err, raft.ErrEnqueueTimeout) {
			code = kerr.RequestTimedOut
		}
		return metaReply{Code: code.Code, Message: err.Error()}
	}
	r := metaReply{Index: f.Index()}
	switch v := f.Response().(type) {
	case error:
		e := metaErrorCode(v)
		r.Code, r.Message = e.Code, v.Error()
	case metadata.ProducerIdentity:
		r.ProducerID, r.Epoch = v.ProducerID, v.Epoch
	case *metadata.ProducerIdentity:
		r.ProducerID, r.Epoch = v.ProducerID, v.Epoch
	}
	return r
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
	backoff := 20 * time.Millisecond
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
		backoff = min(backoff*2, 500*time.Millisecond)
	}
}

// forwardOnce sends one encoded command to the current leader (or applies
// it here if this node leads).
func (n *Node) forwardOnce(ctx context.Context, enc []byte) (metaReply, error) {
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	r := n.meta.group.Raft
	if r.State() == raft.Leader {
		return n.applyLocal(enc, timeout), nil
	}
	addr, _ := r.LeaderWithID()
	if addr == "" {
		return metaReply{}, ErrNoMetaLeader
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := n.mux.Dial(dctx, string(addr), metaRPCChannel)
	if err != nil {
		return metaReply{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(dctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := writeFrame(conn, enc); err != nil {
		return metaReply{}, err
	}
	b, err := readFrame(bufio.NewReader(conn))
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
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			enc, err := readFrame(bufio.NewReader(conn))
			if err != nil {
				return
			}
			var rep metaReply
			if n.meta.group.Raft.State() != raft.Leader {
				rep = metaReply{Code: kerr.NotController.Code, Message: "not the metadata leader"}
			} else if _, derr := metadata.Decode(enc); derr != nil {
				rep = metaReply{Code: kerr.InvalidRequest.Code, Message: derr.Error()}
			} else {
				rep = n.applyLocal(enc, 10*time.Second)
			}
			b, _ := json.Marshal(rep)
			writeFrame(conn, b)
		}()
	}
}

func writeFrame(w io.Writer, b []byte) error {
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxMetaFrame {
		return nil, fmt.Errorf("broker: metadata frame of %d bytes is over the limit", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
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
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}
