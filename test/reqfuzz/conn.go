package reqfuzz

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"runtime"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxDecode is the largest answer decoded (and its error codes counted):
// a malformed answer decodes into up to a few hundred times its size
// (each byte can claim an array element), which must not exhaust the
// fuzzer's memory.
const maxDecode = 4 << 20

// stuckAfter is how long after its read deadline a reader may take to
// return before the fuzzer prints every goroutine's stack and leaves it
// (twice, a reader ran for 30 minutes; where is not known yet).
const stuckAfter = time.Minute

// maxSaneAnswer is the largest answer a node of a small cluster should
// give: above fetch.max.bytes (50 MiB), far above any listing of the
// fuzz cluster. A larger one is a violation: a request made the node
// spend far more than it sent.
const maxSaneAnswer = 64 << 20

// outcome is what one connection of a round saw. When the node closes
// the TCP connection, the requests after the one taken as the cause are
// sent again on a new one, so that every request gets its turn: one TCP
// connection is a segment.
type outcome struct {
	node       int        // the target's id
	frames     []*request // what it was to send
	segs       []segment
	answered   int
	violations []Violation // protocol breaches in the answers
}

// segment is one TCP connection of an outcome.
type segment struct {
	// frames[start:sent] were written; frames[start:next] were answered
	// or passed by a later answer.
	start, next, sent int
	serverClosed      bool // the node closed the connection
	dialErr           error
}

// last is the outcome's last segment.
func (o *outcome) last() segment {
	if len(o.segs) == 0 {
		return segment{}
	}
	return o.segs[len(o.segs)-1]
}

// unanswered are the requests of the last segment that got no answer.
func (o *outcome) unanswered() []*request {
	s := o.last()
	return o.frames[s.next:s.sent]
}

// pipeline sends frames to addr without waiting for answers, reading
// the answers as they come. A segment ends when every request written is
// answered, when the node closes the connection (the next segment starts
// after its culprit), or linger after the last write (the next starts
// after the last request written).
func pipeline(ctx context.Context, node int, addr string, frames []*request, apis []API, linger time.Duration, st *Stats) *outcome {
	o := &outcome{node: node, frames: frames}
	for start := 0; start < len(frames) && ctx.Err() == nil; {
		s := o.segment(ctx, addr, start, apis, linger, st)
		o.segs = append(o.segs, s)
		switch c := o.culprit(s); {
		case s.dialErr != nil:
			return o
		case s.serverClosed && c < s.sent:
			start = c + 1
		default:
			start = max(s.sent, start+1) // a write that failed at once still moves on
		}
	}
	return o
}

// culprit is the index of the request that made the node close segment
// s: the oldest unanswered one that is not clean, is an acks=0 Produce
// or costs more than the node admits (answers to those before it can be
// lost to the reset of a connection closed with unread input), else the
// oldest unanswered.
func (o *outcome) culprit(s segment) int {
	for i := s.next; i < s.sent; i++ {
		if fr := o.frames[i]; !fr.clean() || fr.acks0 || fr.overCost {
			return i
		}
	}
	return s.next
}

// segment writes frames[start:] on a new connection, up to and including
// a request whose size prefix lies, while a reader takes the answers.
func (o *outcome) segment(ctx context.Context, addr string, start int, apis []API, linger time.Duration, st *Stats) segment {
	s := segment{start: start, next: start, sent: start}
	nc, err := dial(ctx, addr)
	if err != nil {
		s.dialErr = err
		return s
	}
	defer nc.Close()
	done := make(chan readState, 1)
	go func() { done <- o.read(nc, start, apis, st) }()
	for _, fr := range o.frames[start:] {
		nc.SetWriteDeadline(time.Now().Add(linger))
		if _, err := nc.Write(fr.b); err != nil || ctx.Err() != nil {
			break
		}
		s.sent++
		if fr.last {
			break
		}
	}
	// The deadline ends a read that waits for more.
	nc.SetReadDeadline(time.Now().Add(linger))
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	select {
	case rs := <-done:
		s.next = rs.next
		o.answered += rs.answered
		o.violations = append(o.violations, rs.violations...)
		s.serverClosed = errors.Is(rs.err, io.EOF) || errors.Is(rs.err, syscall.ECONNRESET) || errors.Is(rs.err, io.ErrUnexpectedEOF)
	case <-time.After(linger + stuckAfter):
		// The deadline passed long ago: the reader is stuck in the
		// fuzzer's own code. Say where, and leave it.
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "reqfuzz: a reader of %s is stuck %s after its deadline; every goroutine:\n%s\n",
			addr, stuckAfter, buf[:runtime.Stack(buf, true)])
		o.violate("fuzzer's reader stuck", nil, "every goroutine's stack is printed above")
	}
	return s
}

// readState is what a segment's reader saw.
type readState struct {
	next       int // frames before it were answered or passed
	answered   int
	violations []Violation
	err        error // why reading ended; nil after the last frame's answer
}

func (rs *readState) violate(kind string, fr *request, detail string) {
	rs.violations = append(rs.violations, Violation{kind, fr, detail})
}

// readAnswer reads one answer frame: its correlation id, and its body
// if it is at most maxSaneAnswer bytes, else nil (its bytes are read and
// dropped, so that a node's huge answers cannot exhaust the fuzzer's own
// memory). size is the frame's size.
func readAnswer(r io.Reader) (corr int32, body []byte, size int, err error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return 0, nil, 0, err
	}
	size = int(int32(binary.BigEndian.Uint32(hdr[:4])))
	if size < 4 {
		return 0, nil, size, fmt.Errorf("%w: an answer frame of %d bytes", errBadFrame, size)
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return 0, nil, size, err
	}
	corr = int32(binary.BigEndian.Uint32(hdr[4:]))
	if size > maxSaneAnswer {
		_, err := io.CopyN(io.Discard, r, int64(size-4))
		return corr, nil, size, err
	}
	body = make([]byte, size-4)
	_, err = io.ReadFull(r, body)
	return corr, body, size, err
}

// errBadFrame is an answer whose size prefix is impossible.
var errBadFrame = errors.New("bad answer frame")

// read reads answers from frames[next:] on, until the last frame's, or
// an error.
func (o *outcome) read(nc net.Conn, next int, apis []API, st *Stats) readState {
	rs := readState{next: next}
	br := bufio.NewReader(nc)
	for {
		corr, body, size, err := readAnswer(br)
		if errors.Is(err, errBadFrame) {
			rs.violate("bad answer frame", nil, err.Error())
			return rs
		}
		if err != nil {
			rs.err = err
			return rs
		}
		i := int(corr) - 1
		if i < rs.next || i >= len(o.frames) {
			rs.violate("unexpected correlation id", nil, fmt.Sprintf("%d, expected one of %d..%d", i+1, rs.next+1, len(o.frames)))
			return rs
		}
		for _, skipped := range o.frames[rs.next:i] {
			if skipped.clean() && !skipped.acks0 {
				rs.violate("answer skipped", skipped, "no answer, but one to a later request")
			}
		}
		rs.next = i + 1
		rs.answered++
		fr := o.frames[i]
		switch {
		case body == nil:
			st.answer(o.node, fr, size, nil)
			rs.violate("oversized answer", fr, fmt.Sprintf("%d MiB answer to a request of %d KiB: %s", size>>20, len(fr.b)>>10, Shape(fr.b)))
		case len(body) > maxDecode:
			st.answer(o.node, fr, size, nil)
		default:
			if kind, err := answer(o.node, fr, body, apis, st); err != nil {
				rs.violate(kind, fr, err.Error())
			}
		}
		if rs.next == len(o.frames) {
			return rs
		}
	}
}

// Violation is an answer that breaks the protocol.
type Violation struct {
	kind   string
	fr     *request // the request it concerns, if known
	detail string
}

// Key groups violations of one kind on one API and version.
func (v Violation) Key() string {
	if v.fr == nil {
		return v.kind
	}
	return fmt.Sprintf("%s: %s v%d", v.kind, kmsg.NameForKey(v.fr.key), v.fr.version)
}

func (o *outcome) violate(kind string, fr *request, detail string) {
	o.violations = append(o.violations, Violation{kind, fr, detail})
}

// answer decodes fr's answer and counts its error codes. An answer that
// does not decode at the version asked, or an answer to a version the
// node does not advertise, is an error.
func answer(node int, fr *request, body []byte, apis []API, st *Stats) (kind string, err error) {
	a, inRange := served(apis, fr.key, fr.version)
	v := fr.version
	switch {
	case fr.key == int16(kmsg.ApiVersions) && v > a.Max:
		v = 0 // Kafka answers an unknown ApiVersions version with v0
	case !inRange:
		return "answered an unserved version", errors.New("the node answered instead of closing")
	}
	resp, err := decodeAnswer(fr.key, v, body)
	if err != nil {
		return "undecodable answer", err
	}
	st.answer(node, fr, len(body)+4, resp)
	return "", nil
}

// decodeAnswer decodes an answer body (after the correlation id) of API
// key at version v.
func decodeAnswer(key, v int16, body []byte) (kmsg.Response, error) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil, fmt.Errorf("an answer to key %d, unknown to kmsg", key)
	}
	resp.SetVersion(v)
	if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	// kmsg ignores bytes after the last field, and reads a string whose
	// int16 length wrapped negative as null: what it read must encode
	// back to as many bytes as were sent.
	if n := len(resp.AppendTo(nil)); n != len(body) {
		return nil, fmt.Errorf("%d bytes sent, but what they decode to encodes to %d", len(body), n)
	}
	return resp, nil
}

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// errorCodes calls fn with every ErrorCode field in v, at any depth.
func errorCodes(v reflect.Value, fn func(int16)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			errorCodes(v.Elem(), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := v.Field(i)
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				fn(int16(f.Int()))
				continue
			}
			if k := f.Kind(); k == reflect.Struct || k == reflect.Slice || k == reflect.Pointer {
				errorCodes(f, fn)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			errorCodes(v.Index(i), fn)
		}
	}
}
