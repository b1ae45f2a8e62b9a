package raftmux

import (
	"context"
	"io"
	"net"
	"time"
)

// Dial connects to the Mux at addr, asks for channel name and waits for the
// remote's answer. ctx bounds the whole exchange; a conn that Dial returns
// has no deadline set and belongs to the caller, who must Close it (Mux.Close
// does not). Errors are *ChannelError wrapping ErrUnknownChannel,
// ErrUnsupportedVersion, ErrProtocol, ErrInvalidChannel, ErrClosed (this
// Mux is closed), ctx.Err(), or the network error.
func (m *Mux) Dial(ctx context.Context, addr, name string) (net.Conn, error) {
	fail := func(err error) (net.Conn, error) {
		return nil, &ChannelError{Op: "dial", Addr: addr, Channel: name, Err: err}
	}
	if err := validName(name); err != nil {
		return fail(err)
	}
	if m.isClosed() {
		return fail(ErrClosed)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail(err)
	}
	if err := handshake(ctx, c, name); err != nil {
		_ = c.Close()
		return fail(err)
	}
	return c, nil
}

// handshake sends the header for name on c and reads the status byte,
// aborting when ctx ends.
func handshake(ctx context.Context, c net.Conn, name string) error {
	// Only ctx sets a deadline, so a deadline error here always means ctx ended.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	err := exchange(c, name)
	if !stop() || ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func exchange(c net.Conn, name string) error {
	if _, err := c.Write(appendHeader(make([]byte, 0, headerFixed+len(name)), name)); err != nil {
		return err
	}
	var status [1]byte
	if _, err := io.ReadFull(c, status[:]); err != nil {
		return err
	}
	return statusErr(status[0])
}
