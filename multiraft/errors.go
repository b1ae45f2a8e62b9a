package multiraft

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/hashicorp/raft"
)

// Errors of a proposal (Group.Propose). Callers map them to their own
// (a Kafka error code, say); none of them says the command was not applied
// except ErrNotLeader and ErrEnqueueTimeout.
var (
	// ErrNotLeader: this member does not lead the group; nothing was
	// proposed.
	ErrNotLeader = errors.New("multiraft: not the group's leader")
	// ErrMaybeCommitted: leadership was lost, or a transfer began, while
	// the command was in flight; it may or may not be committed.
	ErrMaybeCommitted = errors.New("multiraft: leadership lost, outcome unknown")
	// ErrEnqueueTimeout: the command could not be queued in time; nothing
	// was proposed.
	ErrEnqueueTimeout = errors.New("multiraft: proposal not queued in time")
	// ErrGroupClosed: the group is closed or closing; the outcome of a
	// command in flight is unknown.
	ErrGroupClosed = errors.New("multiraft: group closed")
	// ErrStorage: this member's log store failed to write the command
	// (Group.StorageErr says why); the leader stepped down. It is not
	// committed unless another member stored it too.
	ErrStorage = errors.New("multiraft: the group's log store failed")
)

// ErrClosed is returned by a closed Host and by Accept on a service
// listener whose Host or listener closed. It wraps net.ErrClosed, as
// servers built on net.Listener expect.
var ErrClosed = fmt.Errorf("multiraft: closed: %w", net.ErrClosed)

// ErrUnknownService means the peer has no listener for the service that
// Dial named.
var ErrUnknownService = errors.New("multiraft: unknown service")

// ErrServiceExists means Listen was asked for a service that already has a
// listener on this Host.
var ErrServiceExists = errors.New("multiraft: service already registered")

// ErrGroupExists means Open was asked for a group that is already open on
// this Host.
var ErrGroupExists = errors.New("multiraft: group already open")

// ErrProtocol means a peer broke the wire protocol: a bad handshake, frame
// or status. The session or stream is closed.
var ErrProtocol = errors.New("multiraft: protocol error")

// ErrUnknownGroup means the peer has no such group open (not yet, or no
// more). Raft treats it as any failed RPC and retries.
var ErrUnknownGroup = errors.New("multiraft: group not open on peer")

// ErrPeerDown: the watch finds the peer down; a heartbeat to it waited
// for its return in vain.
var ErrPeerDown = errors.New("multiraft: peer down")

// ErrNoResponse means the peer's group did not take or answer an RPC in
// time: its raft is busy or shutting down, a heartbeat handler overran, or
// the group's previous heartbeat is still being handled.
var ErrNoResponse = errors.New("multiraft: peer's group did not answer")

// ErrCallTimeout means an RPC got no answer within Tuning.CallTimeout. It
// wraps os.ErrDeadlineExceeded.
var ErrCallTimeout = fmt.Errorf("multiraft: call timed out: %w", os.ErrDeadlineExceeded)

// ErrAppendRejected means a follower answered a pipelined AppendEntries
// with Success=false or a newer term: raft leaves pipeline mode, and the
// pipeline takes no more requests.
var ErrAppendRejected = errors.New("multiraft: pipelined AppendEntries rejected")

// RemoteError is an error that the peer's raft answered an RPC with; only
// its text crosses the wire.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return "multiraft: peer answered: " + e.Msg }

// PeerError says which peer an RPC, dial or service stream failed with, and
// why. Err is one of this package's sentinels, a context error or a
// network error.
type PeerError struct {
	Op   string // "dial", "call", "heartbeat", "service", "pipeline"
	Addr string
	Err  error
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("multiraft: %s %s: %v", e.Op, e.Addr, e.Err)
}

func (e *PeerError) Unwrap() error { return e.Err }

// ServerID is the Raft server id of a node: its decimal id.
func ServerID(node int32) raft.ServerID { return raft.ServerID(strconv.FormatInt(int64(node), 10)) }

// nodeOf is the inverse of ServerID; false for anything not made by it.
func nodeOf(id raft.ServerID) (int32, bool) {
	v, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != string(id) {
		return 0, false
	}
	return int32(v), true
}

// raftLineLevel is the level of a line raft logs as an error whose error
// is another node's state, not a fault here, as Kafka logs a lost
// connection to a broker as a warning. A peer the watch has found down (it
// logs the loss once, "raft peer lost") or this host or group closing (our
// transport answers raft.ErrTransportShutdown then) is Info: one line per
// group and retry that no operator needs. Any other failure to
// reach a peer or to get its group's answer (refused, reset, timed out;
// not open or not answering on the peer: stopping, or the replica not yet
// open or moved) is a warning. A leader that meets a newer term steps
// down, which is Raft's news, not an error. Anything else stays an error.
func (h *Host) raftLineLevel(level slog.Level, msg string, args []any) slog.Level {
	if level < slog.LevelError {
		return level
	}
	if msg == raftNewerTerm {
		return slog.LevelInfo
	}
	for _, a := range args {
		err, ok := a.(error)
		var pe *PeerError
		switch {
		case !ok:
		case errors.Is(err, ErrPeerDown), errors.Is(err, ErrClosed), errors.Is(err, raft.ErrTransportShutdown):
			return slog.LevelInfo
		case errors.As(err, &pe) && h.peerDown(pe.Addr):
			return slog.LevelInfo
		case pe != nil, errors.Is(err, ErrUnknownGroup), errors.Is(err, ErrNoResponse):
			return slog.LevelWarn
		}
	}
	return level
}

// raftNewerTerm is the line raft's replication logs, as an error, when a
// follower answers with a newer term (third_party/raft/replication.go).
const raftNewerTerm = "peer has newer term, stopping replication"

// peerDown reports whether the watch has the peer at addr down.
func (h *Host) peerDown(addr string) bool {
	h.mu.Lock()
	p := h.peers[addr]
	h.mu.Unlock()
	return p != nil && p.down()
}
