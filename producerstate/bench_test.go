package producerstate

import "testing"

// BenchmarkValidateRecord measures the per-batch cost in Apply: 1000
// producers with full windows, each batch validated and recorded.
func BenchmarkValidateRecord(b *testing.B) {
	const producers = 1000
	tab := New(DefaultWindow)
	next := make([]int32, producers)
	var offset int64
	i := 0
	produce := func() {
		pid := i % producers
		h := hdr(int64(pid), 0, next[pid], 4, offset)
		if tab.Validate(h).Verdict != Append {
			b.Fatalf("producer %d seq %d not accepted", pid, next[pid])
		}
		tab.Record(h)
		next[pid] += 4
		offset += 4
		i++
	}
	for range producers * DefaultWindow {
		produce()
	}
	b.ReportAllocs()
	for b.Loop() {
		produce()
	}
}

// BenchmarkValidateDuplicate measures answering an exact retry.
func BenchmarkValidateDuplicate(b *testing.B) {
	tab := New(DefaultWindow)
	for i := range int32(DefaultWindow) {
		tab.Record(hdr(1, 0, i*4, 4, int64(i*4)))
	}
	h := hdr(1, 0, 0, 4, 0)
	b.ReportAllocs()
	for b.Loop() {
		if tab.Validate(h).Verdict != Duplicate {
			b.Fatal("not a duplicate")
		}
	}
}

// BenchmarkEncode measures snapshotting 1000 producers with full windows.
func BenchmarkEncode(b *testing.B) {
	tab := New(DefaultWindow)
	for pid := range int64(1000) {
		for i := range int32(DefaultWindow) {
			tab.Record(hdr(pid, 0, i, 1, pid*10+int64(i)))
		}
	}
	buf := tab.AppendEncode(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = tab.AppendEncode(buf[:0])
	}
}
