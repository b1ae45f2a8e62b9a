package fsm_test

import (
	"bytes"
	"io"
	"iter"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/record"
)

// memLog is an in-memory fsm.Log for fuzzing, where opening real files per
// input would be too slow. Real-log behaviour is covered by the other tests.
type memLog struct {
	batches [][]byte
	start   int64
	end     int64
}

var _ fsm.Log = (*memLog)(nil)

func (m *memLog) Append(b []byte) error {
	return m.AppendAt(b, m.end, 0)
}

func (m *memLog) AppendAt(b []byte, base int64, epoch int32) error {
	h, err := record.ParseHeader(b)
	if err != nil {
		return err
	}
	c := append([]byte(nil), b...)
	record.SetBaseOffset(c, base)
	if epoch != 0 {
		record.SetLeaderEpoch(c, epoch)
	}
	m.batches = append(m.batches, c)
	m.end = base + int64(h.LastOffsetDelta) + 1
	return nil
}

func (m *memLog) StartOffset() int64 { return m.start }
func (m *memLog) EndOffset() int64   { return m.end }
func (m *memLog) Size() int64 {
	var n int64
	for _, b := range m.batches {
		n += int64(len(b))
	}
	return n
}
func (m *memLog) CopyTo(w io.Writer, end int64) (int64, error) {
	var n int64
	for _, b := range m.batches {
		h, _ := record.ParseHeader(b)
		if h.BaseOffset >= end {
			break
		}
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
func (m *memLog) Batches(from int64) iter.Seq2[record.Header, error] {
	return func(yield func(record.Header, error) bool) {
		for _, b := range m.batches {
			h, _ := record.ParseHeader(b)
			if h.NextOffset() > from && !yield(h, nil) {
				return
			}
		}
	}
}

// Read returns the batch holding offset and those after it within
// maxBytes (at least one).
func (m *memLog) Read(offset int64, maxBytes int) ([]byte, error) {
	var out []byte
	for _, b := range m.batches {
		h, _ := record.ParseHeader(b)
		if h.NextOffset() <= offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	if out == nil {
		return nil, io.EOF
	}
	return out, nil
}

func (m *memLog) TruncateTo(offset int64) error {
	for i, b := range m.batches {
		if h, _ := record.ParseHeader(b); h.BaseOffset >= offset {
			m.batches = m.batches[:i]
			break
		}
	}
	m.end = offset
	return nil
}
func (m *memLog) Reset(start int64) error { m.batches, m.start, m.end = nil, start, start; return nil }

// AdvanceStart moves the start only; the batches stay (it is a test log).
func (m *memLog) AdvanceStart(offset int64) error {
	m.start = max(m.start, min(offset, m.end))
	return nil
}

func (m *memLog) SizeBelow(end int64) (int64, error) {
	var buf bytes.Buffer
	return m.CopyTo(&buf, end)
}
func (m *memLog) Sync() error { return nil }

func (m *memLog) bytes() []byte {
	var buf bytes.Buffer
	m.CopyTo(&buf, m.end)
	return buf.Bytes()
}
