package membership

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/minikafka/minikafka-go/logging"
)

// Membership is this node's view of the cluster. Its methods are safe for
// concurrent use.
type Membership struct {
	cfg    Config // normalized
	log    *slog.Logger
	ml     *memberlist.Memberlist // set in New before any method can run
	events *dispatcher
	name   string // memberlist node name, NodeName(cfg.Meta.ID)

	// Set in New after binding; read-only afterwards. memberlist runs the
	// delegate from Create on, so New writes localAddr under mu and the
	// delegate reads it under mu.
	localAddr string         // advertised gossip ip:port
	bindAddr  netip.AddrPort // bound gossip ip:port (ip may be unspecified)

	// calls counts memberlist calls started by call that may outlive the
	// context of their caller; Shutdown waits for them. Add only under mu
	// while !closed.
	calls sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error

	stop    chan struct{} // closed by Shutdown: ends reconnectLoop
	stopped chan struct{} // closed when reconnectLoop has ended

	// mu guards the fields below. memberlist invokes the delegate, which
	// takes mu, while holding its own node lock: never call into memberlist
	// with mu held.
	mu       sync.Mutex
	local    wireMeta         // what this node advertises
	localEnc []byte           // encodeMeta(local), returned to memberlist
	members  map[int32]member // alive members, self included
	failed   map[int32]string // gossip addresses of members that failed (not left) and did not come back
	leaving  bool             // Leave was called: local.leaving is set
	leftSent bool             // memberlist's Leave was called
	closed   bool             // Shutdown was called
	joining  int              // Join rounds in flight
	conflict error            // first DuplicateIDError seen while joining > 0
	// reclaim: a Join round merged state that holds this node's id as
	// failed at another address (its previous run's), which the others
	// refuse to move before Config.DeadNodeReclaimTime.
	reclaim bool
}

// New validates cfg, binds the gossip port (TCP and UDP) and starts
// memberlist. The node is then a cluster of one; call Join to meet others.
// Errors wrap ErrInvalidConfig, ErrInvalidMeta, ErrMetaTooLarge, or come
// from binding the port.
func New(cfg Config) (*Membership, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	local := wireMeta{NodeMeta: cfg.Meta}
	enc, err := encodeMeta(local) // cannot fail: normalize validated it
	if err != nil {
		return nil, err
	}
	m := &Membership{
		cfg:      cfg,
		log:      cfg.Logger.With("logger", "membership"),
		name:     NodeName(cfg.Meta.ID),
		local:    local,
		localEnc: enc,
		members:  make(map[int32]member),
		failed:   make(map[int32]string),
		stop:     make(chan struct{}),
		stopped:  make(chan struct{}),
		events:   newDispatcher(cfg.OnEvent),
	}
	mc := cfg.memberlistConfig(&delegate{m: m}, logging.StdLog(cfg.Logger.With("logger", "memberlist"), slog.LevelDebug))
	if cfg.SourceIP != "" {
		if err := useSourceTransport(mc, cfg.SourceIP, mc.Logger); err != nil {
			m.events.close()
			return nil, err
		}
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			_ = mc.Transport.Shutdown()
		}
		m.events.close()
		return nil, fmt.Errorf("membership: start memberlist on %s: %w", cfg.BindAddr, err)
	}
	m.ml = ml
	self := ml.LocalNode()
	m.mu.Lock()
	m.localAddr = self.Address()
	m.mu.Unlock()
	// memberlist wrote the port it bound into mc when asked for port 0.
	bindIP, _, _ := parseIPPort(cfg.BindAddr, false)
	m.bindAddr = netip.AddrPortFrom(bindIP, uint16(mc.BindPort))
	m.log.Info("gossip started", "id", cfg.Meta.ID, "bind", m.bindAddr.String(), "advertise", m.localAddr)
	go m.reconnectLoop()
	return m, nil
}

// LocalAddr is the gossip address other nodes reach this one at ("ip:port",
// with the real port when BindAddr asked for port 0). Give it to other
// nodes as a seed.
func (m *Membership) LocalAddr() string { return m.localAddr }

// Local is the metadata this node currently advertises.
func (m *Membership) Local() NodeMeta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.local.NodeMeta
}

// Members returns the alive members, this node included (until it leaves),
// sorted by ID. Suspected members count as alive until declared failed.
func (m *Membership) Members() []NodeMeta {
	m.mu.Lock()
	out := make([]NodeMeta, 0, len(m.members))
	for _, mem := range m.members {
		out = append(out, mem.meta)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b NodeMeta) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Lookup returns the metadata of the alive member with this id.
func (m *Membership) Lookup(id int32) (NodeMeta, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.members[id]
	return mem.meta, ok
}

// UpdateMeta changes what this node advertises and gossips it. The ID
// cannot change. It waits until the update has been sent to the cluster,
// bounded by ctx (or Config.BroadcastTimeout if ctx has no deadline);
// ErrBroadcastTimeout means the new metadata is in effect locally and will
// spread later. Errors also wrap ErrInvalidMeta, ErrMetaTooLarge, ErrLeft,
// ErrClosed or a context error.
func (m *Membership) UpdateMeta(ctx context.Context, meta NodeMeta) error {
	if meta.ID != m.cfg.Meta.ID {
		return fmt.Errorf("%w: id cannot change from %d to %d", ErrInvalidMeta, m.cfg.Meta.ID, meta.ID)
	}
	if err := ctx.Err(); err != nil { // before the local change, not after
		return err
	}
	m.mu.Lock()
	if err := m.usableLocked(); err != nil {
		m.mu.Unlock()
		return err
	}
	next := wireMeta{NodeMeta: meta, leaving: m.local.leaving}
	enc, err := encodeMeta(next)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	m.local, m.localEnc = next, enc
	m.mu.Unlock()
	return m.call(ctx, func(timeout time.Duration) error {
		if err := m.ml.UpdateNode(timeout); err != nil {
			return fmt.Errorf("%w: metadata update: %v", ErrBroadcastTimeout, err)
		}
		return nil
	})
}

// Leave tells the cluster this node is leaving on purpose, so that the
// others report EventLeave rather than EventFail, and removes it from the
// cluster; this node's own OnEvent gets EventLeave for itself. It first
// gossips a leave intent in the node metadata, then memberlist's leave
// message, waiting for each to be sent (the intent for at most half the
// time), all bounded by ctx (or Config.BroadcastTimeout if ctx has no
// deadline). The node keeps answering
// gossip until Shutdown. Once the leave message has been started, calling
// Leave again returns nil at once.
// Errors wrap ErrBroadcastTimeout, ErrClosed or a context error; once
// called, the node counts as leaving even if it failed.
func (m *Membership) Leave(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.leaving = true
	m.local.leaving = true
	enc, err := encodeMeta(m.local)
	if err != nil { // cannot happen: the flag does not change the size
		m.mu.Unlock()
		return err
	}
	m.localEnc = enc
	m.mu.Unlock()
	m.log.Info("leaving the cluster")
	return m.call(ctx, func(timeout time.Duration) error {
		m.mu.Lock()
		sent := m.leftSent
		m.mu.Unlock()
		if sent {
			// memberlist's Leave ran before; it is a no-op now, and
			// UpdateNode after it would wait for a broadcast that memberlist
			// no longer sends.
			return nil
		}
		// Half the time for the intent: its confirmation can be missed
		// (memberlist drops it if the broadcast completes before UpdateNode
		// waits), and the leave message matters more.
		start := time.Now()
		if err := m.ml.UpdateNode(max(timeout/2, time.Nanosecond)); err != nil { // 0 would mean "forever"
			m.log.Warn("leave intent not confirmed sent; leaving anyway", "err", err)
		}
		rest := timeout - time.Since(start)
		if rest <= 0 {
			return fmt.Errorf("%w: no time left for the leave message", ErrBroadcastTimeout)
		}
		m.mu.Lock()
		m.leftSent = true
		m.mu.Unlock()
		if err := m.ml.Leave(rest); err != nil {
			return fmt.Errorf("%w: leave message: %v", ErrBroadcastTimeout, err)
		}
		return nil
	})
}

// Shutdown stops gossip without a leave message (use Leave first for a
// graceful exit; without it the others see EventFail), waits for in-flight
// calls (each is bounded by its own timeout) and for an OnEvent callback in
// progress, and drops undelivered events. No goroutine of this Membership
// survives it. Safe to call more than once; it must not be called from
// OnEvent.
func (m *Membership) Shutdown() error {
	m.shutdownOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		close(m.stop)
		<-m.stopped
		m.calls.Wait()
		m.shutdownErr = m.ml.Shutdown()
		m.events.close()
		m.log.Info("gossip stopped")
	})
	return m.shutdownErr
}

// usableLocked reports whether the node may still Join or UpdateMeta.
func (m *Membership) usableLocked() error {
	switch {
	case m.closed:
		return ErrClosed
	case m.leaving:
		return ErrLeft
	}
	return nil
}

// call runs f, a blocking memberlist call, on a goroutine so that the
// caller can stop waiting when ctx ends. f gets a timeout that ends no later
// than ctx's deadline (Config.BroadcastTimeout without one) and must respect
// it, because Shutdown waits for f to return.
func (m *Membership) call(ctx context.Context, f func(timeout time.Duration) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	timeout := m.cfg.BroadcastTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if timeout <= 0 {
		return context.DeadlineExceeded
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.calls.Add(1)
	m.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer m.calls.Done()
		done <- f(timeout)
	}()
	select {
	case err := <-done: // f finished (or hit its timeout)
		return err
	case <-ctx.Done(): // the caller gave up; f ends on its own timeout
		return ctx.Err()
	}
}

// noteConflictLocked keeps the first duplicate-id conflict seen while a
// Join round is in flight, for Join to return.
func (m *Membership) noteConflictLocked(err error) {
	if m.joining > 0 && m.conflict == nil {
		m.conflict = err
	}
}
