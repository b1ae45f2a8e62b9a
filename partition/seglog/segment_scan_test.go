package seglog

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

func TestHeaderScanner(t *testing.T) {
	// Small and large batches, so headers straddle and skip read blocks.
	var data []byte
	var want []int64
	next := int64(50)
	for i := range 40 {
		b := newBatch(next, 1+i%3, (i%5)*900, int64(i))
		want = append(want, next)
		data = append(data, b...)
		h, _ := record.ParseHeader(b)
		next = h.NextOffset()
	}
	s := &segment{base: 50, path: "mem"}
	sc := &headerScanner{r: bytes.NewReader(data), path: s.path, end: int64(len(data)), next: 50}
	var got []int64
	var pos int64
	for {
		h, p, err := sc.scan()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p != pos {
			t.Fatalf("batch %d at %d, want %d", len(got), p, pos)
		}
		pos += int64(h.Size())
		got = append(got, h.BaseOffset)
	}
	if !equalInts(got, want) || sc.next != next {
		t.Fatalf("scanned %v (next %d), want %v (next %d)", got, sc.next, want, next)
	}

	for _, tc := range []struct {
		name string
		sc   headerScanner
	}{
		{"wrong expected offset", headerScanner{r: bytes.NewReader(data), end: int64(len(data)), next: 51}},
		{"end inside a batch", headerScanner{r: bytes.NewReader(data), end: int64(len(data)) - 1, next: 50}},
		{"end inside a header", headerScanner{r: bytes.NewReader(data), end: 30, next: 50}},
		{"file shorter than end", headerScanner{r: bytes.NewReader(data[:100]), end: int64(len(data)), next: 50}},
		{"garbage", headerScanner{r: bytes.NewReader(make([]byte, 500)), end: 500, next: 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for {
				_, _, err := tc.sc.scan()
				if errors.Is(err, io.EOF) {
					t.Fatal("reached the end without noticing the damage")
				}
				var ce *CorruptError
				if err != nil {
					if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
						t.Fatalf("error %v is not a *CorruptError", err)
					}
					return
				}
			}
		})
	}
}
