package raftmux

import (
	"net"
	"sync"
)

// connSet tracks open connections so that their owner can close them all at
// once. The zero value is ready to use.
type connSet struct {
	mu     sync.Mutex // guards conns and closed
	conns  map[*trackedConn]struct{}
	closed bool // after closeAll, add refuses and closes new conns
}

// add starts tracking c and returns the wrapper to hand out. If the set is
// already closed it closes c and returns false.
func (s *connSet) add(c net.Conn) (*trackedConn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, false
	}
	if s.conns == nil {
		s.conns = make(map[*trackedConn]struct{})
	}
	t := &trackedConn{Conn: c, set: s}
	s.conns[t] = struct{}{}
	return t, true
}

func (s *connSet) remove(t *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, t)
}

// len is the number of tracked, still open conns.
func (s *connSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// closeAll closes every tracked conn and makes later adds fail.
func (s *connSet) closeAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns, s.closed = nil, true
	s.mu.Unlock()
	for t := range conns {
		_ = t.Conn.Close()
	}
}

// trackedConn is a net.Conn that leaves its set when closed.
type trackedConn struct {
	net.Conn
	set  *connSet
	once sync.Once
	err  error // the first Close's result; written once under once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.set.remove(t)
		t.err = t.Conn.Close()
	})
	return t.err
}
