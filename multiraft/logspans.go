package multiraft

// logSpans is the set of indexes a group's raft log holds, as runs of
// consecutive indexes, kept as entries are stored and deleted so that the
// log's first and last index need no read of the store. Raft's log has a
// gap after a follower installs a snapshot beyond its last entry (raft
// keeps its trailing entries below it), so there may be several runs.
// A set that grows past maxLogSpans runs, or whose store's contents are
// not known (a failed write), is forgotten until it is read again.
type logSpans struct {
	runs  []span // ascending, neither overlapping nor adjacent
	known bool
}

// span is the indexes lo..hi.
type span struct{ lo, hi uint64 }

// maxLogSpans bounds the runs kept; raft leaves one or two.
const maxLogSpans = 16

// edges is the first and last index, 0 and 0 for an empty log.
func (s *logSpans) edges() (first, last uint64) {
	if len(s.runs) == 0 {
		return 0, 0
	}
	return s.runs[0].lo, s.runs[len(s.runs)-1].hi
}

// add notes indexes lo..hi stored.
func (s *logSpans) add(lo, hi uint64) {
	if !s.known {
		return
	}
	n := len(s.runs)
	switch {
	case n == 0 || lo > s.runs[n-1].hi+1: // past the end, after a gap or none
		s.runs = append(s.runs, span{lo, hi})
	case lo >= s.runs[n-1].lo: // the last run goes on
		s.runs[n-1].hi = max(s.runs[n-1].hi, hi)
	default:
		merged := span{lo, hi}
		out := make([]span, 0, n+1)
		for _, r := range s.runs {
			switch {
			case r.hi+1 < merged.lo:
				out = append(out, r)
			case merged.hi+1 < r.lo: // r and the rest lie above
				if merged.lo != 0 {
					out, merged = append(out, merged), span{}
				}
				out = append(out, r)
			default: // overlapping or adjacent
				merged = span{min(r.lo, merged.lo), max(r.hi, merged.hi)}
			}
		}
		if merged.lo != 0 {
			out = append(out, merged)
		}
		s.runs = out
	}
	s.bound()
}

// remove notes indexes lo..hi deleted.
func (s *logSpans) remove(lo, hi uint64) {
	if !s.known || len(s.runs) == 0 {
		return
	}
	if r := &s.runs[0]; lo <= r.lo && hi >= r.lo && hi < r.hi { // raft's compaction of the head
		r.lo = hi + 1
		return
	}
	out := make([]span, 0, len(s.runs)+1)
	for _, r := range s.runs {
		if r.hi < lo || r.lo > hi {
			out = append(out, r)
			continue
		}
		if r.lo < lo {
			out = append(out, span{r.lo, lo - 1})
		}
		if r.hi > hi {
			out = append(out, span{hi + 1, r.hi})
		}
	}
	s.runs = out
	s.bound()
}

// set replaces the set with runs, read from the store.
func (s *logSpans) set(runs []span) {
	s.runs, s.known = runs, true
	s.bound()
}

// forget drops the set: what the store holds is not known.
func (s *logSpans) forget() { s.runs, s.known = nil, false }

func (s *logSpans) bound() {
	if len(s.runs) > maxLogSpans {
		s.forget()
	}
}
