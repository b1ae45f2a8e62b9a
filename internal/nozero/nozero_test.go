package nozero_test

import (
	"bytes"
	"testing"

	"github.com/minikafka/minikafka-go/internal/nozero"
)

// Bytes gives n writable bytes of their own: two live slices never share
// memory, at small and large sizes.
func TestBytesGivesMemoryOfItsOwn(t *testing.T) {
	if b := nozero.Bytes(0); b == nil || len(b) != 0 {
		t.Fatalf("nozero.Bytes(0) = %v, want an empty slice", b)
	}
	for _, n := range []int{1, 100, 4096, 1<<20 + 3} {
		a, b := nozero.Bytes(n), nozero.Bytes(n)
		if len(a) != n || cap(a) < n {
			t.Fatalf("Bytes(%d): len %d cap %d", n, len(a), cap(a))
		}
		for i := range a {
			a[i], b[i] = 1, 2
		}
		if bytes.Count(a, []byte{1}) != n || bytes.Count(b, []byte{2}) != n {
			t.Fatalf("Bytes(%d): two slices share memory", n)
		}
	}
}

// BenchmarkBytes is a 1 MiB buffer from make (cleared) and from Bytes,
// each then filled once, as a frame read fills it.
func BenchmarkBytes(b *testing.B) {
	src := bytes.Repeat([]byte{7}, 1<<20)
	for _, tc := range []struct {
		name  string
		alloc func(int) []byte
	}{{"make", func(n int) []byte { return make([]byte, n) }}, {"nozero", nozero.Bytes}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				copy(tc.alloc(len(src)), src)
			}
		})
	}
}
