package producerstate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// FuzzDecode: Decode never panics; it either fails with ErrCorrupt or
// returns a table whose encoding is exactly the input (every accepted
// input is canonical); an accepted format-1 input encodes as format 2 to
// an equal table. Each input is also tried with its checksum
// recomputed, so the fuzzer reaches the structural checks behind it.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(New(DefaultWindow).AppendEncode(nil))
	tab := New(3)
	for i := range int32(5) {
		tab.Record(hdr(int64(i%2), 1, i/2, 1, int64(i)))
	}
	f.Add(tab.AppendEncode(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b []byte) {
			tab, err := Decode(b)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Decode error %v does not wrap ErrCorrupt", err)
				}
				return
			}
			enc := tab.AppendEncode(nil)
			if b[0] != formatVersion {
				if again, err := Decode(enc); err != nil || !again.Equal(tab) {
					t.Fatalf("format-%d input %x re-encoded as %x: %v", b[0], b, enc, err)
				}
				return
			}
			if !bytes.Equal(enc, b) {
				t.Fatalf("Decode accepted %x, which encodes back as %x", b, enc)
			}
		}
		check(data)
		if len(data) >= trailerSize {
			check(reseal(data))
		}
	})
}

// FuzzTableEncodes: whatever a table is fed, as the FSM feeds it (batches
// after Validate, markers after ValidateMarker or straight from a log),
// with any field values, its encoding decodes to an equal table. A node
// once wrote a checkpoint it could not read back (a WriteTxnMarkers of a
// negative producer id), and so could not reopen the partition.
func FuzzTableEncodes(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 0, 1, 1, 2, 3, 2, 1, 1, 1})
	f.Add([]byte{2, 0x80, 0, 0x80, 0, 2, 0xfb, 1, 0xfb, 1}) // a negative producer id
	f.Add([]byte{10, 1, 0, 0xfb, 0, 2, 2, 1, 0xfb, 0})      // a coordinator epoch below -1
	f.Fuzz(func(t *testing.T, data []byte) {
		tab := New(3)
		next := func() int8 { // the next input byte, as a small signed value
			if len(data) == 0 {
				return 0
			}
			v := int8(data[0])
			data = data[1:]
			return v
		}
		var offset int64 // each batch and marker goes at the log's end
		for len(data) > 0 {
			switch op := next(); op & 3 {
			case 0, 1:
				h := hdr(int64(next()), int16(next()), int32(next()), int32(next()), offset)
				if op&4 != 0 {
					h.Attributes = record.AttrTransactional
				}
				if tab.Validate(h).Verdict == Append {
					tab.Record(h)
					offset += int64(max(h.LastOffsetDelta, 0)) + 1
				}
			case 2:
				m := Marker{ProducerID: int64(next()), Epoch: int16(next()), Commit: op&4 != 0,
					CoordinatorEpoch: int32(next()), Offset: offset, Timestamp: int64(next())}
				if op&8 != 0 || tab.ValidateMarker(m.ProducerID, m.Epoch, m.CoordinatorEpoch).Verdict == Append {
					tab.RecordMarker(m) // from the log when op&8
					offset++
				}
			case 3:
				tab.Expire(int64(next()), int64(next()))
				tab.TrimAborted(int64(next()))
			}
		}
		enc := tab.AppendEncode(nil)
		got, err := Decode(enc)
		if err != nil || !got.Equal(tab) {
			t.Fatalf("encoded %x; Decode: %v, equal %v", enc, err, err == nil && got.Equal(tab))
		}
	})
}
