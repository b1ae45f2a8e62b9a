package producerstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// TestEncodeDecodeRoundTrip: for random histories, Decode(AppendEncode(t))
// equals t, encodes to the same bytes again, and AppendEncode leaves what
// was already in dst alone.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, window := range []int{1, 3, DefaultWindow} {
		for seed := range uint64(60) {
			tab := simulate(t, seed, window, 200).table
			prefix := []byte("prefix")
			enc := tab.AppendEncode(slices.Clone(prefix))
			if !bytes.HasPrefix(enc, prefix) {
				t.Fatalf("seed %d: AppendEncode overwrote dst", seed)
			}
			enc = enc[len(prefix):]
			dec, err := Decode(enc)
			if err != nil {
				t.Fatalf("seed %d window %d: Decode: %v", seed, window, err)
			}
			if !dec.Equal(tab) || dec.Window() != window {
				t.Fatalf("seed %d window %d: decoded table differs", seed, window)
			}
			if again := dec.AppendEncode(nil); !bytes.Equal(again, enc) {
				t.Fatalf("seed %d window %d: re-encoding differs", seed, window)
			}
		}
	}
}

// TestEncodeEmpty pins the smallest encoding: version, window, zero
// producers, checksum.
func TestEncodeEmpty(t *testing.T) {
	enc := New(3).AppendEncode(nil)
	body := []byte{formatVersion, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0}
	want := binary.BigEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	if !bytes.Equal(enc, want) {
		t.Fatalf("empty table encodes to %x, want %x", enc, want)
	}
	dec, err := Decode(enc)
	if err != nil || dec.Len() != 0 || dec.Window() != 3 {
		t.Fatalf("Decode(empty) = %v, %v", dec, err)
	}
}

// TestEncodingIndependentOfInsertionOrder: the same producer histories
// recorded in different interleavings give equal tables with identical
// bytes (map order never leaks into the encoding).
func TestEncodingIndependentOfInsertionOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	// Per producer, its batches in order, with offsets fixed up front.
	var histories [][]record.Header
	var offset int64
	for p := range 40 {
		pid := int64(p*7919) % 1000 // not in ascending order of creation
		var hs []record.Header
		var epoch int16
		var seq int32
		for range 1 + rng.IntN(9) {
			if rng.IntN(6) == 0 {
				epoch, seq = epoch+1, 0
			}
			n := int32(1 + rng.IntN(5))
			hs = append(hs, record.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
				LastOffsetDelta: n - 1, NumRecords: n, BaseOffset: offset})
			offset += int64(n)
			seq = record.AddSequence(seq, n)
		}
		histories = append(histories, hs)
	}

	// order lists which producer's next batch comes next; each producer's
	// own batches keep their order.
	build := func(order []int) *Table {
		tab := New(DefaultWindow)
		pos := make([]int, len(histories))
		for _, p := range order {
			h := histories[p][pos[p]]
			pos[p]++
			if v := tab.Validate(h).Verdict; v != Append {
				t.Fatalf("history batch %+v: %v, want Append", h, v)
			}
			tab.Record(h)
		}
		return tab
	}
	var canonical []int // producer by producer
	for p, hs := range histories {
		for range hs {
			canonical = append(canonical, p)
		}
	}
	base := build(canonical)
	want := base.AppendEncode(nil)
	if base.Len() != len(histories) {
		t.Fatalf("table has %d producers, want %d", base.Len(), len(histories))
	}
	for i := range 20 {
		order := slices.Clone(canonical)
		if i == 0 {
			slices.Reverse(order) // last producer first
		} else {
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		got := build(order)
		if !got.Equal(base) {
			t.Fatalf("interleaving %d: table differs", i)
		}
		if enc := got.AppendEncode(nil); !bytes.Equal(enc, want) {
			t.Fatalf("interleaving %d: encoding differs", i)
		}
		if enc := got.Clone().AppendEncode(nil); !bytes.Equal(enc, want) {
			t.Fatalf("interleaving %d: clone's encoding differs", i)
		}
	}
}

// TestRebuildEqualsIncremental: replaying the log of appended batches
// gives the table that was built batch by batch.
func TestRebuildEqualsIncremental(t *testing.T) {
	for _, window := range []int{1, 3, DefaultWindow} {
		for seed := range uint64(60) {
			sim := simulate(t, seed, window, 300)
			re := Rebuild(window, slices.Values(sim.log))
			if !re.Equal(sim.table) {
				t.Fatalf("seed %d window %d: Rebuild differs from the incremental table", seed, window)
			}
			if !bytes.Equal(re.AppendEncode(nil), sim.table.AppendEncode(nil)) {
				t.Fatalf("seed %d window %d: Rebuild encodes differently", seed, window)
			}
		}
	}
	// Rebuild with a smaller window keeps only that many batches.
	sim := simulate(t, 1, DefaultWindow, 300)
	small := Rebuild(1, slices.Values(sim.log))
	for e := range small.All() {
		if len(e.Batches) != 1 {
			t.Fatalf("window-1 rebuild kept %d batches for producer %d", len(e.Batches), e.ProducerID)
		}
	}
}

// validEncoding is a small table with two producers, used as the base
// for corruption tests: producer 3 (epoch 2, batches 0..1 and 2..4) and
// producer 9 (epoch 0, batch 0..0).
func validEncoding(t *testing.T) []byte {
	t.Helper()
	tab := New(DefaultWindow)
	for _, h := range []record.Header{
		{ProducerID: 9, ProducerEpoch: 0, BaseSequence: 0, LastOffsetDelta: 0, BaseOffset: 0},
		{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 0, LastOffsetDelta: 1, BaseOffset: 1},
		{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 2, LastOffsetDelta: 2, BaseOffset: 3},
	} {
		if v := tab.Validate(h).Verdict; v != Append {
			t.Fatalf("setup: %v", v)
		}
		tab.Record(h)
	}
	return tab.AppendEncode(nil)
}

// reseal replaces the trailing checksum so that a structural change is
// what Decode has to catch.
func reseal(b []byte) []byte {
	body := b[:len(b)-trailerSize]
	return binary.BigEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, castagnoli))
}

// Byte positions in validEncoding.
const (
	posWindow   = 1
	posCount    = 3
	posEntry0   = headerSize // producer 3
	posEpoch0   = posEntry0 + 8
	posNB0      = posEpoch0 + 2
	posTxn0     = posEntry0 + entrySize + timeSize
	posBatch00  = posTxn0 + txnSize                          // 0..1
	posEntry1   = posBatch00 + 2*batchSize                   // producer 9
	posBatch10  = posEntry1 + entrySize + timeSize + txnSize // 0..0
	posAborted  = posBatch10 + batchSize
	validLength = posAborted + 4 + trailerSize
)

// put16, put32 and put64 return mutations that overwrite a field at at.
func put16(at int, v uint16) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint16(b[at:], v); return b }
}

func put32(at int, v uint32) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint32(b[at:], v); return b }
}

func put64(at int, v uint64) func([]byte) []byte {
	return func(b []byte) []byte { binary.BigEndian.PutUint64(b[at:], v); return b }
}

func TestDecodeRejectsStructure(t *testing.T) {
	valid := validEncoding(t)
	if len(valid) != validLength {
		t.Fatalf("valid encoding has %d bytes, layout says %d", len(valid), validLength)
	}
	if _, err := Decode(valid); err != nil {
		t.Fatalf("valid encoding: %v", err)
	}
	tests := []struct {
		name    string
		mutate  func([]byte) []byte
		version bool // expect *VersionError rather than *CorruptError
		offset  int  // CorruptError.Offset
	}{
		{name: "empty", mutate: func([]byte) []byte { return nil }, offset: 0},
		{name: "unknown version", mutate: func(b []byte) []byte { b[0] = 4; return b }, version: true},
		{name: "version zero", mutate: func(b []byte) []byte { b[0] = 0; return b }, version: true},
		{name: "header only", mutate: func(b []byte) []byte { return b[:headerSize] }, offset: headerSize},
		{name: "bad checksum", mutate: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, offset: validLength - trailerSize},
		{name: "window zero", mutate: put16(posWindow, 0), offset: posWindow},
		{name: "window below batches", mutate: put16(posWindow, 1), offset: posEntry0},
		{name: "count beyond bytes", mutate: put32(posCount, 0xFFFFFFFF), offset: posCount},
		{name: "count one short", mutate: put32(posCount, 1), offset: posEntry1 + 4}, // read as no aborted transactions
		{name: "count one more", mutate: put32(posCount, 3), offset: posAborted},
		{name: "ids descending", mutate: put64(posEntry1, 2), offset: posEntry1},
		{name: "ids repeated", mutate: put64(posEntry1, 3), offset: posEntry1},
		{name: "negative id", mutate: put64(posEntry0, 1<<63), offset: posEntry0},
		{name: "negative epoch", mutate: put16(posEpoch0, 0x8000), offset: posEntry0},
		{name: "no batches, then batches", mutate: put16(posNB0, 0), offset: posBatch00},
		{name: "transaction offset below -1", mutate: put64(posTxn0, 1<<63), offset: posEntry0},
		{name: "coordinator epoch below -1", mutate: put32(posTxn0+8, 0xFFFFFFFE), offset: posEntry0},
		{name: "aborted beyond bytes", mutate: put32(posAborted, 1), offset: posAborted},
		{name: "batches beyond window", mutate: put16(posNB0, 6), offset: posEntry0},
		{name: "batches beyond bytes", mutate: put16(posNB0, 5), offset: posEntry0},
		{name: "negative first sequence", mutate: put32(posBatch00, 0x80000000), offset: posBatch00},
		{name: "last sequence mismatch", mutate: put32(posBatch00+4, 7), offset: posBatch00},
		{name: "zero count", mutate: put32(posBatch00+16, 0), offset: posBatch00},
		{name: "negative count", mutate: put32(posBatch00+16, 0xFFFFFFFF), offset: posBatch00},
		{name: "trailing bytes", mutate: func(b []byte) []byte {
			return append(b[:len(b)-trailerSize:len(b)-trailerSize], 0, 0, 0, 0, 0)
		}, offset: validLength - trailerSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.mutate(slices.Clone(valid))
			if len(b) >= headerSize+trailerSize && tt.name != "bad checksum" {
				b = reseal(b)
			}
			tab, err := Decode(b)
			if err == nil {
				t.Fatalf("Decode accepted it: %d producers", tab.Len())
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if tt.version {
				var ve *VersionError
				if !errors.As(err, &ve) || ve.Version != b[0] {
					t.Fatalf("error %v is not a VersionError for %d", err, b[0])
				}
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a CorruptError", err)
			}
			if ce.Offset != tt.offset {
				t.Fatalf("error %v at offset %d, want %d", err, ce.Offset, tt.offset)
			}
		})
	}
}

// TestDecodeTruncatedAndGarbled: every proper prefix of a real encoding,
// and every single-bit flip of it, is rejected with ErrCorrupt.
func TestDecodeTruncatedAndGarbled(t *testing.T) {
	enc := simulate(t, 3, DefaultWindow, 200).table.AppendEncode(nil)
	if len(enc) < 100 {
		t.Fatalf("encoding of %d bytes is too small to be a good test", len(enc))
	}
	for n := range len(enc) {
		if _, err := Decode(enc[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: err = %v, want ErrCorrupt", n, err)
		}
	}
	for i := range len(enc) {
		for bit := range 8 {
			b := slices.Clone(enc)
			b[i] ^= 1 << bit
			if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip of byte %d bit %d: err = %v, want ErrCorrupt", i, bit, err)
			}
		}
	}
}
