package producerstate

import (
	"bytes"
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

func hdr(pid int64, epoch int16, seq, count int32, offset int64) record.Header {
	return record.Header{Magic: 2, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
		LastOffsetDelta: count - 1, NumRecords: count, BaseOffset: offset}
}

// mustAppend validates and records h, failing unless the verdict is Append.
func mustAppend(t *testing.T, tab *Table, h record.Header) {
	t.Helper()
	if r := tab.Validate(h); r.Verdict != Append {
		t.Fatalf("Validate(%+v) = %+v, want Append", h, r)
	}
	tab.Record(h)
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{
		Append: "Append", Duplicate: "Duplicate", Fenced: "Fenced", OutOfOrder: "OutOfOrder", 9: "Verdict(9)",
	} {
		if got := v.String(); got != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", uint8(v), got, want)
		}
	}
}

func TestNewWindow(t *testing.T) {
	for in, want := range map[int]int{-1: DefaultWindow, 0: DefaultWindow, 1: 1, 3: 3, MaxWindow: MaxWindow, MaxWindow + 1: MaxWindow} {
		if got := New(in).Window(); got != want {
			t.Errorf("New(%d).Window() = %d, want %d", in, got, want)
		}
	}
}

// TestWindowEviction: the window holds exactly the last N batches, oldest
// first, for N in 1..6.
func TestWindowEviction(t *testing.T) {
	for window := 1; window <= 6; window++ {
		tab := New(window)
		for i := range int32(10) {
			mustAppend(t, tab, hdr(1, 0, i, 1, int64(100+i)))
		}
		e, ok := tab.Lookup(1)
		if !ok || len(e.Batches) != window {
			t.Fatalf("window %d: Lookup = %+v, %v", window, e, ok)
		}
		for j, b := range e.Batches {
			seq := int32(10 - window + j)
			if want := (Batch{FirstSeq: seq, LastSeq: seq, BaseOffset: int64(100 + seq), Count: 1}); b != want {
				t.Fatalf("window %d: batch %d = %+v, want %+v", window, j, b, want)
			}
		}
	}
}

func TestLookupReturnsCopy(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, hdr(4, 1, 0, 2, 0))
	e, ok := tab.Lookup(4)
	if !ok || e.ProducerID != 4 || e.Epoch != 1 || len(e.Batches) != 1 {
		t.Fatalf("Lookup(4) = %+v, %v", e, ok)
	}
	e.Batches[0].BaseOffset = 99
	if again, _ := tab.Lookup(4); again.Batches[0].BaseOffset != 0 {
		t.Fatal("changing Lookup's result changed the table")
	}
	if _, ok := tab.Lookup(5); ok {
		t.Fatal("Lookup(5) found an unknown producer")
	}
}

// TestCloneIsDeep: recording into a clone, including evicting in place
// from a full window, leaves the original as it was.
func TestCloneIsDeep(t *testing.T) {
	tab := New(DefaultWindow)
	for i := range int32(DefaultWindow) {
		mustAppend(t, tab, hdr(1, 0, i, 1, int64(i)))
	}
	want := tab.AppendEncode(nil)
	c := tab.Clone()
	if !c.Equal(tab) {
		t.Fatal("clone differs from its original")
	}
	mustAppend(t, c, hdr(1, 0, DefaultWindow, 1, DefaultWindow))
	mustAppend(t, c, hdr(2, 0, 0, 1, DefaultWindow+1))
	if got := tab.AppendEncode(nil); !bytes.Equal(got, want) {
		t.Fatal("recording into the clone changed the original")
	}
	if c.Equal(tab) || tab.Equal(c) {
		t.Fatal("Equal missed the clone's changes")
	}
}

func TestEqual(t *testing.T) {
	base := func(window int) *Table {
		tab := New(window)
		mustAppend(t, tab, hdr(1, 0, 0, 2, 0))
		mustAppend(t, tab, hdr(2, 3, 0, 1, 2))
		return tab
	}
	if !base(5).Equal(base(5)) {
		t.Fatal("equal tables are not Equal")
	}
	differ := map[string]*Table{"window": base(4)}
	epoch := base(5)
	mustAppend(t, epoch, hdr(2, 4, 0, 1, 2))
	differ["epoch"] = epoch
	offset := base(5)
	offset.Record(hdr(1, 0, 2, 1, 10)) // same producer, one more batch
	differ["batches"] = offset
	other := New(5)
	mustAppend(t, other, hdr(1, 0, 0, 2, 0))
	mustAppend(t, other, hdr(3, 3, 0, 1, 2))
	differ["producer id"] = other
	fewer := New(5)
	mustAppend(t, fewer, hdr(1, 0, 0, 2, 0))
	differ["producer count"] = fewer
	shifted := New(5)
	mustAppend(t, shifted, hdr(1, 0, 0, 2, 1))
	mustAppend(t, shifted, hdr(2, 3, 0, 1, 2))
	differ["base offset"] = shifted
	for name, d := range differ {
		if d.Equal(base(5)) || base(5).Equal(d) {
			t.Errorf("tables differing in %s are Equal", name)
		}
	}
}

// TestRecordIgnoresNonIdempotent: Record keeps no state for headers that
// Validate never accepts as idempotent.
func TestRecordIgnoresNonIdempotent(t *testing.T) {
	control := hdr(1, 0, 0, 1, 0)
	control.Attributes = record.AttrControl
	for name, h := range map[string]record.Header{
		"no producer id":   hdr(-1, 0, 0, 1, 0),
		"negative epoch":   hdr(1, -1, 0, 1, 0),
		"negative seq":     hdr(1, 0, -1, 1, 0),
		"no records":       hdr(1, 0, 0, 0, 0),
		"overflowing size": {ProducerID: 1, LastOffsetDelta: 1<<31 - 1},
		"control batch":    control,
	} {
		tab := New(DefaultWindow)
		tab.Record(h)
		if tab.Len() != 0 {
			t.Errorf("%s: Record kept state for %+v", name, h)
		}
	}
}

// TestControlBatchCarriesNoSequence: a control batch is appended whatever
// its sequence says and leaves the producer's window alone.
func TestControlBatchCarriesNoSequence(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, hdr(1, 0, 0, 1, 0))
	before := tab.Clone()
	control := hdr(1, 0, 7, 1, 1)
	control.Attributes = record.AttrControl | record.AttrTransactional
	if r := tab.Validate(control); r.Verdict != Append {
		t.Fatalf("Validate(control) = %+v, want Append", r)
	}
	tab.Record(control)
	if !tab.Equal(before) {
		t.Fatal("Record(control) changed the producer's state")
	}
	mustAppend(t, tab, hdr(1, 0, 1, 1, 2))
}

// TestRecordNewEpochClearsWindow: Record under another epoch keeps only
// the new batch.
func TestRecordNewEpochClearsWindow(t *testing.T) {
	tab := New(DefaultWindow)
	for i := range int32(3) {
		mustAppend(t, tab, hdr(1, 0, i, 1, int64(i)))
	}
	mustAppend(t, tab, hdr(1, 1, 0, 4, 3))
	e, _ := tab.Lookup(1)
	want := Entry{ProducerID: 1, Epoch: 1, Batches: []Batch{{FirstSeq: 0, LastSeq: 3, BaseOffset: 3, Count: 4}}}
	if e.Epoch != want.Epoch || !slices.Equal(e.Batches, want.Batches) {
		t.Fatalf("after a new epoch: %+v, want %+v", e, want)
	}
}

func TestAllAscending(t *testing.T) {
	tab := New(DefaultWindow)
	ids := []int64{42, 7, 1 << 50, 0, 19}
	for i, pid := range ids {
		mustAppend(t, tab, hdr(pid, 0, 0, 1, int64(i)))
	}
	var got []int64
	for e := range tab.All() {
		got = append(got, e.ProducerID)
	}
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
		t.Fatalf("All yielded %v, want %v", got, want)
	}
	n := 0
	for range tab.All() {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("early break: %d iterations", n)
	}
}

// TestValidateResultFields: the facts a caller puts in its error text.
func TestValidateResultFields(t *testing.T) {
	tab := New(DefaultWindow)
	mustAppend(t, tab, hdr(1, 5, 0, 3, 10))
	for name, tt := range map[string]struct {
		h    record.Header
		want Result
	}{
		"fenced":             {hdr(1, 4, 3, 1, 0), Result{Verdict: Fenced, Epoch: 5}},
		"fenced unknown":     {hdr(2, -1, 0, 1, 0), Result{Verdict: Fenced, Epoch: -1}},
		"gap":                {hdr(1, 5, 4, 1, 0), Result{Verdict: OutOfOrder, Expected: 3}},
		"new epoch non-zero": {hdr(1, 6, 3, 1, 0), Result{Verdict: OutOfOrder, Expected: 0}},
		"unknown non-zero":   {hdr(2, 0, 1, 1, 0), Result{Verdict: OutOfOrder, Expected: 0}},
		"duplicate":          {hdr(1, 5, 0, 3, 77), Result{Verdict: Duplicate, Original: Batch{FirstSeq: 0, LastSeq: 2, BaseOffset: 10, Count: 3}}},
		"append":             {hdr(1, 5, 3, 1, 0), Result{Verdict: Append}},
	} {
		if got := tab.Validate(tt.h); got != tt.want {
			t.Errorf("%s: Validate = %+v, want %+v", name, got, tt.want)
		}
	}
}
