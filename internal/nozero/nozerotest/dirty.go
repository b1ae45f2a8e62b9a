// Package nozerotest helps tests of code that reads into nozero.Bytes.
package nozerotest

import "runtime"

// Pattern is what DirtyHeap leaves in freed memory.
const Pattern = 0xAA

// DirtyHeap leaves 32 MiB of freed heap memory full of Pattern, which
// nozero.Bytes may hand out again without clearing it: a buffer that is
// returned before it is wholly written then shows stale bytes instead of
// zeros.
func DirtyHeap() {
	keep := make([][]byte, 8)
	for i := range keep {
		keep[i] = make([]byte, 4<<20)
		for j := range keep[i] {
			keep[i][j] = Pattern
		}
	}
	runtime.KeepAlive(keep) // filled for certain; unreachable from here on
	runtime.GC()
}
