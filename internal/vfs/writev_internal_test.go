//go:build linux

package vfs

import (
	"bytes"
	"testing"
)

// After a short pwritev the rest goes out from the first unwritten byte,
// whichever buffer it falls in.
func TestSkipWritten(t *testing.T) {
	bufs := [][]byte{[]byte("abc"), {}, []byte("defg"), []byte("h")}
	all := bytes.Join(bufs, nil)
	for n := 0; n <= len(all); n++ {
		rest := skipWritten(bufs, n)
		if got := bytes.Join(rest, nil); !bytes.Equal(got, all[n:]) {
			t.Errorf("skipWritten(%d) leaves %q, want %q", n, got, all[n:])
		}
	}
	if got := bytes.Join(bufs, nil); !bytes.Equal(got, all) {
		t.Fatalf("skipWritten changed its argument: %q", got)
	}
}
