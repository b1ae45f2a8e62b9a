package raftmux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/logging"
)

// DefaultHeaderTimeout bounds how long an accepted connection may take to
// send its header when Config.HeaderTimeout is zero.
const DefaultHeaderTimeout = 5 * time.Second

// Config configures a Mux. Only BindAddr is required.
type Config struct {
	// BindAddr is the host:port to listen on; port 0 picks a free port.
	BindAddr string
	// AdvertiseAddr is the host:port that peers dial, reported by Addr and
	// used by raft as this node's address. Empty means the bound address.
	AdvertiseAddr string
	// Logger receives the mux's own logs (rejected connections at Debug,
	// accept failures at Warn) and is the base of each default transport
	// logger. Nil discards.
	Logger *slog.Logger
	// HeaderTimeout bounds how long an accepted connection may take to send
	// its header. Zero means DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// HeartbeatWindow is how long the first heartbeat queued for a peer
	// waits for others before one frame carries them all. Zero means
	// DefaultHeartbeatWindow.
	HeartbeatWindow time.Duration
	// HeartbeatHandlerTimeout bounds how long one group's heartbeat handler
	// may hold up the rest of a frame from a peer: a handler that has run
	// this long (checked every half of it, so at most 1.5 times it) is
	// abandoned, its heartbeat answered with ErrNoHeartbeatResponse, and the
	// frame goes on with the next group. Zero means
	// DefaultHeartbeatHandlerTimeout; otherwise at least 1ms.
	HeartbeatHandlerTimeout time.Duration
	// DisableHeartbeatCoalescing makes every group send its heartbeats and
	// election RPCs over its own connections, as a plain NetworkTransport
	// does, and stops this Mux from serving HeartbeatChannel and RPCChannel
	// (peers then fall back to the same). For comparison and rollback.
	DisableHeartbeatCoalescing bool
	// OnPeerLost, if set, is called with the address of a peer watched
	// with WatchPeer whenever the peer is found lost: its process ended or
	// restarted (see LivenessChannel). It runs on the peer's watch
	// goroutine and must return quickly.
	OnPeerLost func(addr string)
}

// Heartbeat coalescing defaults. The window is a trade: each heartbeat
// waits up to it longer for its answer (raft's leader lease and followers'
// timeouts are hundreds of milliseconds), and each peer link carries at most
// about one frame per window. Measured on 3 local nodes with 200 groups,
// idle CPU was 0.66 cores with 5 ms, 0.52 with 20 ms, 0.49 with 50 ms.
const (
	DefaultHeartbeatWindow         = 20 * time.Millisecond
	DefaultHeartbeatHandlerTimeout = 100 * time.Millisecond
)

// validate checks cfg and fills in defaults; it is the only place a Config
// is checked.
func (cfg *Config) validate() error {
	if cfg.BindAddr == "" {
		return fmt.Errorf("%w: BindAddr is empty", ErrInvalidConfig)
	}
	if cfg.AdvertiseAddr != "" {
		host, port, err := net.SplitHostPort(cfg.AdvertiseAddr)
		if err != nil {
			return fmt.Errorf("%w: AdvertiseAddr %q: %v", ErrInvalidConfig, cfg.AdvertiseAddr, err)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || host == "" {
			return fmt.Errorf("%w: AdvertiseAddr %q needs a host and a port in 1..65535", ErrInvalidConfig, cfg.AdvertiseAddr)
		}
	}
	switch {
	case cfg.HeaderTimeout < 0:
		return fmt.Errorf("%w: HeaderTimeout %v is negative", ErrInvalidConfig, cfg.HeaderTimeout)
	case cfg.HeaderTimeout == 0:
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	switch {
	case cfg.HeartbeatWindow < 0:
		return fmt.Errorf("%w: HeartbeatWindow %v is negative", ErrInvalidConfig, cfg.HeartbeatWindow)
	case cfg.HeartbeatWindow == 0:
		cfg.HeartbeatWindow = DefaultHeartbeatWindow
	}
	switch {
	case cfg.HeartbeatHandlerTimeout == 0:
		cfg.HeartbeatHandlerTimeout = DefaultHeartbeatHandlerTimeout
	case cfg.HeartbeatHandlerTimeout < time.Millisecond:
		return fmt.Errorf("%w: HeartbeatHandlerTimeout %v is below 1ms", ErrInvalidConfig, cfg.HeartbeatHandlerTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = logging.Discard()
	}
	return nil
}

// Mux serves every channel of a node on one TCP listener. Its methods are
// safe for concurrent use.
type Mux struct {
	ln            net.Listener
	addr          net.Addr     // advertised address
	base          *slog.Logger // Config.Logger, parent of transport loggers
	log           *slog.Logger // base with logger=raftmux
	headerTimeout time.Duration

	conns connSet            // every accepted conn not yet closed, routed or not
	done  chan struct{}      // closed by Close; wakes routing goroutines and the accept back-off
	ctx   context.Context    // ended by Close; aborts heartbeat dials
	stop  context.CancelFunc // ends ctx
	wg    sync.WaitGroup     // the accept loop and every routing goroutine

	mu       sync.Mutex                 // guards channels, groups, peers, rpcPeers, watches, groupAdded and closed
	channels map[string]*listener       // open virtual listeners by channel name
	groups   map[string]*GroupTransport // open group transports by group name
	peers    map[string]*hbPeer         // heartbeat senders by peer address, started on first use
	rpcPeers map[string]*rpcPeer        // RPCChannel callers by peer address, made on first use
	watches  map[string]*peerWatch      // liveness watches by peer address (WatchPeer)
	// groupAdded is closed (and replaced) whenever a group registers.
	groupAdded chan struct{}
	closed     bool

	hbWindow         time.Duration // Config.HeartbeatWindow
	hbHandlerTimeout time.Duration // Config.HeartbeatHandlerTimeout
	hbOff            bool          // Config.DisableHeartbeatCoalescing
	hbDialed         connSet       // heartbeat conns this Mux dialed; Close closes them
	rpcDialed        connSet       // RPCChannel conns this Mux dialed; Close closes them
	liveDialed       connSet       // LivenessChannel conns this Mux dialed; Close closes them
	incarnation      uint64        // sent on every accepted LivenessChannel conn
	onPeerLost       func(addr string)

	routed, unknown, badHeader atomic.Uint64 // see Stats
	hbStats                                  // see Stats
	rpcStats                                 // see Stats
	liveStats                                // see Stats
}

// Stats counts what the Mux did with the connections it accepted.
type Stats struct {
	Routed         uint64 // returned by a virtual listener's Accept
	UnknownChannel uint64 // named a channel with no listener
	BadHeader      uint64 // bad or missing header: wrong magic, version or name, EOF, header timeout
	Open           int    // accepted conns still open (routed or waiting for their header)

	// Coalesced heartbeats sent to peers: frames, the heartbeats they
	// carried, and heartbeats that went over their group's own connection
	// because the peer does not serve coalesced heartbeats.
	HeartbeatFramesSent, HeartbeatsSent, HeartbeatsFallback uint64
	// Coalesced heartbeats received from peers: frames, and the heartbeats
	// they carried.
	HeartbeatFramesReceived, HeartbeatsReceived uint64
	// HeartbeatDials counts heartbeat connections dialed (one per peer,
	// again after each loss).
	HeartbeatDials uint64

	// Election RPCs (RequestVote, RequestPreVote, TimeoutNow) sent on
	// RPCChannel, sent over their group's own connection because the peer
	// does not serve RPCChannel, and received; RPCChannel connections
	// dialed.
	RPCsSent, RPCsFallback, RPCsReceived, RPCDials uint64
	// LivenessDials counts LivenessChannel connections dialed; PeersLost
	// counts the times a watched peer was reported lost.
	LivenessDials, PeersLost uint64
}

// Listen binds cfg.BindAddr and starts accepting. The caller must Close the
// Mux.
func Listen(cfg Config) (*Mux, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return nil, err
	}
	var addr net.Addr = ln.Addr()
	if cfg.AdvertiseAddr != "" {
		addr = advertised(cfg.AdvertiseAddr)
	}
	ctx, stop := context.WithCancel(context.Background())
	m := &Mux{
		ctx:              ctx,
		stop:             stop,
		ln:               ln,
		addr:             addr,
		base:             cfg.Logger,
		log:              cfg.Logger.With("logger", "raftmux"),
		headerTimeout:    cfg.HeaderTimeout,
		done:             make(chan struct{}),
		channels:         make(map[string]*listener),
		groups:           make(map[string]*GroupTransport),
		peers:            make(map[string]*hbPeer),
		rpcPeers:         make(map[string]*rpcPeer),
		watches:          make(map[string]*peerWatch),
		groupAdded:       make(chan struct{}),
		incarnation:      newIncarnation(),
		onPeerLost:       cfg.OnPeerLost,
		hbWindow:         cfg.HeartbeatWindow,
		hbHandlerTimeout: cfg.HeartbeatHandlerTimeout,
		hbOff:            cfg.DisableHeartbeatCoalescing,
	}
	ll, err := m.listen(LivenessChannel)
	if err != nil {
		stop()
		_ = ln.Close()
		return nil, err
	}
	var hl, rl *listener
	if !m.hbOff {
		if hl, err = m.listen(HeartbeatChannel); err == nil {
			rl, err = m.listen(RPCChannel)
		}
		if err != nil {
			stop()
			_ = ln.Close()
			return nil, err
		}
	}
	m.wg.Add(2)
	go m.acceptLoop()
	go m.serveEach(ll, m.serveLiveness)
	if hl != nil {
		m.wg.Add(2)
		go m.serveEach(hl, m.serveHeartbeats)
		go m.serveEach(rl, m.serveRPCs)
	}
	return m, nil
}

// serveEach accepts connections on one of the Mux's own channels until
// Mux.Close closes l, and runs serve on each in a goroutine owned by the
// Mux: serve (or a goroutine it hands over to) calls m.wg.Done when it is
// done. serveEach itself runs on a goroutine counted in m.wg.
func (m *Mux) serveEach(l *listener, serve func(c net.Conn)) {
	defer m.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return // only Mux.Close closes l
		}
		m.wg.Add(1) // this goroutine holds the count above zero, so this cannot race Wait
		go serve(c)
	}
}

// advertised is an address given as text; it is never resolved here.
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }

// Addr is the address peers should dial: Config.AdvertiseAddr, or else the
// bound address (with the real port when BindAddr asked for port 0).
func (m *Mux) Addr() net.Addr { return m.addr }

// ListenAddr is the address the Mux is bound to.
func (m *Mux) ListenAddr() net.Addr { return m.ln.Addr() }

// Stats returns the counters; they only grow, except Open.
func (m *Mux) Stats() Stats {
	return Stats{
		Routed:         m.routed.Load(),
		UnknownChannel: m.unknown.Load(),
		BadHeader:      m.badHeader.Load(),
		Open:           m.conns.len(),

		HeartbeatFramesSent:     m.hbFramesSent.Load(),
		HeartbeatsSent:          m.hbSent.Load(),
		HeartbeatsFallback:      m.hbFallback.Load(),
		HeartbeatFramesReceived: m.hbFramesReceived.Load(),
		HeartbeatsReceived:      m.hbReceived.Load(),
		HeartbeatDials:          m.hbDials.Load(),

		RPCsSent:     m.rpcSent.Load(),
		RPCsFallback: m.rpcFallback.Load(),
		RPCsReceived: m.rpcReceived.Load(),
		RPCDials:     m.rpcDials.Load(),

		LivenessDials: m.liveDials.Load(),
		PeersLost:     m.peersLost.Load(),
	}
}

// Close stops accepting, closes every virtual listener and every accepted
// connection (including those already handed out), fails every queued
// heartbeat, and waits for the Mux's goroutines to end (including calls into
// raft heartbeat handlers still running). Connections made by Dial belong to their caller and
// stay open. Close is idempotent.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	ls := m.channels
	m.channels = nil
	m.mu.Unlock()

	close(m.done)
	m.stop()
	err := m.ln.Close()
	for _, l := range ls {
		l.shut()
	}
	m.conns.closeAll()
	m.hbDialed.closeAll()  // wakes heartbeat senders waiting for an answer
	m.rpcDialed.closeAll() // ends the goroutines reading RPC answers
	m.liveDialed.closeAll()
	m.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (m *Mux) isClosed() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// acceptLoop accepts until the listener closes, giving each conn its own
// routing goroutine so that a slow or silent client never delays others.
func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	const minDelay, maxDelay = 5 * time.Millisecond, time.Second
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if m.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Probably out of file descriptors: back off like net/http.
			delay = min(max(2*delay, minDelay), maxDelay)
			m.log.Warn("accept failed", "error", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C: // retry
			case <-m.done: // Close while backing off
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		tc, ok := m.conns.add(c)
		if !ok {
			return // Close ran between Accept and add; it closed c
		}
		m.wg.Add(1) // the loop itself holds the count above zero, so this cannot race Wait
		go m.route(tc)
	}
}

// route reads c's header and hands c to its channel's listener, or closes c.
func (m *Mux) route(c *trackedConn) {
	defer m.wg.Done()
	_ = c.SetDeadline(time.Now().Add(m.headerTimeout))
	name, err := readHeader(c)
	if err != nil {
		if !m.isClosed() {
			m.badHeader.Add(1)
			if errors.Is(err, ErrUnsupportedVersion) {
				_, _ = c.Write([]byte{statusUnsupportedVersion})
			}
			m.log.Debug("rejected connection: bad header", "remote", c.RemoteAddr().String(), "error", err)
		}
		_ = c.Close()
		return
	}
	l := m.lookup(name)
	if l == nil {
		m.unknown.Add(1)
		m.log.Debug("rejected connection: unknown channel", "remote", c.RemoteAddr().String(), "channel", name)
		_, _ = c.Write([]byte{statusUnknownChannel})
		_ = c.Close()
		return
	}
	if _, err := c.Write([]byte{statusOK}); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	if !l.deliver(c) {
		_ = c.Close()
	}
}

func (m *Mux) lookup(name string) *listener {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.channels[name]
}

// Listener registers channel name and returns its virtual listener. Accept
// returns the connections whose header named it; Close unregisters the name
// (it may then be registered again) but leaves accepted conns open, as a
// net.Listener does. Errors: ErrInvalidChannel, ErrChannelExists, ErrClosed,
// each inside a *ChannelError.
func (m *Mux) Listener(name string) (net.Listener, error) {
	return m.listen(name)
}

func (m *Mux) listen(name string) (*listener, error) {
	if err := validName(name); err != nil {
		return nil, &ChannelError{Op: "listen", Channel: name, Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &ChannelError{Op: "listen", Channel: name, Err: ErrClosed}
	}
	if _, ok := m.channels[name]; ok {
		return nil, &ChannelError{Op: "listen", Channel: name, Err: ErrChannelExists}
	}
	l := &listener{m: m, name: name, conns: make(chan net.Conn), done: make(chan struct{})}
	m.channels[name] = l
	return l, nil
}

// unregister removes l from the channel table if it is still there.
func (m *Mux) unregister(l *listener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.channels[l.name] == l {
		delete(m.channels, l.name)
	}
}
