package raftmux

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// ErrClosed is returned by a closed Mux, and by Accept on a virtual
// listener that was closed or whose Mux was closed. It wraps net.ErrClosed,
// so errors.Is(err, net.ErrClosed) holds too, as servers built on
// net.Listener expect.
var ErrClosed = fmt.Errorf("raftmux: closed: %w", net.ErrClosed)

// ErrChannelExists means Listener (or Transport) was asked for a channel
// that already has an open virtual listener on this Mux.
var ErrChannelExists = errors.New("raftmux: channel already registered")

// ErrUnknownChannel means the remote Mux has no listener for the channel
// that Dial named; the remote closed the connection.
var ErrUnknownChannel = errors.New("raftmux: unknown channel")

// ErrInvalidChannel means a channel name is empty, longer than
// MaxChannelNameLen, or holds a byte outside printable ASCII.
var ErrInvalidChannel = errors.New("raftmux: invalid channel name")

// ErrUnsupportedVersion means the two ends speak different versions of
// the connection header.
var ErrUnsupportedVersion = errors.New("raftmux: unsupported header version")

// ErrProtocol means the peer did not speak the mux protocol: a bad magic
// byte in a header, or an unknown status byte in a reply.
var ErrProtocol = errors.New("raftmux: protocol error")

// ErrInvalidConfig is wrapped by every error that Listen returns for a bad
// Config.
var ErrInvalidConfig = errors.New("raftmux: invalid config")

// ErrNotAdvertisable means the Mux's advertised address has an empty or
// unspecified host (such as 0.0.0.0), which peers cannot dial; set
// Config.AdvertiseAddr.
var ErrNotAdvertisable = errors.New("raftmux: address is not advertisable")

// ChannelError says which operation on which channel failed, and why. Err is
// one of this package's sentinels, a context error, or a network error.
type ChannelError struct {
	Op      string // "listen", "accept", "dial", "transport" or "heartbeat"
	Addr    string // the remote address for "dial"; empty otherwise
	Channel string
	Err     error
}

func (e *ChannelError) Error() string {
	if e.Addr != "" {
		return fmt.Sprintf("raftmux: %s %s channel %q: %v", e.Op, e.Addr, e.Channel, e.Err)
	}
	return fmt.Sprintf("raftmux: %s channel %q: %v", e.Op, e.Channel, e.Err)
}

func (e *ChannelError) Unwrap() error { return e.Err }

// ErrUnknownGroup means the peer has no open transport with a heartbeat
// handler for the heartbeat's group: the group is not open there yet, or was
// closed. Raft treats it like any failed heartbeat and retries.
var ErrUnknownGroup = errors.New("raftmux: group not open on peer")

// ErrNoHeartbeatResponse means the peer's group did not answer a coalesced
// heartbeat: its raft was shutting down, its previous heartbeat was still
// being handled, or the handler took longer than the peer's
// Config.HeartbeatHandlerTimeout and was abandoned.
var ErrNoHeartbeatResponse = errors.New("raftmux: peer did not answer the heartbeat")

// ErrHeartbeatTimeout means a coalesced heartbeat got no answer within its
// group's TransportConfig.Timeout. It wraps os.ErrDeadlineExceeded.
var ErrHeartbeatTimeout = fmt.Errorf("raftmux: heartbeat timed out: %w", os.ErrDeadlineExceeded)

// ErrNoRPCResponse means the peer's group did not take or answer an RPC sent
// on RPCChannel within the group's Timeout (its raft is busy or shutting
// down).
var ErrNoRPCResponse = errors.New("raftmux: peer did not answer the RPC")

// ErrRPCTimeout means an RPC on RPCChannel got no answer within its group's
// TransportConfig.Timeout. It wraps os.ErrDeadlineExceeded.
var ErrRPCTimeout = fmt.Errorf("raftmux: RPC timed out: %w", os.ErrDeadlineExceeded)

// RemoteError is an error that the peer's raft answered a heartbeat or an RPC with.
// Only its text crosses the wire.
type RemoteError struct {
	Msg string
}

func (e *RemoteError) Error() string { return "raftmux: peer answered: " + e.Msg }
