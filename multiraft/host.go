package multiraft

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/yamux"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/minikafka/minikafka-go/logging"
)

// Host runs a node's Raft groups over one TCP port. Its methods are safe
// for concurrent use.
type Host struct {
	id          int32
	tun         Tuning
	ln          net.Listener
	addr        string // advertised
	resolve     func(int32) (string, bool)
	base        *slog.Logger // Config.Logger, parent of group loggers
	log         *slog.Logger
	incarnation uint64 // sent in every handshake this Host accepts
	yamux       *yamux.Config
	src         net.Addr // Config.SourceAddr as a TCP address, or nil
	// serverTLS and clientTLS are Config.TLS's, or nil for plain TCP.
	serverTLS, clientTLS *tls.Config

	ctx    context.Context // ended by Close: aborts dials and waits
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Host owns
	losses chan int32     // nodes found lost, for failoverLoop
	// draining is set by HandOver: the node is stopping, so it refuses
	// leaderships offered to it (TimeoutNow), which would die with it.
	draining atomic.Bool

	mu         sync.Mutex // guards every field below; never held while taking a peer's mu
	groups     map[string]*transport
	groupAdded chan struct{} // closed and replaced whenever a group registers
	peers      map[string]*peer
	services   map[string]*serviceListener
	inbound    map[*yamux.Session]struct{}
	closed     bool

	stats        counters
	live         liveness            // what the Host vouches for (liveness.go)
	turns        chan struct{}       // campaign turns taken (turns.go)
	electing     atomic.Int32        // loops running many elections (livenessLoop)
	manyElecting atomic.Int32        // of them, loops with more elections than run at once (LeaseVouch)
	manyEnded    atomic.Int64        // when (UnixNano) manyElecting last fell to zero
	onCommit     func(time.Duration) // Config.OnCommit
	// catchUp paces what leaders send to throttled members
	// (Tuning.CatchUpRate); nil when unbounded.
	catchUp *rate.Limiter

	logDir      string     // Config.LogDir
	logMemTable int64      // Config.LogMemTable
	logFS       vfs.FS     // Config.LogFS
	logMu       sync.Mutex // guards plog and walFsync; never held with mu
	plog        *pebbleLog // the node-wide log store, nil until a pebble group opens
	// walFsync is the store's WAL fsync histogram, kept after it closes.
	walFsync prometheus.Histogram
}

// Listen binds cfg.BindAddr and starts serving. The caller must Close the
// Host after closing its groups.
func Listen(cfg Config) (*Host, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var serverTLS, clientTLS *tls.Config
	if cfg.TLS != nil {
		var err error
		if serverTLS, clientTLS, err = cfg.TLS.tlsConfigs(cfg.NodeID); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return nil, err
	}
	addr := cfg.AdvertiseAddr
	if addr == "" {
		addr = ln.Addr().String()
	}
	if !dialable(addr) {
		_ = ln.Close()
		return nil, invalid("address %q is not dialable by peers; set AdvertiseAddr", addr)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = logging.Discard()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{
		id: cfg.NodeID, tun: cfg.Tuning, ln: ln, addr: addr, resolve: cfg.Resolve,
		base: logger, log: logger.With("logger", "multiraft"), incarnation: newIncarnation(),
		ctx: ctx, cancel: cancel, losses: make(chan int32, 64),
		groups: map[string]*transport{}, groupAdded: make(chan struct{}), peers: map[string]*peer{},
		services: map[string]*serviceListener{}, inbound: map[*yamux.Session]struct{}{},
		logDir: cfg.LogDir, logMemTable: cfg.LogMemTable, logFS: cfg.LogFS,
		onCommit: cfg.OnCommit, serverTLS: serverTLS, clientTLS: clientTLS,
	}
	h.live.init()
	h.turns = make(chan struct{}, h.tun.ElectionTurns)
	if h.tun.CatchUpRate > 0 {
		h.catchUp = rate.NewLimiter(rate.Limit(h.tun.CatchUpRate), h.tun.CatchUpRate)
	}
	if cfg.SourceAddr != "" {
		h.src = &net.TCPAddr{IP: net.ParseIP(cfg.SourceAddr)} // checked by validate
	}
	h.yamux = &yamux.Config{
		AcceptBacklog:          256,
		EnableKeepAlive:        true,
		KeepAliveInterval:      h.tun.KeepAliveInterval,
		ConnectionWriteTimeout: h.tun.SessionWriteTimeout,
		MaxStreamWindowSize:    1 << 20,
		StreamOpenTimeout:      h.tun.HandshakeTimeout * 6,
		StreamCloseTimeout:     time.Minute,
		Logger:                 yamuxLogger{h.log},
	}
	h.wg.Add(3)
	go h.acceptLoop()
	go h.failoverLoop()
	go h.livenessLoop()
	if h.tun.RebalanceInterval > 0 {
		h.wg.Add(1)
		go h.rebalanceLoop()
	}
	return h, nil
}

// dialable rejects addresses that peers cannot dial.
func dialable(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host, _, _ = strings.Cut(host, "%") // IPv6 zone
	ip := net.ParseIP(host)
	return host != "" && (ip == nil || !ip.IsUnspecified())
}

// newIncarnation draws this Host's incarnation; never 0, which peers use
// for "none seen yet".
func newIncarnation() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		if v := binary.BigEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// NodeID is this node's id.
func (h *Host) NodeID() int32 { return h.id }

// Addr is the address peers dial: Config.AdvertiseAddr, or the bound
// address with the real port.
func (h *Host) Addr() string { return h.addr }

// Close stops accepting, closes every session (which fails every call in
// flight and every service stream) and waits for the Host's goroutines.
// Groups still open go quiet: their RPCs fail until they are closed. Then
// it closes the node-wide log store (Config.LogDir), or, if pebble groups
// are still open, leaves it to the last of them to close. Close is
// idempotent.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	services, peers, inbound := h.services, h.peers, h.inbound
	h.services, h.inbound = nil, nil
	h.mu.Unlock()

	h.cancel()
	err := h.ln.Close()
	for _, l := range services {
		l.shut()
	}
	for _, p := range peers {
		p.close()
	}
	for s := range inbound {
		_ = s.Close()
	}
	h.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	h.logMu.Lock()
	pl := h.plog
	h.logMu.Unlock()
	if pl != nil {
		if rerr := pl.release(); err == nil {
			err = rerr
		}
	}
	return err
}

func (h *Host) isClosed() bool { return h.ctx.Err() != nil }

// goOwned runs f on a goroutine the Host owns (Close waits for it), unless
// the Host is closed.
func (h *Host) goOwned(f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.wg.Add(1) // under mu with closed false: Close has not reached wg.Wait
	go func() {
		defer h.wg.Done()
		f()
	}()
	return true
}

// acceptLoop accepts connections until the listener closes and serves
// each on a goroutine of its own, so that a slow handshake never delays
// others.
func (h *Host) acceptLoop() {
	defer h.wg.Done()
	const minDelay, maxDelay = 5 * time.Millisecond, time.Second
	var delay time.Duration
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if h.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Probably out of file descriptors: back off like net/http.
			delay = min(max(2*delay, minDelay), maxDelay)
			h.log.Warn("accept failed", "error", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-h.ctx.Done():
				return
			}
			continue
		}
		delay = 0
		if !h.goOwned(func() { h.serveConn(c) }) {
			_ = c.Close()
			return
		}
	}
}

// serveConn runs the TLS handshake, if any, and then ours on an accepted
// connection, then serves the streams its peer opens until the session
// ends.
func (h *Host) serveConn(raw net.Conn) {
	_ = raw.SetDeadline(time.Now().Add(h.tun.HandshakeTimeout))
	c, node, err := h.acceptTLS(raw)
	if err != nil {
		h.stats.badHandshakes.Add(1)
		h.log.Debug("rejected connection: TLS", "remote", raw.RemoteAddr().String(), "err", err)
		_ = raw.Close()
		return
	}
	var hello [len(handshakeMagic) + 1]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil || string(hello[:4]) != handshakeMagic {
		h.stats.badHandshakes.Add(1)
		h.log.Debug("rejected connection: bad handshake", "remote", c.RemoteAddr().String(), "err", err)
		_ = c.Close()
		return
	}
	if hello[4] != protocolVersion {
		h.stats.badHandshakes.Add(1)
		_, _ = c.Write([]byte{handshakeUnsupported})
		_ = c.Close()
		return
	}
	if _, err := c.Write(binary.BigEndian.AppendUint64([]byte{handshakeOK}, h.incarnation)); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	sess, err := yamux.Server(&coalescingConn{Conn: c}, h.yamux)
	if err != nil {
		_ = c.Close()
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = sess.Close()
		return
	}
	h.inbound[sess] = struct{}{}
	h.mu.Unlock()
	h.stats.sessionsAccepted.Add(1)
	defer func() {
		h.mu.Lock()
		delete(h.inbound, sess)
		h.mu.Unlock()
		_ = sess.Close()
	}()
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return // the session ended, or Close closed it
		}
		if !h.goOwned(func() { h.serveStream(st, node) }) {
			_ = st.Close()
			return
		}
	}
}

// Stats counts what the Host did; every field only grows, except
// OpenSessions.
type Stats struct {
	SessionsDialed, SessionsAccepted, BadHandshakes uint64
	OpenSessions                                    int
	StreamsOpened                                   uint64
	// Raft RPCs other than heartbeats, sent and served.
	CallsSent, CallsReceived uint64
	// Heartbeat frames and the heartbeats they carried, sent and served.
	HeartbeatFramesSent, HeartbeatsSent, HeartbeatFramesReceived, HeartbeatsReceived uint64
	// PeersLost counts the times a watched peer was found lost.
	PeersLost uint64
	// DialsFailed counts the dials of a peer that failed; calls soon
	// after a failure fail without one (peer.failed).
	DialsFailed uint64
	// PipelinesOpened counts the AppendEntries pipelines raft opened
	// (Timing.MaxInflightAppends); each ends at a rejection, a failed call
	// or a change of leader.
	PipelinesOpened uint64
	// LeaderChanges counts the times a group on this Host gained or lost
	// the leadership.
	LeaderChanges uint64
	// CatchUpBytesPaced counts the bytes sent to throttled members
	// (Group.Throttle) under Tuning.CatchUpRate.
	CatchUpBytesPaced uint64
	// TurnsRefused counts the election rounds raft wanted to start while
	// Tuning.ElectionTurns were taken (turns.go).
	TurnsRefused uint64
}

type counters struct {
	sessionsDialed, sessionsAccepted, badHandshakes, streamsOpened atomic.Uint64
	callsSent, callsReceived                                       atomic.Uint64
	hbFramesSent, hbSent, hbFramesReceived, hbReceived             atomic.Uint64
	peersLost, pipelinesOpened, leaderChanges, dialsFailed         atomic.Uint64
	catchUpPaced, turnsRefused                                     atomic.Uint64
}

// Stats returns the counters.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	open := len(h.inbound)
	peers := make([]*peer, 0, len(h.peers))
	for _, p := range h.peers {
		peers = append(peers, p)
	}
	h.mu.Unlock()
	for _, p := range peers { // outside h.mu: a peer's mu is never taken under it
		if p.current() != nil {
			open++
		}
	}
	c := &h.stats
	return Stats{
		SessionsDialed: c.sessionsDialed.Load(), SessionsAccepted: c.sessionsAccepted.Load(),
		BadHandshakes: c.badHandshakes.Load(), OpenSessions: open, StreamsOpened: c.streamsOpened.Load(),
		CallsSent: c.callsSent.Load(), CallsReceived: c.callsReceived.Load(),
		HeartbeatFramesSent: c.hbFramesSent.Load(), HeartbeatsSent: c.hbSent.Load(),
		HeartbeatFramesReceived: c.hbFramesReceived.Load(), HeartbeatsReceived: c.hbReceived.Load(),
		PeersLost: c.peersLost.Load(), PipelinesOpened: c.pipelinesOpened.Load(),
		LeaderChanges: c.leaderChanges.Load(), CatchUpBytesPaced: c.catchUpPaced.Load(),
		TurnsRefused: c.turnsRefused.Load(),
		DialsFailed:  c.dialsFailed.Load(),
	}
}

// yamuxLogger passes yamux's messages on at Debug: a peer that dies makes
// every session to it log, which is expected and reported elsewhere.
type yamuxLogger struct{ l *slog.Logger }

func (y yamuxLogger) Print(v ...any) { y.l.Debug("yamux", "msg", strings.TrimSpace(fmt.Sprint(v...))) }
func (y yamuxLogger) Printf(format string, v ...any) {
	y.l.Debug("yamux", "msg", fmt.Sprintf(format, v...))
}
func (y yamuxLogger) Println(v ...any) { y.Print(v...) }
