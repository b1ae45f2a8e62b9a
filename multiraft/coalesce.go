package multiraft

import (
	"crypto/tls"
	"encoding/binary"
	"net"
)

// coalescingConn is the connection under a yamux session. yamux writes each
// data frame as two writes, its 12-byte header and then the body; this
// holds such a header back and sends it with the body in one writev, which
// halves the write system calls on the data path. Every other write goes
// out at once. Over TLS, where a writev would still be one record per
// buffer, header and body are copied into one buffer so that they go out
// as one record: one seal and one system call instead of two. Only yamux's
// send loop writes, so it needs no lock.
type coalescingConn struct {
	net.Conn
	hdr  [yamuxHeader]byte
	held bool // hdr holds a data frame's header whose body comes next
	// joined, for a TLS connection, is the buffer header and body are
	// copied into; reused, and dropped when it grew past joinedKeep.
	joined []byte
}

// joinedKeep is the largest joined buffer kept between writes.
const joinedKeep = 1 << 20

// yamux's frame header: version, type, flags (2), stream id (4), length
// (4); type 0 is a data frame, whose body of length bytes follows.
const (
	yamuxHeader   = 12
	yamuxTypeData = 0
)

func (c *coalescingConn) Write(p []byte) (int, error) {
	if !c.held && len(p) == yamuxHeader && p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:]) > 0 {
		copy(c.hdr[:], p)
		c.held = true
		return len(p), nil
	}
	if !c.held {
		return c.Conn.Write(p)
	}
	c.held = false
	if _, ok := c.Conn.(*tls.Conn); ok {
		c.joined = append(append(c.joined[:0], c.hdr[:]...), p...)
		n, err := c.Conn.Write(c.joined)
		if cap(c.joined) > joinedKeep {
			c.joined = nil
		}
		return max(n-yamuxHeader, 0), err
	}
	bufs := net.Buffers{c.hdr[:], p}
	n, err := bufs.WriteTo(c.Conn)
	return max(int(n)-yamuxHeader, 0), err
}
