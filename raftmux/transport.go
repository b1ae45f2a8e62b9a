package raftmux

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// RaftChannelPrefix prefixes the channel name of every raft group:
// group "p-events-0" travels on channel "raft/p-events-0".
const RaftChannelPrefix = "raft/"

// Transport defaults.
const (
	DefaultMaxPool = 2
	DefaultTimeout = 2 * time.Second
)

// TransportConfig configures one group's raft.NetworkTransport. The zero
// value is usable.
type TransportConfig struct {
	// MaxPool is how many idle outbound connections per peer the transport
	// keeps. Zero means DefaultMaxPool.
	MaxPool int
	// Timeout is the I/O deadline of each RPC, and bounds each dial; it
	// also bounds how long a coalesced heartbeat waits for its answer. Zero
	// means DefaultTimeout.
	Timeout time.Duration
	// MaxRPCsInFlight is passed to raft; zero means raft's default (2).
	MaxRPCsInFlight int
	// ServerAddressProvider, if set, maps server ids to addresses at dial
	// time (for example from membership), instead of the stored address.
	ServerAddressProvider raft.ServerAddressProvider
	// Logger receives the transport's logs. Nil means the Mux's logger at
	// Error and above, named "raft-net" and tagged with the group: raft's
	// own default is DEBUG, which storms with hundreds of groups.
	Logger hclog.Logger
}

// Transport registers channel RaftChannelPrefix+group and returns a raft
// transport for that group over the Mux. Its LocalAddr is Addr(), so all of a
// node's groups share one address, told apart by the channel; its heartbeats
// share one connection per peer with every other group's. Closing the
// transport (raft.Shutdown does it) unregisters only this group and closes
// the connections it accepted or dialed; the Mux and other groups go on.
// Errors: ErrNotAdvertisable, ErrInvalidChannel, ErrChannelExists (the group
// already has an open transport), ErrClosed, inside a *ChannelError.
func (m *Mux) Transport(group string, cfg TransportConfig) (*GroupTransport, error) {
	name := RaftChannelPrefix + group
	if err := advertisable(m.Addr()); err != nil {
		return nil, &ChannelError{Op: "transport", Channel: name, Err: err}
	}
	vl, err := m.listen(name)
	if err != nil {
		return nil, err
	}
	if cfg.MaxPool == 0 {
		cfg.MaxPool = DefaultMaxPool
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = logging.HCLog(m.base.With("group", group), "raft-net", slog.LevelError)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream := &streamLayer{m: m, vl: vl, ctx: ctx, cancel: cancel}
	t := &GroupTransport{
		NetworkTransport: raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			ServerAddressProvider: cfg.ServerAddressProvider,
			Logger:                cfg.Logger,
			Stream:                stream,
			MaxPool:               cfg.MaxPool,
			MaxRPCsInFlight:       cfg.MaxRPCsInFlight,
			Timeout:               cfg.Timeout,
		}),
		m:       m,
		group:   group,
		timeout: cfg.Timeout,
		addrs:   cfg.ServerAddressProvider,
		closed:  make(chan struct{}),

		consumer:    make(chan raft.RPC),
		forwardDone: make(chan struct{}),
	}
	go t.forward()
	m.registerGroup(t)
	return t, nil
}

// advertisable rejects addresses that peers cannot dial.
func advertisable(a net.Addr) error {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return err
	}
	host, _, _ = strings.Cut(host, "%") // IPv6 zone
	if host == "" {
		return ErrNotAdvertisable
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return ErrNotAdvertisable
	}
	return nil
}

// streamLayer is one group's raft.StreamLayer: its channel's virtual
// listener plus dials to the same channel on peers.
type streamLayer struct {
	m      *Mux
	vl     *listener
	ctx    context.Context    // ended by Close: aborts dials and releases a parked Accept
	cancel context.CancelFunc // ends ctx
	conns  connSet            // every conn this group accepted or dialed and has not closed
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// Accept returns the group's next inbound conn. When the Mux closes under a
// live transport, Accept parks until the transport's own Close rather than
// failing at once: NetworkTransport would otherwise retry and log an error
// every second per group.
func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.vl.Accept()
	if err != nil {
		<-s.ctx.Done()
		return nil, err
	}
	tc, ok := s.conns.add(c)
	if !ok {
		return nil, &ChannelError{Op: "accept", Channel: s.vl.name, Err: ErrClosed}
	}
	return streamConn{tc}, nil
}

// Dial opens a conn to the group's channel on the Mux at address.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx := s.ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c, err := s.m.Dial(ctx, string(address), s.vl.name)
	if err != nil {
		return nil, err
	}
	tc, ok := s.conns.add(c)
	if !ok {
		return nil, &ChannelError{Op: "dial", Addr: string(address), Channel: s.vl.name, Err: ErrClosed}
	}
	return streamConn{tc}, nil
}

// Close unregisters the group's channel and closes its conns, both ways, so
// that no handler goroutine of the transport outlives it.
func (s *streamLayer) Close() error {
	s.cancel()
	err := s.vl.Close()
	s.conns.closeAll()
	return err
}

// Addr is the Mux's advertised address, which raft stores as this server's.
func (s *streamLayer) Addr() net.Addr { return s.m.Addr() }

// streamConn reports a read on a conn closed in this process as io.EOF.
// NetworkTransport logs every other read error at Error, so without this a
// node shutting down would log one line per connection per group.
type streamConn struct{ *trackedConn }

func (c streamConn) Read(p []byte) (int, error) {
	n, err := c.trackedConn.Read(p)
	if err != nil && errors.Is(err, net.ErrClosed) {
		err = io.EOF
	}
	return n, err
}
