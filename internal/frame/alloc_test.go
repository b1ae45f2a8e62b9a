package frame

import (
	"bytes"
	"runtime"
	"testing"
)

// Alloc gives n writable bytes of their own: two live slices never share
// memory, at small and large sizes.
func TestAllocGivesMemoryOfItsOwn(t *testing.T) {
	if b := Alloc(0); b == nil || len(b) != 0 {
		t.Fatalf("Alloc(0) = %v, want an empty slice", b)
	}
	for _, n := range []int{1, 100, 4096, 1<<20 + 3} {
		a, b := Alloc(n), Alloc(n)
		if len(a) != n || cap(a) < n {
			t.Fatalf("Alloc(%d): len %d cap %d", n, len(a), cap(a))
		}
		for i := range a {
			a[i], b[i] = 1, 2
		}
		if bytes.Count(a, []byte{1}) != n || bytes.Count(b, []byte{2}) != n {
			t.Fatalf("Alloc(%d): two slices share memory", n)
		}
	}
}

// dirtyHeap leaves freed memory full of 0xAA, which Alloc may hand out
// again without clearing it.
func dirtyHeap() {
	var keep [][]byte
	for range 8 {
		b := make([]byte, 4<<20)
		for i := range b {
			b[i] = 0xAA
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
	keep = nil
	runtime.GC()
}

// Frames read into uncleared memory hold exactly the bytes sent, in one
// chunk and across several, whatever the memory held before.
func TestReadHoldsOnlyTheFramesBytes(t *testing.T) {
	for _, n := range []int{5, chunk - 1, chunk + 7, 3*chunk + 11} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i % 251)
		}
		dirtyHeap()
		got, err := Read(bytes.NewReader(Append(nil, body)), 1, 4*chunk)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d-byte frame: %d bytes read, equal %v, err %v", n, len(got), bytes.Equal(got, body), err)
		}
		got, err = ReadInto(bytes.NewReader(Append(nil, body)), uint32(n), uint32(n), Alloc(n))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d-byte frame into Alloc: equal %v, err %v", n, bytes.Equal(got, body), err)
		}
	}
}

// BenchmarkAlloc is a 1 MiB buffer from make (cleared) and from Alloc,
// each then filled once, as a frame read fills it.
func BenchmarkAlloc(b *testing.B) {
	src := bytes.Repeat([]byte{7}, 1<<20)
	for _, tc := range []struct {
		name  string
		alloc func(int) []byte
	}{{"make", func(n int) []byte { return make([]byte, n) }}, {"Alloc", Alloc}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				copy(tc.alloc(len(src)), src)
			}
		})
	}
}
