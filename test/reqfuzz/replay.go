package reqfuzz

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Case is a replayable sequence of raw requests: a regression case under
// testdata/regress, or a failing round saved by Runner.Failure.
//
// Its file is lines of text: "# ..." comments (what the case is, the
// defect it found), an optional "skip: <defect>" while the defect is not
// fixed, and per connection a line "conn <node id>" followed by one line
// "frame <hex>" per request, size prefix included.
type Case struct {
	Comments []string
	Skip     string // why the case is skipped; "" runs it
	Conns    []Conn
}

// Conn is one connection of a case and what it sends, in order.
type Conn struct {
	Node   int // the target's id
	Note   string
	Frames [][]byte
}

// ParseCase reads a case file.
func ParseCase(b []byte) (*Case, error) {
	c := &Case{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 512<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		word, rest, _ := strings.Cut(line, " ")
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			c.Comments = append(c.Comments, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case word == "skip:":
			c.Skip = strings.TrimSpace(rest)
		case word == "conn":
			id, note, _ := strings.Cut(rest, " ")
			node, err := strconv.Atoi(id)
			if err != nil {
				return nil, fmt.Errorf("line %d: node id: %w", n, err)
			}
			c.Conns = append(c.Conns, Conn{Node: node, Note: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(note), "#"))})
		case word == "frame" && len(c.Conns) > 0:
			fr, err := hex.DecodeString(strings.TrimSpace(rest))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			last := &c.Conns[len(c.Conns)-1]
			last.Frames = append(last.Frames, fr)
		default:
			return nil, fmt.Errorf("line %d: unknown %q", n, word)
		}
	}
	return c, sc.Err()
}

// Format writes the case file.
func (c *Case) Format() []byte {
	var b bytes.Buffer
	for _, l := range c.Comments {
		fmt.Fprintf(&b, "# %s\n", l)
	}
	if c.Skip != "" {
		fmt.Fprintf(&b, "skip: %s\n", c.Skip)
	}
	for _, conn := range c.Conns {
		fmt.Fprintf(&b, "conn %d", conn.Node)
		if conn.Note != "" {
			fmt.Fprintf(&b, " # %s", conn.Note)
		}
		b.WriteString("\n")
		for _, fr := range conn.Frames {
			fmt.Fprintf(&b, "frame %x\n", fr)
		}
	}
	return b.Bytes()
}

// Step is what one request of a replayed case got.
type Step struct {
	Node, Index int    // the target's id; the request's index in its conn, from 1
	What        string // answered, no answer, closed, write failed
	AnswerBytes int    // the answer's size, if answered
	DecodeErr   error  // why the answer does not decode at the request's version
}

func (s Step) String() string {
	return fmt.Sprintf("node %d request %d: %s", s.Node, s.Index, s.What)
}

// Replay sends a case's requests: per connection, each request after
// the previous one was answered, the connection closed (a new one is
// opened), or wait passed. It returns what happened to each request.
func Replay(ctx context.Context, targets []Target, c *Case, wait time.Duration) ([]Step, error) {
	var steps []Step
	for _, conn := range c.Conns {
		addr := caseTarget(targets, conn.Node).Addr
		var nc net.Conn
		for i, fr := range conn.Frames {
			if nc == nil {
				var err error
				if nc, err = dial(ctx, addr); err != nil {
					return steps, err
				}
			}
			st := exchange(nc, fr, wait)
			st.Node, st.Index = conn.Node, i+1
			if st.AnswerBytes == 0 {
				nc.Close()
				nc = nil
			}
			steps = append(steps, st)
		}
		if nc != nil {
			nc.Close()
		}
	}
	return steps, nil
}

func dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return d.DialContext(dctx, "tcp", addr)
}

// exchange writes one request and reads one answer.
func exchange(nc net.Conn, fr []byte, wait time.Duration) Step {
	nc.SetDeadline(time.Now().Add(wait))
	if _, err := nc.Write(fr); err != nil {
		return Step{What: "write failed: " + err.Error()}
	}
	_, body, size, err := readAnswer(nc)
	var ne net.Error
	switch {
	case err == nil:
		st := Step{What: fmt.Sprintf("answered (%d bytes)", size), AnswerBytes: size}
		if body != nil && len(fr) >= headerLen {
			key, v := int16(binary.BigEndian.Uint16(fr[4:])), int16(binary.BigEndian.Uint16(fr[6:]))
			if _, err := decodeAnswer(key, v, body); err != nil && key != int16(kmsg.ApiVersions) {
				st.DecodeErr = err
				st.What += ", does not decode: " + err.Error()
			}
		}
		return st
	case errors.As(err, &ne) && ne.Timeout():
		return Step{What: "no answer"}
	}
	return Step{What: "closed: " + err.Error()}
}

// caseTarget is the target with id, or, when a case recorded against
// more nodes is replayed against fewer, the one id maps to.
func caseTarget(targets []Target, id int) Target {
	for _, t := range targets {
		if t.ID == id {
			return t
		}
	}
	return targets[(max(id, 1)-1)%len(targets)]
}
