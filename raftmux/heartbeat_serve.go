package raftmux

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// serveHeartbeats serves one peer's heartbeat connection (see serveEach).
func (m *Mux) serveHeartbeats(c net.Conn) {
	s := &hbServer{m: m, conn: c, r: bufio.NewReaderSize(c, 16<<10)}
	s.watchdog = time.AfterFunc(time.Hour, s.tick)
	s.watchdog.Stop()
	s.work(0, false)
}

// hbServer answers the heartbeat frames of one inbound connection, in
// order. One worker goroutine at a time holds the turn: it reads a frame,
// calls each entry's heartbeat handler and writes the response frame. If a
// handler overruns HeartbeatHandlerTimeout, the watchdog answers that entry
// with hbSlow and hands the turn to a new worker, which goes on with the
// next entry; the old worker leaves when its handler returns. So one stuck
// group costs a frame at most about 1.5 HeartbeatHandlerTimeout, once: the
// group stays busy until its handler returns, and its later heartbeats are
// answered hbBusy at once.
type hbServer struct {
	m        *Mux
	conn     net.Conn
	r        *bufio.Reader // read by the turn holder only
	wbuf     []byte        // written by the turn holder only
	watchdog *time.Timer   // runs tick while a frame is being handled

	mu       sync.Mutex // guards every field below
	turn     uint64     // the current turn holder's number
	id       uint64     // the frame being handled
	entries  []hbEntry
	results  []hbResult
	next     int       // first entry whose handler has not been called
	cur      int       // entry whose handler is running, or -1
	curStart time.Time // when cur's handler was called
	closed   bool      // the connection is done; tick must not hand over
}

// work is the turn holder's loop: its number is turn, and resume means it
// takes over a frame in progress rather than reading a new one.
func (s *hbServer) work(turn uint64, resume bool) {
	defer s.m.wg.Done()
	for {
		if !resume {
			if !s.readFrame() {
				return
			}
			s.watchdog.Reset(s.m.hbHandlerTimeout / 2)
		}
		resume = false
		for {
			s.mu.Lock()
			if s.turn != turn {
				s.mu.Unlock()
				return // handed over while our handler ran; its entry is answered
			}
			if s.next == len(s.entries) {
				s.mu.Unlock()
				break
			}
			i := s.next
			e := &s.entries[i]
			s.next, s.cur, s.curStart = i+1, i, time.Now()
			s.mu.Unlock()

			r := s.m.handleHeartbeat(e)

			s.mu.Lock()
			if s.turn == turn {
				s.results[i], s.cur = r, -1
			}
			s.mu.Unlock()
		}
		s.watchdog.Stop()
		s.mu.Lock()
		id, results := s.id, s.results
		s.mu.Unlock()
		s.wbuf = appendResponseFrame(s.wbuf[:0], id, results)
		_ = s.conn.SetWriteDeadline(time.Now().Add(DefaultTimeout))
		if _, err := s.conn.Write(s.wbuf); err != nil {
			s.close(err)
			return
		}
	}
}

// readFrame reads and decodes the next request frame into s, or closes the
// connection and returns false.
func (s *hbServer) readFrame() bool {
	body, err := readFrame(s.r)
	var (
		id      uint64
		entries []hbEntry
	)
	if err == nil {
		id, entries, err = decodeRequest(body)
	}
	if err != nil {
		s.close(err)
		return false
	}
	s.m.hbFramesReceived.Add(1)
	s.m.hbReceived.Add(uint64(len(entries)))
	s.mu.Lock()
	s.id, s.entries, s.results = id, entries, make([]hbResult, len(entries))
	s.next, s.cur = 0, -1
	s.mu.Unlock()
	return true
}

// close ends the connection; err says why.
func (s *hbServer) close(err error) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.watchdog.Stop()
	_ = s.conn.Close()
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !s.m.isClosed() {
		s.m.log.Debug("heartbeat connection closed", "remote", s.conn.RemoteAddr().String(), "error", err)
	}
}

// tick runs every half HeartbeatHandlerTimeout while a frame is handled and
// hands the turn over if the running handler has overrun.
func (s *hbServer) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || (s.cur < 0 && s.next == len(s.entries)) {
		return // no frame in progress: its turn holder stopped the watchdog or will
	}
	if s.cur >= 0 && time.Since(s.curStart) >= s.m.hbHandlerTimeout {
		s.results[s.cur], s.cur = hbResult{status: hbSlow}, -1
		s.turn++
		// The overrunning worker still holds its count, so this cannot race Wait.
		s.m.wg.Add(1)
		go s.work(s.turn, true)
	}
	s.watchdog.Reset(s.m.hbHandlerTimeout / 2)
}

// handleHeartbeat calls the heartbeat handler of e's group and returns its
// answer. raft's handler (processHeartbeat) answers before it returns, or
// not at all when raft is shutting down.
func (m *Mux) handleHeartbeat(e *hbEntry) hbResult {
	t := m.lookupGroup(e.group)
	if t == nil {
		return hbResult{status: hbUnknownGroup}
	}
	fn := t.handler.Load()
	if fn == nil {
		return hbResult{status: hbUnknownGroup}
	}
	if !t.busy.CompareAndSwap(false, true) {
		return hbResult{status: hbBusy}
	}
	defer t.busy.Store(false)
	respCh := make(chan raft.RPCResponse, 1)
	req := e.req
	(*fn)(raft.RPC{Command: &req, RespChan: respCh})
	select {
	case r := <-respCh:
		if r.Error != nil {
			return hbResult{status: hbRemoteError, msg: r.Error.Error()}
		}
		resp, ok := r.Response.(*raft.AppendEntriesResponse)
		if !ok || resp == nil {
			return hbResult{status: hbRemoteError, msg: "heartbeat handler answered with an unexpected type"}
		}
		return hbResult{status: hbOK, resp: *resp}
	default:
		return hbResult{status: hbNoResponse}
	}
}
