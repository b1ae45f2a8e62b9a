// Package testlog holds what tests need to read logs that several
// goroutines write.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that nodes may log to while a test reads it.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
