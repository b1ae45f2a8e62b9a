package compact

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// randomPart appends n batches of up to 6 records with keys of a small
// space (some tombstones, some keyless), one in eight compressed.
func randomPart(l *logBuilder, rng *rand.Rand, n, keys int) {
	for range n {
		kvs := make([]kv, 1+rng.IntN(6))
		for i := range kvs {
			kvs[i].key = fmt.Sprintf("k%d", rng.IntN(keys))
			switch rng.IntN(10) {
			case 0: // a tombstone
			case 1:
				kvs[i] = kv{value: "keyless"}
			default:
				kvs[i].value = fmt.Sprint(rng.Int())
			}
		}
		codec := 0
		if rng.IntN(8) == 0 {
			codec = 1 + rng.IntN(4)
		}
		l.batch(record.PlainBatch(codec), kvs...)
	}
}

// A cleaning that maps only the dirty part of a log (the part after an
// earlier cleaning's end) writes the bytes a map of the whole log gives,
// round after round: new versions of old keys, tombstones whose horizons
// pass, keys seen once.
func TestDirtyPartMapGivesTheWholeMapsBytes(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		l := &logBuilder{t: t}
		cleanTo := int64(0) // the log below is clean
		for round := range 6 {
			randomPart(l, rng, 5+rng.IntN(40), 30)
			now := int64(1000 + 300*round)
			whole, _, err := CleanAll(nil, record.Batches(l.log), Params{NowMs: now, DeleteRetentionMs: 500})
			if err != nil {
				t.Fatal(err)
			}
			dirty, st, err := CleanAll(nil, record.Batches(l.log), Params{NowMs: now, DeleteRetentionMs: 500, DirtyFrom: cleanTo})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(whole, dirty) {
				t.Fatalf("seed %d round %d: mapping from %d gives %d bytes, the whole map %d (%+v)", seed, round, cleanTo, len(dirty), len(whole), st)
			}
			if round == 5 {
				read(t, dirty)
			}
			l.log, cleanTo = dirty, l.next
		}
	}
}

// Below DirtyFrom a record goes only when the dirty part holds its key
// again: one there alone stays, even if an older version of it sits
// beside it (DirtyFrom is the caller's promise that none does).
func TestDirtyFromTrustsTheCleanPart(t *testing.T) {
	l := &logBuilder{t: t}
	l.batch(record.PlainBatch(0), kv{"a", "1"}, kv{"b", "1"})
	l.batch(record.PlainBatch(0), kv{"a", "2"})
	dirty := l.batch(record.PlainBatch(0), kv{"b", "2"})
	out, _, err := CleanAll(nil, record.Batches(l.log), Params{NowMs: 1000, DirtyFrom: dirty})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range read(t, out) {
		got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Offset))
	}
	if want := "[a=1@0 a=2@2 b=2@3]"; fmt.Sprint(got) != want {
		t.Fatalf("records %v, want %s", got, want)
	}
}

// MapBytes bounds a cleaning's map: it ends after the batch that takes
// the map past the bound, the batches from there on pass unchanged, and
// cleanings each mapping from where the last ended reach the bytes of one
// unbounded cleaning.
func TestMapBytesBoundsACleaning(t *testing.T) {
	l := &logBuilder{t: t}
	for v := range 2 {
		for b := range 20 {
			kvs := make([]kv, 10)
			for i := range kvs {
				kvs[i] = kv{fmt.Sprintf("key%03d", b*10+i), fmt.Sprint(v)}
			}
			if v == 1 && b%4 == 0 {
				kvs[0].value = "" // a tombstone
			}
			l.batch(record.PlainBatch(b%5), kvs...)
		}
	}
	p := Params{NowMs: 1000, DeleteRetentionMs: 500}
	whole, _, err := CleanAll(nil, record.Batches(l.log), p)
	if err != nil {
		t.Fatal(err)
	}
	perBatch := int64(10 * (len("key000") + MapEntryBytes))
	p.MapBytes = 3*perBatch - 1 // three batches' keys pass it
	log, passes := l.log, 0
	for p.DirtyFrom != math.MaxInt64 {
		var out []byte
		res, err := CleanTo(record.Batches(log), p, nil, func(b []byte) error { out = append(out, b...); return nil })
		if err != nil {
			t.Fatal(err)
		}
		wantFull := 0 // only a pass the bound ended counts a full map
		if res.Reached != math.MaxInt64 {
			wantFull = 1
		}
		if res.MapFull != wantFull {
			t.Fatalf("pass %d reached %d and counts %d full maps", passes+1, res.Reached, res.MapFull)
		}
		if passes++; res.Reached != math.MaxInt64 && res.Reached != p.DirtyFrom+30 {
			t.Fatalf("pass %d from %d reached %d, want three batches on", passes, p.DirtyFrom, res.Reached)
		}
		if res.Reached != math.MaxInt64 && !bytes.Equal(tail(t, out, res.Reached), tail(t, log, res.Reached)) {
			t.Fatalf("pass %d changed the batches from %d on", passes, res.Reached)
		}
		log, p.DirtyFrom = out, res.Reached
	}
	if passes != 14 { // 400 records in batches of 10, three batches a pass
		t.Fatalf("%d passes", passes)
	}
	if !bytes.Equal(log, whole) {
		t.Fatalf("the bounded cleanings left %d bytes, one unbounded cleaning %d", len(log), len(whole))
	}
}

// tail is log from the batch at offset on.
func tail(t *testing.T, log []byte, offset int64) []byte {
	t.Helper()
	pos := 0
	for b, err := range record.Batches(log) {
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := record.ParseHeader(b); h.BaseOffset == offset {
			return log[pos:]
		}
		pos += len(b)
	}
	t.Fatalf("no batch at %d", offset)
	return nil
}
