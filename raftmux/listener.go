package raftmux

import (
	"net"
	"sync"
)

// listener is the virtual net.Listener of one channel.
type listener struct {
	m     *Mux
	name  string
	conns chan net.Conn // unbuffered: a conn is either accepted or still owned by its routing goroutine
	done  chan struct{} // closed by shut
	once  sync.Once     // guards closing done
}

var _ net.Listener = (*listener)(nil)

// Accept waits for the next connection on this channel.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		l.m.routed.Add(1) // here, not in route, so that it is counted before the owner sees c
		return c, nil
	case <-l.done:
		return nil, &ChannelError{Op: "accept", Channel: l.name, Err: ErrClosed}
	}
}

// Close unregisters the channel and wakes Accept. Idempotent.
func (l *listener) Close() error {
	l.m.unregister(l)
	l.shut()
	return nil
}

// Addr is the Mux's advertised address.
func (l *listener) Addr() net.Addr { return l.m.Addr() }

func (l *listener) shut() { l.once.Do(func() { close(l.done) }) }

// deliver blocks until Accept takes c (true) or the listener or the Mux
// closes (false; the caller still owns c).
func (l *listener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done: // listener closed while c waited
		return false
	case <-l.m.done: // Mux closed; it also shuts l, but do not depend on the order
		return false
	}
}
