package reqfuzz

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/test/e2e"
)

// Stats counts what a run sent and what the nodes answered. Its methods
// may be called from several goroutines.
type Stats struct {
	mu           sync.Mutex    // guards every field
	rounds       int           // rounds run
	sent         map[int16]int // requests written, per API key
	outOfRange   int           // requests at a version or key not advertised
	mutated      int           // requests whose bytes were mutated
	answered     int           // answers decoded
	codes        map[int16]int // error codes in answers, at any depth
	serverClosed int           // connections the node closed
	// closedAfter counts, per API, closes where every unanswered request
	// was clean and within the cost bound (and none an acks=0 Produce,
	// which Kafka answers with a close when it fails): the oldest is the
	// suspect, and each such close a violation.
	closedAfter perAPI
	// closedOverCost counts, per API, closes after a clean request that
	// costs more than the node admits: closes by design.
	closedOverCost map[int16]int
	lingering      int // requests unanswered at a round's end, the connection open
	// lingerHead counts, per API, the oldest of those per connection
	// (answers go in order: it holds the rest).
	lingerHead perAPI
	violations map[string]Violation // the first of each kind, API and version
	counts     map[string]int       // violations per key
	peakRSS    map[int]int64        // per node: the largest VmHWM read
	lastRSS    map[int]int64        // per node: VmRSS at the last check
	largest    []bigAnswer          // the largest answers, largest first
}

// bigAnswer is a large answer and its request.
type bigAnswer struct {
	size, node int
	fr         *request
}

// perAPI counts requests of one kind per API and keeps the first of each.
type perAPI struct {
	n     map[int16]int
	first map[int16]bigAnswer
}

func newPerAPI() perAPI { return perAPI{n: map[int16]int{}, first: map[int16]bigAnswer{}} }

func (p perAPI) add(node int, fr *request) {
	p.n[fr.key]++
	if _, ok := p.first[fr.key]; !ok {
		p.first[fr.key] = bigAnswer{node: node, fr: fr}
	}
}

// write lists the counts under what, if any, with each API's first.
func (p perAPI) write(b *strings.Builder, what string) {
	if len(p.n) == 0 {
		return
	}
	fmt.Fprintf(b, "  %s, per API, with the first:\n", what)
	for _, k := range slices.Sorted(maps.Keys(p.n)) {
		fmt.Fprintf(b, "    %s %d: %s\n", kmsg.NameForKey(k), p.n[k], p.first[k].fr.desc)
	}
}

// maxLargest is how many of the largest answers the summary lists.
const maxLargest = 8

// NewStats returns empty counters.
func NewStats() *Stats {
	return &Stats{sent: map[int16]int{}, codes: map[int16]int{}, closedOverCost: map[int16]int{},
		closedAfter: newPerAPI(), lingerHead: newPerAPI(),
		violations: map[string]Violation{}, counts: map[string]int{}, peakRSS: map[int]int64{}, lastRSS: map[int]int64{}}
}

// sentFrame counts a request the node read: each once, though a request
// written after the one that made the node close a connection is written
// again on the next.
func (s *Stats) sentFrame(fr *request) {
	s.sent[fr.key]++
	if !fr.inRange {
		s.outOfRange++
	}
	if fr.mutated {
		s.mutated++
	}
}

func (s *Stats) answer(node int, fr *request, size int, resp kmsg.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered++
	if resp != nil {
		errorCodes(reflect.ValueOf(resp), func(c int16) { s.codes[c]++ })
	}
	if len(s.largest) < maxLargest || size > s.largest[len(s.largest)-1].size {
		s.largest = append(s.largest, bigAnswer{size, node, fr})
		slices.SortFunc(s.largest, func(a, b bigAnswer) int { return b.size - a.size })
		s.largest = s.largest[:min(len(s.largest), maxLargest)]
	}
}

// outcome adds a connection's end and returns its new violations: those
// of a kind, API and version not seen before.
func (s *Stats) outcome(o *outcome) []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range o.segs {
		u := o.frames[seg.next:seg.sent]
		if !seg.serverClosed {
			for _, fr := range o.frames[seg.start:seg.sent] {
				s.sentFrame(fr)
			}
			s.lingering += len(u)
			if len(u) > 0 {
				s.lingerHead.add(o.node, u[0])
			}
			continue
		}
		c := o.culprit(seg)
		for _, fr := range o.frames[seg.start:min(c+1, seg.sent)] {
			s.sentFrame(fr)
		}
		s.serverClosed++
		if c >= seg.sent {
			continue
		}
		switch fr := o.frames[c]; {
		case fr.overCost:
			s.closedOverCost[fr.key]++
		case fr.clean() && !fr.acks0:
			s.closedAfter.add(o.node, fr)
			// Kafka answers such a request; it closes a connection for a
			// request it cannot read or will never admit.
			o.violate("closed the connection after requests it admits", fr,
				"every request unanswered was well-formed, at an advertised version and within the cost bound")
		}
	}
	var fresh []Violation
	for _, v := range o.violations {
		k := v.Key()
		if s.counts[k] == 0 {
			s.violations[k] = v
			fresh = append(fresh, v)
		}
		s.counts[k]++
	}
	return fresh
}

func (s *Stats) rss(node int, m e2e.Memory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peakRSS[node] = max(s.peakRSS[node], m.Peak)
	s.lastRSS[node] = m.RSS
}

func (s *Stats) round() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rounds++
}

// Violations is how many protocol violations of distinct kinds were seen.
func (s *Stats) Violations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.violations)
}

// String is the summary: requests per API, errors per code, connections
// closed by the nodes, peak resident memory per node, violations.
func (s *Stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	total := 0
	for _, n := range s.sent {
		total += n
	}
	fmt.Fprintf(&b, "rounds %d, requests sent %d (%d at a version or key not advertised, %d mutated), answers %d\n",
		s.rounds, total, s.outOfRange, s.mutated, s.answered)
	b.WriteString("requests sent per API:\n")
	for _, k := range slices.Sorted(maps.Keys(s.sent)) {
		fmt.Fprintf(&b, "  %5d %-28s %d\n", k, kmsg.NameForKey(k), s.sent[k])
	}
	b.WriteString("errors answered per code:\n")
	for _, c := range slices.Sorted(maps.Keys(s.codes)) {
		name := "NONE"
		if c != 0 {
			name = kerr.TypedErrorForCode(c).Message
			if c != kerr.UnknownServerError.Code && name == kerr.UnknownServerError.Message {
				name = "(not a Kafka error code)"
			}
		}
		fmt.Fprintf(&b, "  %5d %-40s %d\n", c, name, s.codes[c])
	}
	fmt.Fprintf(&b, "connections closed by the server: %d; requests left unanswered at a round's end: %d\n", s.serverClosed, s.lingering)
	s.lingerHead.write(&b, "the oldest unanswered on its connection")
	if len(s.closedOverCost) > 0 {
		b.WriteString("  closes after a well-formed request that costs more than the node admits (kafkaapi.RequestCost), per API:")
		for _, k := range slices.Sorted(maps.Keys(s.closedOverCost)) {
			fmt.Fprintf(&b, " %s %d;", kmsg.NameForKey(k), s.closedOverCost[k])
		}
		b.WriteString("\n")
	}
	s.closedAfter.write(&b, "closes after a well-formed request at an advertised version (not acks=0, within the cost bound)")
	b.WriteString("peak RSS per node (VmHWM), and RSS at the last check:")
	for _, id := range slices.Sorted(maps.Keys(s.peakRSS)) {
		fmt.Fprintf(&b, " node %d %.1f MiB, %.1f MiB;", id, float64(s.peakRSS[id])/(1<<20), float64(s.lastRSS[id])/(1<<20))
	}
	b.WriteString("\n")
	b.WriteString("largest answers:\n")
	for _, a := range s.largest {
		fmt.Fprintf(&b, "  %.1f MiB to a request of %.1f KiB: %s\n", float64(a.size)/(1<<20), float64(len(a.fr.b))/1024, a.fr.desc)
	}
	fmt.Fprintf(&b, "protocol violations: %d kinds\n", len(s.violations))
	for _, k := range slices.Sorted(maps.Keys(s.violations)) {
		v := s.violations[k]
		fmt.Fprintf(&b, "  %s (%d times), first: %s\n", k, s.counts[k], v.detail)
	}
	return b.String()
}

// Rounds is how many rounds ran.
func (s *Stats) Rounds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds
}

// Examples are, as cases, the first request of each API after which a
// node closed the connection though it was well-formed, the first of
// each API left unanswered at the head of its connection, and the
// requests of the largest answers: the requests a reader of the summary
// wants to replay.
func (s *Stats) Examples() map[string]*Case {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*Case{}
	one := func(node int, fr *request, what string) *Case {
		return &Case{Comments: []string{what + ": " + fr.desc}, Conns: []Conn{{Node: node, Frames: [][]byte{fr.b}}}}
	}
	for k, c := range s.closedAfter.first {
		out["closed-"+kmsg.NameForKey(k)] = one(c.node, c.fr, "a node closed the connection after")
	}
	for k, c := range s.lingerHead.first {
		out["unanswered-"+kmsg.NameForKey(k)] = one(c.node, c.fr, "a node had not answered by the round's end")
	}
	for i, a := range s.largest {
		out[fmt.Sprintf("largest-%d", i+1)] = one(a.node, a.fr, fmt.Sprintf("answered with %d bytes", a.size))
	}
	return out
}
