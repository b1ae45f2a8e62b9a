package kafkaapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// serveConn runs one connection: this goroutine reads and starts requests,
// a writer goroutine answers them in order. It returns when either side
// stops, after both have, with the connection closed.
//
// A request that breaks the protocol (ErrProtocol) ends the reading, but
// the requests before it are still answered before the connection closes,
// as Kafka does (it reads a connection's next request only after answering
// the previous one). Any other end of reading (the client went away, the
// server is closing) abandons what is queued.
func (s *Server) serveConn(ctx context.Context, nc net.Conn, lc Listener) {
	ctx, cancel := context.WithCancel(withListener(ctx, lc.Name))
	// Closing nc is what unblocks a Read or Write once ctx is done
	// (server closing, or the other side of this connection failed).
	// It is the TCP connection, never the TLS one, whose Close could
	// wait for a blocked Write.
	ncClosed := make(chan struct{})
	raw := nc
	context.AfterFunc(ctx, func() {
		defer close(ncClosed)
		raw.Close()
	})

	nc, sess, ok := s.secure(ctx, cancel, nc, lc)
	if !ok {
		cancel()
		<-ncClosed
		return
	}
	ctx = withSession(ctx, sess)

	// slots bounds started-but-unanswered requests: the reader takes one
	// before starting a request, the writer gives it back after answering.
	// Every queued request holds a slot, so sends on queue never block.
	slots := make(chan struct{}, s.cfg.MaxInFlight)
	queue := make(chan started, s.cfg.MaxInFlight)

	// mute holds the reader back while the client is throttled (quotas).
	mute := new(muteGate)
	// work runs the requests started on goroutines of their own
	// (requestInfo.startAsync); the connection ends after them.
	var work sync.WaitGroup
	defer work.Wait() // after cancel: their context is the connection's

	var writeErr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		if writeErr = s.writeLoop(ctx, nc, queue, slots, mute); writeErr != nil {
			cancel() // stops the reader
		}
	}()

	readErr := s.readLoop(ctx, nc, queue, slots, sess.auth, mute, &work)
	close(queue)
	drain := errors.Is(readErr, ErrProtocol)
	if !drain {
		cancel()
	}
	<-writerDone
	for st := range queue { // abandoned: give back their charges
		s.queued.release(st.charge)
	}
	if drain && writeErr == nil {
		lingerClose(nc)
	}
	cancel()
	<-ncClosed

	err := readErr
	if writeErr != nil && !errors.Is(writeErr, context.Canceled) {
		err = writeErr
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("kafkaapi: closing connection", "remote", nc.RemoteAddr().String(), "err", err)
	}
}

// secure starts a connection's TLS and SASL: a TLS or SASL connection
// that has not finished authenticating within AuthenticationTimeout is
// closed (cancel). On a TLS listener it returns the TLS connection once
// the handshake is done, and without SASL that is the whole
// authentication. ok is false if the handshake failed.
func (s *Server) secure(ctx context.Context, cancel context.CancelFunc, nc net.Conn, lc Listener) (net.Conn, *session, bool) {
	var auth *connAuth
	if len(lc.SASLMechanisms) > 0 {
		auth = newConnAuth(lc.SASLMechanisms, s.backend, s.logins, remoteHost(nc))
	}
	sess := &session{host: remoteHost(nc), auth: auth}
	if lc.TLS == nil && auth == nil {
		return nc, sess, true
	}
	timer := time.AfterFunc(s.cfg.AuthenticationTimeout, func() {
		if auth == nil || !auth.authenticated() {
			cancel()
		}
	})
	if auth != nil {
		// With SASL the timer stays set; once authenticated, its firing
		// does nothing. It stops when the connection ends.
		context.AfterFunc(ctx, func() { timer.Stop() })
	}
	if lc.TLS == nil {
		return nc, sess, true
	}
	tc := tls.Server(nc, lc.TLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		timer.Stop()
		s.log.Debug("kafkaapi: TLS handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
		return nil, nil, false
	}
	if auth == nil {
		timer.Stop() // authenticated by the handshake
	}
	sess.certPrincipal = certPrincipal(tc.ConnectionState())
	return tc, sess, true
}

// lingerTimeout bounds how long lingerClose discards a client's input.
const lingerTimeout = time.Second

// lingerClose prepares closing a connection that the server ends on its
// own after its last response: it half-closes, so that the client reads
// every response and then EOF, and discards what the client still sends
// until EOF or lingerTimeout, because closing a socket with unread input
// resets it, and a reset can destroy responses the client has not read
// yet. Closing nc (the server stopping) ends the wait early.
func lingerClose(nc net.Conn) {
	if hc, ok := nc.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
	}
	nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.Copy(io.Discard, nc)
}

// readLoop reads frames and starts their requests in order until the
// connection fails, the client breaks the protocol, or ctx is done.
// On a SASL listener, requests before authentication go to startSASL
// instead, in frames of at most maxSASLFrame bytes. While mute holds (a
// throttled client), the next request is left unread.
func (s *Server) readLoop(ctx context.Context, nc net.Conn, queue chan<- started, slots chan<- struct{}, auth *connAuth, mute *muteGate, work *sync.WaitGroup) error {
	br := bufio.NewReaderSize(nc, 64<<10)
	host := remoteHost(nc)
	for {
		if err := mute.wait(ctx, s.cfg.ConnectionsMaxIdle); err != nil {
			return err
		}
		if err := s.awaitRequest(nc, br, slots); err != nil {
			return err
		}
		pending := auth != nil && !auth.authenticated()
		limit := s.cfg.MaxRequestBytes
		if pending {
			limit = min(limit, maxSASLFrame)
		}
		size, err := peekFrameSize(br, limit)
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}: // a free in-flight slot
		case <-ctx.Done(): // the writer stopped or the server is closing
			return ctx.Err()
		}
		rc := requestInfo{host: host, conn: ctx, mute: mute, work: work}
		st, err := s.readRequest(ctx, nc, br, size, rc, func(frame []byte, rc requestInfo) (started, error) {
			if pending {
				return s.startSASL(frame, rc, auth)
			}
			return s.startRequest(frame, rc)
		})
		if err != nil {
			return err
		}
		queue <- st
		if st.closeAfter != nil {
			return st.closeAfter
		}
	}
}

// readRequest reads the frame of size bytes whose size prefix is next in
// br and starts its request, once the node's budget
// (Config.QueuedMaxRequestBytes) holds the frame, and then what decoding
// and serving it costs (RequestCost). The started request carries its
// charge, for the writer to release once it is answered.
func (s *Server) readRequest(ctx context.Context, nc net.Conn, br *bufio.Reader, size int32, rc requestInfo,
	start func([]byte, requestInfo) (started, error)) (st started, err error) {
	var held charge
	defer func() {
		if err != nil {
			s.queued.release(held)
		}
	}()
	if err := s.queued.takeFrame(ctx, int64(size)); err != nil {
		return started{}, err
	}
	held.frame = int64(size)
	// The wait for the budget does not count against the client; a stall
	// in the frame would hold the budget, so it is bounded.
	nc.SetReadDeadline(time.Now().Add(s.frameTimeout(size)))
	frame, err := readFrameBody(br, size)
	if err != nil {
		return started{}, err
	}
	rc.received = time.Now()
	key := int16(-1)
	if h, err := peekHeader(frame); err == nil {
		key = h.Key
	}
	err = s.guard(key, rc.host, func() error {
		cost := RequestCost(frame)
		if cost > s.queued.maxCost() {
			return &RequestCostError{Key: key, Size: len(frame), Cost: cost, Max: s.queued.maxCost()}
		}
		if err := s.queued.takeCost(ctx, cost); err != nil {
			return err
		}
		held.cost = cost
		st, err = start(frame, rc)
		return err
	})
	if err != nil {
		return started{}, err
	}
	st.received, st.key, st.charge = rc.received, key, held
	return st, nil
}

// frameTimeout bounds how long a frame of size bytes that the budget holds
// may take to arrive: RequestTimeout and a second per MiB (a client gives
// up on a request after its request.timeout.ms, 30 s by default, anyway),
// at most ConnectionsMaxIdle.
func (s *Server) frameTimeout(size int32) time.Duration {
	return min(s.cfg.ConnectionsMaxIdle, s.cfg.RequestTimeout+time.Duration(size)*time.Second/(1<<20))
}

// errIdle ends a connection that sent nothing for ConnectionsMaxIdle.
var errIdle = errors.New("kafkaapi: connection idle")

// awaitRequest waits for the first byte of the next request. A connection
// with nothing to read for ConnectionsMaxIdle is idle, unless one of its
// requests is being answered (a JoinGroup may wait minutes for its
// rebalance); the rest of the request must then arrive within the same
// span.
func (s *Server) awaitRequest(nc net.Conn, br *bufio.Reader, slots chan<- struct{}) error {
	for {
		nc.SetReadDeadline(time.Now().Add(s.cfg.ConnectionsMaxIdle))
		_, err := br.Peek(1)
		if err == nil {
			return nil
		}
		if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
			return err
		}
		if len(slots) == 0 {
			return errIdle
		}
	}
}

// writeLoop answers started requests in order until queue is closed, a
// response cannot be written, or a responder asks to close the connection.
// A throttled request mutes the connection (mute) after its response.
func (s *Server) writeLoop(ctx context.Context, nc net.Conn, queue <-chan started, slots <-chan struct{}, mute *muteGate) error {
	host := remoteHost(nc)
	var buf []byte
	for st := range queue {
		err := ctx.Err()
		if err == nil {
			err = s.guard(st.key, host, func() (err error) {
				buf, err = s.answer(ctx, nc, st, buf, mute)
				return err
			})
		}
		s.queued.release(st.charge)
		if err != nil {
			return err
		}
		<-slots
	}
	return nil
}

// answer writes st's response, if it has one, and tells the Observer. It
// returns buf, the response buffer, to reuse.
func (s *Server) answer(ctx context.Context, nc net.Conn, st started, buf []byte, mute *muteGate) ([]byte, error) {
	resp, err := st.reply(ctx)
	if err != nil {
		return buf, err
	}
	if st.quota != nil {
		resp = s.settleQuota(st.quota, resp, mute)
	}
	if resp != nil {
		buf = appendResponse(buf[:0], st.correlationID, st.headerV1, resp)
		if _, err := nc.Write(buf); err != nil {
			return buf, err
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin a large fetch response's memory
		}
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.RequestDone(st.key, time.Since(st.received))
	}
	return buf, nil
}

// remoteHost is the client's IP address (without the port), as Kafka
// shows a group member's host.
func remoteHost(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
