package multiraft

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// Services. Besides Raft, a node's other internal protocols (forwarding a
// proposal to a group's leader, say) run as named services over the same
// sessions: Listen returns a net.Listener whose Accept yields the streams
// that peers opened with Dial for that name.

// Listen registers service name and returns its listener. Close
// unregisters the name; streams accepted stay open. Errors:
// ErrInvalidConfig for a bad name, ErrServiceExists, ErrClosed.
func (h *Host) Listen(name string) (net.Listener, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.services[name] != nil {
		return nil, fmt.Errorf("%w: %q", ErrServiceExists, name)
	}
	l := &serviceListener{h: h, name: name, conns: make(chan net.Conn), done: make(chan struct{})}
	h.services[name] = l
	return l, nil
}

// Dial opens a stream to service name on the node at addr and waits for
// the peer to accept it. ctx bounds the whole exchange; the stream has no
// deadline afterwards and belongs to the caller, who must Close it. It
// also ends when either Host closes. Errors are *PeerError wrapping
// ErrUnknownService, ErrProtocol, a context or network error, or ErrClosed.
func (h *Host) Dial(ctx context.Context, addr, name string) (net.Conn, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	p, err := h.peer(addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(h.tun.CallTimeout)
	}
	sess, err := p.session(deadline)
	if err != nil {
		return nil, err
	}
	st, err := sess.OpenStream()
	if err != nil {
		return nil, p.fail("service", err)
	}
	h.stats.streamsOpened.Add(1)
	stop := context.AfterFunc(ctx, func() { _ = st.SetDeadline(time.Unix(1, 0)) })
	_ = st.SetDeadline(deadline)
	_, err = st.Write(appendOpen(nil, streamService, name))
	var reply []byte
	if err == nil {
		reply, err = frame.Read(st, 1, 1)
	}
	if !stop() {
		err = ctx.Err()
	}
	if err == nil && reply[0] != serviceOK {
		err = fmt.Errorf("%w: %q", ErrUnknownService, name)
	}
	if err != nil {
		_ = st.Close()
		return nil, p.fail("service", err)
	}
	_ = st.SetDeadline(time.Time{})
	return &serviceConn{Stream: st}, nil
}

// deliver answers a service stream's open frame and hands the stream,
// with its session's node (PeerNode), to the service's listener.
func (h *Host) deliver(st *yamux.Stream, name string, node int32) {
	h.mu.Lock()
	l := h.services[name]
	h.mu.Unlock()
	status := byte(serviceOK)
	if l == nil {
		status = serviceUnknown
	}
	_ = st.SetWriteDeadline(time.Now().Add(h.tun.HandshakeTimeout))
	if _, err := st.Write(frame.Append(nil, []byte{status})); err != nil || l == nil || !l.deliver(&serviceConn{Stream: st, node: node}) {
		_ = st.Close()
		return
	}
	_ = st.SetWriteDeadline(time.Time{})
}

// serviceListener is the net.Listener of one service.
type serviceListener struct {
	h     *Host
	name  string
	conns chan net.Conn // unbuffered: a stream is either accepted or still its deliverer's
	done  chan struct{} // closed by shut
	once  sync.Once
}

var _ net.Listener = (*serviceListener)(nil)

func (l *serviceListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// Close unregisters the service and wakes Accept. Idempotent.
func (l *serviceListener) Close() error {
	l.h.mu.Lock()
	if l.h.services[l.name] == l {
		delete(l.h.services, l.name)
	}
	l.h.mu.Unlock()
	l.shut()
	return nil
}

func (l *serviceListener) Addr() net.Addr { return serviceAddr(l.h.addr) }

func (l *serviceListener) shut() { l.once.Do(func() { close(l.done) }) }

// deliver blocks until Accept takes c (true) or the listener or the Host
// closes (false; the caller still owns c).
func (l *serviceListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	case <-l.h.ctx.Done():
		return false
	}
}

// serviceAddr is the Host's advertised address as a net.Addr.
type serviceAddr string

func (a serviceAddr) Network() string { return "tcp" }
func (a serviceAddr) String() string  { return string(a) }
