//go:build !race

package producerstate

import "testing"

// TestSteadyStateDoesNotAllocate: once a producer's window is full,
// Validate and Record evict in place and allocate nothing. (Not under the
// race detector, which allocates on its own.)
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	tab := New(DefaultWindow)
	var seq int32
	var offset int64
	step := func() {
		h := hdr(1, 0, seq, 2, offset)
		if tab.Validate(h).Verdict != Append {
			t.Fatalf("seq %d not accepted", seq)
		}
		tab.Record(h)
		seq += 2
		offset += 2
	}
	for range 2 * DefaultWindow {
		step()
	}
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("Validate+Record allocate %.1f times per batch, want 0", n)
	}
}
