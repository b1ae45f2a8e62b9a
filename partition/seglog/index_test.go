package seglog

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomIndex notes n batches of random sizes and timestamps.
func randomIndex(seed uint64, n, interval int) (offsetIndex, []indexEntry) {
	rng := rand.New(rand.NewPCG(seed, 2))
	var x offsetIndex
	var batches []indexEntry // every batch: rel, pos, its own max timestamp
	var rel, pos uint32
	for range n {
		ts := int64(rng.IntN(1000))
		x.note(rel, pos, ts, interval)
		batches = append(batches, indexEntry{rel: rel, pos: pos, maxTS: ts})
		rel += 1 + uint32(rng.IntN(5))
		pos += 61 + uint32(rng.IntN(500))
	}
	return x, batches
}

func TestIndexNoteSpacing(t *testing.T) {
	x, batches := randomIndex(1, 500, 1000)
	if x.entries[0].rel != 0 || x.entries[0].pos != 0 {
		t.Fatalf("first entry %+v", x.entries[0])
	}
	for i := 1; i < len(x.entries); i++ {
		gap := x.entries[i].pos - x.entries[i-1].pos
		if gap < 1000 || gap >= 1000+561 {
			t.Fatalf("entries %d and %d are %d bytes apart, want [interval, interval+max batch)", i-1, i, gap)
		}
	}
	if len(x.entries) >= len(batches) || len(x.entries) < 2 {
		t.Fatalf("%d entries for %d batches is not sparse", len(x.entries), len(batches))
	}
}

func TestIndexFindAndFindTime(t *testing.T) {
	x, batches := randomIndex(2, 400, 700)
	for _, b := range batches {
		for _, rel := range []uint32{b.rel, b.rel + 1} {
			e := x.find(rel)
			// The entry must be the last one at or before rel.
			i := slices.IndexFunc(x.entries, func(f indexEntry) bool { return f == e })
			if e.rel > rel || (i+1 < len(x.entries) && x.entries[i+1].rel <= rel) {
				t.Fatalf("find(%d) = %+v", rel, e)
			}
		}
	}
	if e := x.find(math.MaxUint32); e != x.entries[len(x.entries)-1] {
		t.Fatalf("find(max) = %+v", e)
	}
	for ts := int64(-1); ts <= 1001; ts++ {
		first := slices.IndexFunc(batches, func(b indexEntry) bool { return b.maxTS >= ts })
		e, ok := x.findTime(ts)
		if ok != (first >= 0) {
			t.Fatalf("findTime(%d) ok=%v, brute force found batch %d", ts, ok, first)
		}
		if !ok {
			continue
		}
		// The entry's interval must hold that first batch.
		i := slices.IndexFunc(x.entries, func(f indexEntry) bool { return f == e })
		b := batches[first]
		if b.pos < e.pos || (i+1 < len(x.entries) && b.pos >= x.entries[i+1].pos) {
			t.Fatalf("findTime(%d) = entry at %d, first batch at %d", ts, e.pos, b.pos)
		}
	}
}

func TestIndexCutBefore(t *testing.T) {
	x, batches := randomIndex(3, 200, 900)
	orig := slices.Clone(x.entries)
	for _, b := range batches[1:] {
		kept, redo, ok := x.cutBefore(b.pos)
		if !ok {
			t.Fatalf("cutBefore(%d) found nothing", b.pos)
		}
		all := append(slices.Clone(kept.entries), redo)
		for _, e := range all {
			if e.pos >= b.pos {
				t.Fatalf("cutBefore(%d) kept entry at %d", b.pos, e.pos)
			}
		}
		if !slices.Equal(all, orig[:len(all)]) || (len(all) < len(orig) && orig[len(all)].pos < b.pos) {
			t.Fatalf("cutBefore(%d) is not the prefix of entries before it", b.pos)
		}
	}
	if _, _, ok := x.cutBefore(0); ok {
		t.Fatal("cutBefore(0) kept something")
	}
	if !slices.Equal(x.entries, orig) {
		t.Fatal("cutBefore changed the shared entries")
	}
}

func TestIndexFileRoundTrip(t *testing.T) {
	x, _ := randomIndex(4, 300, 500)
	last := x.entries[len(x.entries)-1]
	data := encodeIndex(1000, int64(last.pos)+100, 1000+int64(last.rel)+3, &x)
	f, err := decodeIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.base != 1000 || f.size != int64(last.pos)+100 || f.next != 1000+int64(last.rel)+3 || !slices.Equal(f.idx.entries, x.entries) {
		t.Fatalf("round trip: %+v", f)
	}
	empty, err := decodeIndex(encodeIndex(5, 0, 5, &offsetIndex{}))
	if err != nil || empty.base != 5 || len(empty.idx.entries) != 0 {
		t.Fatalf("empty index: %+v, %v", empty, err)
	}
	// Every single flipped bit is caught.
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 1 << (i % 8)
		if _, err := decodeIndex(bad); !errors.Is(err, errBadIndex) {
			t.Fatalf("bit flip in byte %d accepted: %v", i, err)
		}
	}
	for _, n := range []int{0, 10, len(data) - 1} {
		if _, err := decodeIndex(data[:n]); !errors.Is(err, errBadIndex) {
			t.Fatalf("%d-byte prefix accepted", n)
		}
	}
}

func TestIndexFileStructureChecked(t *testing.T) {
	entries := []indexEntry{{0, 0, 5}, {3, 100, 7}, {9, 250, 7}}
	for _, tc := range []struct {
		name             string
		base, size, next int64
		entries          []indexEntry
	}{
		{"first entry not at start", 0, 300, 20, []indexEntry{{1, 0, 5}}},
		{"offsets not increasing", 0, 300, 20, []indexEntry{{0, 0, 5}, {3, 100, 7}, {3, 250, 7}}},
		{"positions not increasing", 0, 300, 20, []indexEntry{{0, 0, 5}, {3, 100, 7}, {9, 100, 7}}},
		{"timestamps decreasing", 0, 300, 20, []indexEntry{{0, 0, 5}, {3, 100, 4}}},
		{"position past size", 0, 250, 20, entries},
		{"offset past next", 0, 300, 9, entries},
		{"bytes without entries", 0, 300, 20, nil},
		{"next before base", 10, 0, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := encodeIndex(tc.base, tc.size, tc.next, &offsetIndex{entries: tc.entries})
			if _, err := decodeIndex(data); !errors.Is(err, errBadIndex) {
				t.Fatalf("accepted: %v", err)
			}
		})
	}
	if _, err := decodeIndex(encodeIndex(0, 300, 20, &offsetIndex{entries: entries})); err != nil {
		t.Fatalf("valid index rejected: %v", err)
	}
}
