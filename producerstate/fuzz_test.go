package producerstate

import (
	"bytes"
	"errors"
	"testing"
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
