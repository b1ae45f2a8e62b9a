package multiraft

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// logSpans holds exactly the indexes stored and not deleted since, through
// random stores and deletions anywhere (overlapping, adjacent, inside a
// gap), or is forgotten when it needs more than maxLogSpans runs.
func TestLogSpansMatchAModelSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		s := logSpans{known: true}
		model := map[uint64]bool{}
		for step := range 60 {
			lo := uint64(1 + rng.IntN(60))
			hi := lo + uint64(rng.IntN(12))
			if rng.IntN(2) == 0 {
				s.add(lo, hi)
				for i := lo; i <= hi; i++ {
					model[i] = true
				}
			} else {
				s.remove(lo, hi)
				for i := lo; i <= hi; i++ {
					delete(model, i)
				}
			}
			if !s.known {
				if len(spansOf(model)) <= maxLogSpans {
					t.Fatalf("round %d step %d: forgotten with %d runs", round, step, len(spansOf(model)))
				}
				break
			}
			if got, want := s.runs, spansOf(model); !slices.Equal(got, want) {
				t.Fatalf("round %d step %d: runs %v, want %v", round, step, got, want)
			}
		}
	}
}

// spansOf is the runs of consecutive indexes of set, ascending.
func spansOf(set map[uint64]bool) []span {
	var runs []span
	for i := uint64(1); i <= 100; i++ {
		switch n := len(runs); {
		case !set[i]:
		case n > 0 && runs[n-1].hi+1 == i:
			runs[n-1].hi = i
		default:
			runs = append(runs, span{i, i})
		}
	}
	return runs
}
