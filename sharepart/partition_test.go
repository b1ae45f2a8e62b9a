package sharepart

import (
	"errors"
	"reflect"
	"testing"
)

var testCfg = Config{LockDurationMs: 1000, DeliveryLimit: 3, MaxLocks: 10}

func acq(t *testing.T, got []AcquiredRange, want ...AcquiredRange) {
	t.Helper()
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("acquired %+v, want %+v", got, want)
	}
}

func ack(t *testing.T, p *Partition, member string, first, last int64, typ AckType, want error) {
	t.Helper()
	if err := p.Acknowledge(member, first, last, []AckType{typ}, 0); !errors.Is(err, want) {
		t.Fatalf("ack %s %d-%d type %d: %v, want %v", member, first, last, typ, err, want)
	}
}

func TestAcquireAcceptMovesStart(t *testing.T) {
	p := New(testCfg, 0, 0)
	acq(t, p.Acquire("a", 0, 0, 5, 3), AcquiredRange{0, 2, 1})
	acq(t, p.Acquire("b", 0, 0, 5, 10), AcquiredRange{3, 4, 1}) // never the same record twice
	acq(t, p.Acquire("b", 0, 0, 5, 10))
	ack(t, p, "b", 0, 0, AckAccept, ErrInvalidRecordState) // held by a
	ack(t, p, "a", 0, 2, AckAccept, nil)
	if p.StartOffset() != 3 || p.EndOffset() != 5 {
		t.Fatalf("SPSO %d SPEO %d, want 3 5", p.StartOffset(), p.EndOffset())
	}
	ack(t, p, "a", 0, 0, AckAccept, ErrInvalidRecordState) // already done
}

func TestReleaseRedeliversWithCountTwoRejectNever(t *testing.T) {
	p := New(testCfg, 0, 0)
	p.Acquire("a", 0, 0, 2, 10)
	ack(t, p, "a", 0, 0, AckRelease, nil)
	ack(t, p, "a", 1, 1, AckReject, nil)
	acq(t, p.Acquire("b", 0, 0, 2, 10), AcquiredRange{0, 0, 2})
	if st, _ := p.State(1); st != Archived {
		t.Fatalf("rejected record is %d", st)
	}
	acq(t, p.Acquire("b", 0, 0, 2, 10))
}

func TestLockExpiryRedelivers(t *testing.T) {
	p := New(testCfg, 0, 0)
	p.Acquire("a", 100, 0, 1, 10)
	if n := p.ExpireLocks(1099); n != 0 {
		t.Fatalf("expired %d before the deadline", n)
	}
	if at, ok := p.NextExpiry(); !ok || at != 1100 {
		t.Fatalf("next expiry %d %v", at, ok)
	}
	if n := p.ExpireLocks(1100); n != 1 {
		t.Fatalf("expired %d at the deadline", n)
	}
	ack(t, p, "a", 0, 0, AckAccept, ErrInvalidRecordState) // its lock is gone
	acq(t, p.Acquire("b", 1100, 0, 1, 10), AcquiredRange{0, 0, 2})
}

func TestDeliveryLimitArchives(t *testing.T) {
	p := New(testCfg, 0, 0)
	for i := range 3 {
		acq(t, p.Acquire("a", 0, 0, 1, 10), AcquiredRange{0, 0, int16(i + 1)})
		if i == 2 {
			p.ExpireLocks(testCfg.LockDurationMs)
		} else {
			ack(t, p, "a", 0, 0, AckRelease, nil)
		}
	}
	acq(t, p.Acquire("a", 0, 0, 1, 10))
	if p.StartOffset() != 1 {
		t.Fatalf("SPSO %d, want 1 past the archived record", p.StartOffset())
	}
}

func TestMaxLocksBoundsTheWindow(t *testing.T) {
	p := New(testCfg, 0, 0)
	acq(t, p.Acquire("a", 0, 0, 100, 100), AcquiredRange{0, 9, 1})
	acq(t, p.Acquire("b", 0, 0, 100, 100))
	ack(t, p, "a", 1, 9, AckAccept, nil) // offset 0 still held: SPSO stays
	acq(t, p.Acquire("b", 0, 0, 100, 100))
	ack(t, p, "a", 0, 0, AckAccept, nil)
	acq(t, p.Acquire("b", 0, 0, 100, 100), AcquiredRange{10, 19, 1})
}

func TestReleaseMemberAndPerOffsetTypes(t *testing.T) {
	p := New(testCfg, 0, 0)
	p.Acquire("a", 0, 0, 3, 10)
	if err := p.Acknowledge("a", 0, 2, []AckType{AckAccept, AckGap}, 0); !errors.Is(err, ErrInvalidAck) {
		t.Fatalf("types of the wrong length: %v", err)
	}
	if err := p.Acknowledge("a", 0, 1, []AckType{AckAccept, AckGap}, 0); err != nil {
		t.Fatal(err)
	}
	if n := p.ReleaseMember("a"); n != 1 {
		t.Fatalf("released %d", n)
	}
	acq(t, p.Acquire("b", 0, 0, 3, 10), AcquiredRange{2, 2, 2})
}

func TestSkipToLogStart(t *testing.T) {
	p := New(testCfg, 0, 0)
	p.Acquire("a", 0, 0, 3, 10)
	acq(t, p.Acquire("a", 0, 5, 7, 10), AcquiredRange{5, 6, 1})
	if p.StartOffset() != 5 {
		t.Fatalf("SPSO %d", p.StartOffset())
	}
}

// TestSnapshotRoundTrip: the persisted form survives encoding, and a
// loaded partition redelivers the in-flight records (count kept) and
// nothing acknowledged.
func TestSnapshotRoundTrip(t *testing.T) {
	p := New(testCfg, 10, 3)
	p.Acquire("a", 0, 0, 16, 6)
	ack(t, p, "a", 10, 10, AckAccept, nil)
	ack(t, p, "a", 12, 12, AckReject, nil)
	ack(t, p, "a", 13, 13, AckRelease, nil)
	s := p.Snapshot(7)
	if p.Dirty() {
		t.Fatal("dirty after Snapshot")
	}
	want := Snapshot{StateEpoch: 3, LeaderEpoch: 7, StartOffset: 11, Batches: []Batch{
		{11, 11, Available, 1}, {12, 12, Archived, 1}, {13, 15, Available, 1},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("snapshot %+v, want %+v", s, want)
	}
	k := Key{Group: "g", TopicID: [16]byte{1, 2}, Partition: 4}
	gk, err := DecodeKey(EncodeKey(k))
	if err != nil || gk != k {
		t.Fatalf("key round trip %+v %v", gk, err)
	}
	gs, err := DecodeValue(EncodeValue(s))
	if err != nil || !reflect.DeepEqual(gs, s) {
		t.Fatalf("value round trip %+v %v", gs, err)
	}
	q, err := Load(testCfg, gs)
	if err != nil {
		t.Fatal(err)
	}
	acq(t, q.Acquire("b", 0, 0, 16, 10), AcquiredRange{11, 11, 2}, AcquiredRange{13, 15, 2})
}

func TestDecodeRejectsBadValues(t *testing.T) {
	v := EncodeValue(Snapshot{Batches: []Batch{{0, 0, Available, 1}}})
	for _, b := range [][]byte{nil, v[:len(v)-1], append(v, 0), {0, 1}} {
		if _, err := DecodeValue(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decoded %x: %v", b, err)
		}
	}
	for _, s := range []Snapshot{
		{StartOffset: 5, Batches: []Batch{{4, 6, Available, 1}}},
		{Batches: []Batch{{0, 0, RecordState(9), 1}}},
		{Batches: []Batch{{0, MaxWindow, Available, 1}}},
	} {
		if _, err := Load(testCfg, s); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("loaded %+v: %v", s, err)
		}
	}
}

// TestViewLoadIsDeterministic: applying the same records gives the same
// view, the latest snapshot per key wins and a tombstone deletes.
func TestViewLoadIsDeterministic(t *testing.T) {
	k1 := Key{Group: "g", Partition: 1}
	k2 := Key{Group: "g", Partition: 0}
	recs := [][2][]byte{
		{EncodeKey(k1), EncodeValue(Snapshot{StartOffset: 1})},
		{EncodeKey(k2), EncodeValue(Snapshot{StartOffset: 2})},
		{EncodeKey(k1), EncodeValue(Snapshot{StartOffset: 3})},
		{EncodeKey(Key{Group: "h"}), nil},
		{[]byte{9}, []byte{9}},
	}
	var views [2]*View
	for i := range views {
		views[i] = NewView()
		for _, r := range recs {
			_ = views[i].Apply(r[0], r[1])
		}
	}
	if !reflect.DeepEqual(views[0].states, views[1].states) {
		t.Fatal("views differ")
	}
	if s, _ := views[0].Get(k1); s.StartOffset != 3 {
		t.Fatalf("k1 at %d", s.StartOffset)
	}
	if ks := views[0].Keys("g"); !reflect.DeepEqual(ks, []Key{k2, k1}) {
		t.Fatalf("keys %+v", ks)
	}
	_ = views[0].Apply(EncodeKey(k1), nil)
	if _, ok := views[0].Get(k1); ok {
		t.Fatal("tombstone kept k1")
	}
}

// TestKeyIsKafkas: the share-coordinator key is Kafka's string, topic id
// in base64url without padding.
func TestKeyIsKafkas(t *testing.T) {
	id := [16]byte{0x82, 0xd6, 0xf6, 0xb2, 0xd1, 0x98, 0x46, 0x4f, 0xaf, 0x59, 0x9d, 0xb3, 0x02, 0x8c, 0xe6, 0xa0}
	if got := (Key{Group: "g:1", TopicID: id, Partition: 7}).String(); got != "g:1:gtb2stGYRk-vWZ2zAozmoA:7" {
		t.Fatalf("key %q", got)
	}
}

// TestLoadArchivesPastTheLimit: a record in flight at its last allowed
// delivery when its leader failed is archived, not delivered again.
func TestLoadArchivesPastTheLimit(t *testing.T) {
	p := New(testCfg, 0, 0)
	for range testCfg.DeliveryLimit - 1 {
		p.Acquire("a", 0, 0, 2, 10)
		ack(t, p, "a", 0, 1, AckRelease, nil)
	}
	acq(t, p.Acquire("a", 0, 0, 2, 1), AcquiredRange{0, 0, testCfg.DeliveryLimit}) // offset 1 stays Available
	q, err := Load(testCfg, p.Snapshot(1))
	if err != nil {
		t.Fatal(err)
	}
	acq(t, q.Acquire("b", 0, 0, 2, 10), AcquiredRange{1, 1, testCfg.DeliveryLimit})
	if q.StartOffset() != 1 {
		t.Fatalf("SPSO %d, want 1 past the archived record", q.StartOffset())
	}
}
