// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"io"
	"time"
)

// RPCResponse captures both a response and a potential error.
type RPCResponse struct {
	Response interface{}
	Error    error
}

// RPC has a command, and provides a response mechanism.
type RPC struct {
	Command  interface{}
	Reader   io.Reader // Set only for InstallSnapshot
	RespChan chan<- RPCResponse
}

// Respond is used to respond with a response, error or both
func (r *RPC) Respond(resp interface{}, err error) {
	r.RespChan <- RPCResponse{resp, err}
}

// Transport provides an interface for network transports
// to allow Raft to communicate with other nodes.
type Transport interface {
	// Consumer returns a channel that can be used to
	// consume and respond to RPC requests.
	Consumer() <-chan RPC

	// LocalAddr is used to return our local address to distinguish from our peers.
	LocalAddr() ServerAddress

	// AppendEntriesPipeline returns an interface that can be used to pipeline
	// AppendEntries requests.
	AppendEntriesPipeline(id ServerID, target ServerAddress) (AppendPipeline, error)

	// AppendEntries sends the appropriate RPC to the target node.
	AppendEntries(id ServerID, target ServerAddress, args *AppendEntriesRequest, resp *AppendEntriesResponse) error

	// RequestVote sends the appropriate RPC to the target node.
	RequestVote(id ServerID, target ServerAddress, args *RequestVoteRequest, resp *RequestVoteResponse) error

	// InstallSnapshot is used to push a snapshot down to a follower. The data is read from
	// the ReadCloser and streamed to the client.
	InstallSnapshot(id ServerID, target ServerAddress, args *InstallSnapshotRequest, resp *InstallSnapshotResponse, data io.Reader) error

	// EncodePeer is used to serialize a peer's address.
	EncodePeer(id ServerID, addr ServerAddress) []byte

	// DecodePeer is used to deserialize a peer's address.
	DecodePeer([]byte) ServerAddress

	// SetHeartbeatHandler is used to setup a heartbeat handler
	// as a fast-pass. This is to avoid head-of-line blocking from
	// disk IO. If a Transport does not support this, it can simply
	// ignore the call, and push the heartbeat onto the Consumer channel.
	SetHeartbeatHandler(cb func(rpc RPC))

	// TimeoutNow is used to start a leadership transfer to the target node.
	TimeoutNow(id ServerID, target ServerAddress, args *TimeoutNowRequest, resp *TimeoutNowResponse) error
}

// WithPreVote is an interface that a transport may provide which
// allows a transport to support a PreVote request.
//
// It is defined separately from Transport as unfortunately it wasn't in the
// original interface specification.
type WithPreVote interface {
	// RequestPreVote sends the appropriate RPC to the target node.
	RequestPreVote(id ServerID, target ServerAddress, args *RequestPreVoteRequest, resp *RequestPreVoteResponse) error
}

// WithClose is an interface that a transport may provide which
// allows a transport to be shut down cleanly when a Raft instance
// shuts down.
//
// It is defined separately from Transport as unfortunately it wasn't in the
// original interface specification.
type WithClose interface {
	// Close permanently closes a transport, stopping
	// any associated goroutines and freeing other resources.
	Close() error
}

// WithQuiescence is an interface that a transport may provide to let idle
// groups go quiet. It vouches, node by node, for peers it has heard from
// recently (for instance through a keepalive that all groups to that node
// share), and it can broadcast a tick per peer.
//
// A leader whose log a follower matches in full, committed and known to be
// committed, asks it to quiesce with a final heartbeat; from then on the
// leader sends it nothing, and counts it as contacted, while the transport
// vouches for it in the same epoch, and the follower does not start an
// election while the transport vouches for the leader. Anything new to
// replicate, a lost vouch or a new epoch ends quiescence on either side.
// Elections and commitment are unchanged, so safety does not depend on the
// transport; a transport that vouches for a dead peer only delays the
// group's failover.
type WithQuiescence interface {
	// Vouch reports whether the node with id at addr answered recently
	// and the epoch of that knowledge, which changes whenever the transport
	// lost the node (it may have restarted) or stopped vouching for it.
	Vouch(id ServerID, addr ServerAddress) (alive bool, epoch uint64)

	// LivenessChanged returns a channel closed at the next change of any
	// peer's vouch or epoch.
	LivenessChanged() <-chan struct{}

	// HeartbeatTick returns a channel closed at the next heartbeat tick of
	// the peer at addr: leaders heartbeat a follower on its node's tick
	// instead of a timer of their own, so one timer per node serves every
	// group. Nil means the leader's own timer.
	HeartbeatTick(addr ServerAddress, interval time.Duration) <-chan struct{}
}

// WithLeaseVouch is a transport that may stand in for a follower's
// answers in its leader's lease (a MiniKafka patch; see contactedAt): while
// its node runs many elections at once, answers queue behind them past the
// lease timeout although the follower's node keeps answering, and leaders
// stepping down for want of a quorum only add elections.
type WithLeaseVouch interface {
	// LeaseVouch reports whether the leader may count the follower with id
	// at addr as contacted now.
	LeaseVouch(id ServerID, addr ServerAddress) bool
}

// WithCampaignGate is a transport that bounds how many of its node's
// groups campaign at once (a MiniKafka patch; see campaign_gate.go).
type WithCampaignGate interface {
	// CampaignTurn asks for a turn to run one election round; release
	// gives it back. When ok is false the member waits as a follower for
	// another election timeout instead of campaigning.
	CampaignTurn() (release func(), ok bool)
}

// LoopbackTransport is an interface that provides a loopback transport suitable for testing
// e.g. InmemTransport. It's there so we don't have to rewrite tests.
type LoopbackTransport interface {
	Transport   // Embedded transport reference
	WithPeers   // Embedded peer management
	WithClose   // with a close routine
	WithPreVote // with a prevote
}

// WithPeers is an interface that a transport may provide which allows for connection and
// disconnection. Unless the transport is a loopback transport, the transport specified to
// "Connect" is likely to be nil.
type WithPeers interface {
	Connect(peer ServerAddress, t Transport) // Connect a peer
	Disconnect(peer ServerAddress)           // Disconnect a given peer
	DisconnectAll()                          // Disconnect all peers, possibly to reconnect them later
}

// AppendPipeline is used for pipelining AppendEntries requests. It is used
// to increase the replication throughput by masking latency and better
// utilizing bandwidth.
type AppendPipeline interface {
	// AppendEntries is used to add another request to the pipeline.
	// The send may block which is an effective form of back-pressure.
	AppendEntries(args *AppendEntriesRequest, resp *AppendEntriesResponse) (AppendFuture, error)

	// Consumer returns a channel that can be used to consume
	// response futures when they are ready.
	Consumer() <-chan AppendFuture

	// Close closes the pipeline and cancels all inflight RPCs
	Close() error
}

// AppendFuture is used to return information about a pipelined AppendEntries request.
type AppendFuture interface {
	Future

	// Start returns the time that the append request was started.
	// It is always OK to call this method.
	Start() time.Time

	// Request holds the parameters of the AppendEntries call.
	// It is always OK to call this method.
	Request() *AppendEntriesRequest

	// Response holds the results of the AppendEntries call.
	// This method must only be called after the Error
	// method returns, and will only be valid on success.
	Response() *AppendEntriesResponse
}
