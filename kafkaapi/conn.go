package kafkaapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// serveConn runs one connection: this goroutine reads and starts requests,
// a writer goroutine answers them in order. It returns when either side
// stops, after both have, with the connection closed.
func (s *Server) serveConn(ctx context.Context, nc net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	// Closing nc is what unblocks a Read or Write once ctx is done
	// (server closing, or the other side of this connection failed).
	ncClosed := make(chan struct{})
	context.AfterFunc(ctx, func() {
		defer close(ncClosed)
		nc.Close()
	})

	// slots bounds started-but-unanswered requests: the reader takes one
	// before starting a request, the writer gives it back after answering.
	// Every queued request holds a slot, so sends on queue never block.
	slots := make(chan struct{}, s.cfg.MaxInFlight)
	queue := make(chan started, s.cfg.MaxInFlight)

	var writeErr error
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writeErr = s.writeLoop(ctx, nc, queue, slots)
		cancel()
	}()

	readErr := s.readLoop(ctx, nc, queue, slots)
	cancel()
	close(queue)
	<-writerDone
	<-ncClosed

	err := readErr
	if writeErr != nil && !errors.Is(writeErr, context.Canceled) {
		err = writeErr
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("kafkaapi: closing connection", "remote", nc.RemoteAddr().String(), "err", err)
	}
}

// readLoop reads frames and starts their requests in order until the
// connection fails, the client breaks the protocol, or ctx is done.
func (s *Server) readLoop(ctx context.Context, nc net.Conn, queue chan<- started, slots chan<- struct{}) error {
	br := bufio.NewReaderSize(nc, 64<<10)
	for {
		frame, err := readFrame(br, s.cfg.MaxRequestBytes)
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}: // a free in-flight slot
		case <-ctx.Done(): // the writer stopped or the server is closing
			return ctx.Err()
		}
		st, err := s.startRequest(frame, time.Now())
		if err != nil {
			return err
		}
		queue <- st
	}
}

// writeLoop answers started requests in order until queue is closed, a
// response cannot be written, or a responder asks to close the connection.
func (s *Server) writeLoop(ctx context.Context, nc net.Conn, queue <-chan started, slots <-chan struct{}) error {
	var buf []byte
	for st := range queue {
		if err := ctx.Err(); err != nil {
			return err
		}
		resp, err := st.reply(ctx)
		if err != nil {
			return err
		}
		if resp != nil {
			buf = appendResponse(buf[:0], st.correlationID, st.headerV1, resp)
			if _, err := nc.Write(buf); err != nil {
				return err
			}
			if cap(buf) > 1<<20 {
				buf = nil // do not pin a large fetch response's memory
			}
		}
		<-slots
	}
	return nil
}
