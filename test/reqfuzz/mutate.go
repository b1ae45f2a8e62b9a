package reqfuzz

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// headerLen is the size prefix, API key, version and correlation id: the
// bytes body mutations leave alone, so that an answer can be matched.
const headerLen = 12

// mutate changes fr's encoding after the correlation id: it truncates
// it, flips bits, makes a length field huge, appends junk, or makes the
// size prefix lie (then nothing may follow fr on its connection).
func mutate(rng *rand.Rand, fr *request) {
	fr.mutated = true
	fr.acks0 = false
	b := fr.b
	var what string
	switch rng.IntN(8) {
	case 0, 1:
		n := headerLen + rng.IntN(len(b)-headerLen+1)
		b = b[:n]
		what = fmt.Sprintf("truncated to %d of %d bytes", n, len(fr.b))
	case 2, 3:
		n := 1 + rng.IntN(8)
		for range n {
			if len(b) > headerLen {
				i := headerLen + rng.IntN(len(b)-headerLen)
				b[i] ^= 1 << rng.IntN(8)
			}
		}
		what = fmt.Sprintf("%d bits flipped", n)
	case 4, 5:
		what = hugeLength(rng, b)
	case 6:
		b = append(b, make([]byte, 1+rng.IntN(64))...)
		for i := len(fr.b); i < len(b); i++ {
			b[i] = byte(rng.Uint32())
		}
		what = fmt.Sprintf("%d junk bytes appended", len(b)-len(fr.b))
	default:
		what = lyingSize(rng, b)
		fr.last = true
		fr.b = b
		fr.desc += " (" + what + ")"
		return
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	fr.b = b
	fr.desc += " (" + what + ")"
}

// hugeLength overwrites what may be a length field after the header with
// a huge or negative int32, or with a 5-byte varint of the largest value.
func hugeLength(rng *rand.Rand, b []byte) string {
	if len(b) < headerLen+5 {
		return "too short for a length field"
	}
	i := headerLen + rng.IntN(len(b)-headerLen-4)
	if rng.IntN(3) == 0 {
		copy(b[i:], []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
		return fmt.Sprintf("varint 0xffffffff at byte %d", i)
	}
	v := []uint32{math.MaxInt32, 0x80000000, 0xffffffff, 0x00ffffff, 0x7fff0000}[rng.IntN(5)]
	binary.BigEndian.PutUint32(b[i:], v)
	return fmt.Sprintf("int32 %#x at byte %d", v, i)
}

// lyingSize sets a size prefix that disagrees with the bytes sent: more
// (the node waits for the rest), far more than any limit, negative, or
// less (the rest reads as the next frame).
func lyingSize(rng *rand.Rand, b []byte) string {
	var size uint32
	switch rng.IntN(4) {
	case 0:
		size = uint32(len(b) - 4 + 1 + rng.IntN(1000))
	case 1:
		size = []uint32{math.MaxInt32, 100<<20 + 1, 1 << 30}[rng.IntN(3)]
	case 2:
		size = []uint32{0xffffffff, 0x80000000, 0}[rng.IntN(3)]
	default:
		size = uint32(rng.IntN(len(b) - 4))
	}
	binary.BigEndian.PutUint32(b, size)
	return fmt.Sprintf("size prefix %d for %d bytes", int32(size), len(b)-4)
}
