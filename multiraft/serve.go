package multiraft

import (
	"io"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/frame"
)

// serveStream serves one stream a peer opened: its open frame says what
// it carries. node is the session's certificate's (0 without TLS).
func (h *Host) serveStream(st *yamux.Stream, node int32) {
	_ = st.SetReadDeadline(time.Now().Add(h.tun.HandshakeTimeout))
	body, err := frame.Read(st, 2, maxOpenBody)
	var (
		kind    byte
		service string
	)
	if err == nil {
		kind, service, err = parseOpen(body)
	}
	if err != nil {
		h.log.Debug("closing a stream with a bad open frame", "err", err)
		_ = st.Close()
		return
	}
	_ = st.SetReadDeadline(time.Time{})
	switch kind {
	case streamCalls:
		h.serveCalls(st, node)
	case streamService:
		h.deliver(st, service, node)
	}
}

// serveCalls answers the calls on one stream, one after another, until the
// peer closes it, a call is malformed, or a call's sender is not node.
func (h *Host) serveCalls(st *yamux.Stream, node int32) {
	defer st.Close()
	var buf []byte // the stream's request buffer, reused unless the decoded request aliases it
	for {
		body, err := frame.ReadInto(st, 1, uint32(h.tun.MaxFrame), buf)
		if err != nil {
			if !isEOF(err) && !h.isClosed() {
				h.log.Debug("call stream closed", "err", err)
			}
			return
		}
		kind, group, payload, err := parseRequest(body)
		if err != nil {
			h.log.Debug("call stream closed", "err", err)
			return
		}
		var (
			resp []byte
			more = true
		)
		buf = body[:0]
		if aliasesBody(kind) {
			buf = nil
		}
		if kind == callHeartbeats {
			var results []byte
			if results, err = h.serveHeartbeats(payload, node); err != nil {
				h.log.Debug("call stream closed", "err", err)
				return
			}
			resp = appendResponse(nil, statusOK, results)
		} else {
			resp, more = h.serveRPC(st, node, kind, group, payload)
		}
		_ = st.SetWriteDeadline(time.Now().Add(h.tun.CallTimeout))
		if _, err := st.Write(resp); err != nil || !more {
			return
		}
		_ = st.SetWriteDeadline(time.Time{})
	}
}

// aliasesBody reports whether a call of kind, decoded, refers to its
// frame's body (a heartbeat's entries, an AppendEntries' fields), so that
// the body is not read over by the stream's next call.
func aliasesBody(kind byte) bool { return kind == callHeartbeats || kind == callAppendEntries }

// newCommand returns the request a call of kind decodes into.
func newCommand(kind byte) any {
	switch kind {
	case callAppendEntries:
		return new(raft.AppendEntriesRequest)
	case callRequestVote:
		return new(raft.RequestVoteRequest)
	case callRequestPreVote:
		return new(raft.RequestPreVoteRequest)
	case callTimeoutNow:
		return new(raft.TimeoutNowRequest)
	case callInstallSnapshot:
		return new(raft.InstallSnapshotRequest)
	}
	return nil
}

// decodeCall decodes a call's request and checks that node sent it; when
// it cannot be served, refused is the answer (then the stream closes: a
// sane peer redials).
func (h *Host) decodeCall(node int32, kind byte, group string, payload []byte) (cmd any, refused []byte) {
	cmd = newCommand(kind)
	var err error
	if ae, ok := cmd.(*raft.AppendEntriesRequest); ok {
		err = decodeAERequestIn(payload, ae) // serveCalls hands the body over: aliasesBody
	} else {
		err = decodePayload(payload, cmd)
	}
	if err != nil {
		return nil, appendResponse(nil, statusRemoteError, []byte(truncate("bad request: "+err.Error())))
	}
	if err := h.checkSender(node, cmd.(raft.WithRPCHeader).GetRPCHeader()); err != nil {
		h.log.Warn("refused an RPC", "group", group, "err", err)
		return nil, appendResponse(nil, statusRemoteError, []byte(truncate(err.Error())))
	}
	return cmd, nil
}

// serveRPC hands one RPC to its group's raft and returns the response
// frame; more is false when the stream cannot carry another call (a
// snapshot's bytes were not all read, or the call was malformed).
func (h *Host) serveRPC(st io.Reader, node int32, kind byte, group string, payload []byte) (resp []byte, more bool) {
	h.stats.callsReceived.Add(1)
	snapshot := kind == callInstallSnapshot
	if kind == callTimeoutNow && h.draining.Load() {
		return appendResponse(nil, statusRemoteError, []byte("node is stopping: it takes no leadership")), true
	}
	cmd, refused := h.decodeCall(node, kind, group, payload)
	if refused != nil {
		return refused, false
	}
	// A group's members open it at about the same time, and its first
	// candidate may ask for votes before this member has.
	t := h.awaitGroup(group, h.tun.OpenGrace)
	if t == nil {
		return appendResponse(nil, statusUnknownGroup, nil), !snapshot
	}
	var answered func(raft.RPCResponse)
	switch req := cmd.(type) {
	case *raft.AppendEntriesRequest:
		t.noteLeader(req)
		t.noteCommit(req)
	case *raft.RequestVoteRequest:
		answered = t.watchTransferVote(req)
	}
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: cmd, RespChan: respCh}
	var data *io.LimitedReader
	var expired <-chan time.Time
	if snapshot {
		data = &io.LimitedReader{R: st, N: cmd.(*raft.InstallSnapshotRequest).Size}
		rpc.Reader = data
	} else {
		// Give up before the caller does (its bound is the same
		// CallTimeout), so that it learns why.
		timer := time.NewTimer(h.tun.CallTimeout * 3 / 4)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case t.consumer <- rpc:
	case <-expired:
		return appendResponse(nil, statusNoResponse, nil), true
	case <-t.closed:
		return appendResponse(nil, statusUnknownGroup, nil), !snapshot
	case <-h.ctx.Done():
		return appendResponse(nil, statusNoResponse, nil), false
	}
	var r raft.RPCResponse
	select {
	case r = <-respCh:
	case <-expired:
		return appendResponse(nil, statusNoResponse, nil), true
	case <-t.closed:
		// An answer given just before the group closed still counts:
		// select picks at random when both are ready.
		select {
		case r = <-respCh:
		default:
			return appendResponse(nil, statusNoResponse, nil), !snapshot
		}
	case <-h.ctx.Done():
		return appendResponse(nil, statusNoResponse, nil), false
	}
	more = data == nil || data.N == 0
	if r.Error != nil {
		return appendResponse(nil, statusRemoteError, []byte(truncate(r.Error.Error()))), more
	}
	if answered != nil {
		answered(r)
	}
	b, at := frame.Begin(make([]byte, 0, 128))
	b = append(b, statusOK)
	b, err := appendPayload(b, r.Response)
	if err != nil {
		return appendResponse(nil, statusRemoteError, []byte(truncate("encode response: "+err.Error()))), more
	}
	return frame.End(b, at), more
}
