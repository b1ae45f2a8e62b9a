package reqfuzz

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Failure describes the last round after a failed check or a violation:
// the seed and round that replay it, what failed, and per connection the
// request that preceded the failure (the oldest unanswered one, or the
// last one sent). It saves the round's requests as a case file in
// Config.OutDir and names it.
func (r *Runner) Failure(err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reqfuzz: seed %d round %d failed (replay with REQFUZZ_SEED=%d): %v\n", r.cfg.Seed, r.round, r.cfg.Seed, err)
	b.WriteString("the requests that preceded it, per connection (the oldest unanswered, else the last sent):\n")
	for c, o := range r.outcomes {
		fr, i, state := suspect(o)
		s := o.last()
		if fr == nil {
			fmt.Fprintf(&b, "  conn %d to node %d: nothing sent (%v)\n", c, o.node, s.dialErr)
			continue
		}
		fmt.Fprintf(&b, "  conn %d to node %d, TCP connection %d, request %d of %d (%s, server closed: %v): %s\n    %s\n    %s\n",
			c, o.node, len(o.segs), i+1, len(o.frames), state, s.serverClosed, fr.desc, Shape(fr.b), hexPrefix(fr.b, 256))
	}
	if path, err := r.saveRound(); err != nil {
		fmt.Fprintf(&b, "could not save the round: %v\n", err)
	} else if path != "" {
		fmt.Fprintf(&b, "the round's requests, as a case file to replay: %s\n", path)
	}
	return b.String()
}

// suspect is the request of o that preceded a failure, its index, and
// whether it was answered.
func suspect(o *outcome) (*request, int, string) {
	s := o.last()
	if s.next < s.sent {
		return o.frames[s.next], s.next, "unanswered"
	}
	if s.sent > 0 {
		return o.frames[s.sent-1], s.sent - 1, "answered"
	}
	return nil, 0, ""
}

// hexPrefix is b in hex, cut after n bytes.
func hexPrefix(b []byte, n int) string {
	if len(b) <= n {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%x... (%d bytes)", b[:n], len(b))
}

// roundCase is the last round as a case: every connection's requests
// that were sent, in order, to its node.
func (r *Runner) roundCase() *Case {
	c := &Case{Comments: []string{fmt.Sprintf("reqfuzz seed %d round %d", r.cfg.Seed, r.round)}}
	for i, o := range r.outcomes {
		for j, s := range o.segs {
			if s.sent == s.start {
				continue
			}
			conn := Conn{Node: o.node, Note: fmt.Sprintf("connection %d, TCP connection %d", i, j+1)}
			for _, fr := range o.frames[s.start:s.sent] {
				conn.Frames = append(conn.Frames, fr.b)
			}
			c.Conns = append(c.Conns, conn)
		}
	}
	return c
}

// saveRound writes the last round's case file into OutDir.
func (r *Runner) saveRound() (string, error) {
	if r.cfg.OutDir == "" {
		return "", nil
	}
	if err := os.MkdirAll(r.cfg.OutDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(r.cfg.OutDir, fmt.Sprintf("seed%d-round%d.case", r.cfg.Seed, r.round))
	return path, os.WriteFile(path, r.roundCase().Format(), 0o644)
}

// crashLines is the part of a node's log that explains an exit: from the
// first "panic:" or "fatal error:" line on, at most 60 lines, else the
// last 20 lines.
func crashLines(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return strings.Join(lines[i:min(len(lines), i+60)], "\n")
		}
	}
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}
