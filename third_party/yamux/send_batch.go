package yamux

import "io"

// MiniKafka's patch (MINIKAFKA.md): the send loop writes every frame that
// is already queued in one write instead of each frame's header and body
// in two. Many streams send small frames (acknowledgements, window
// updates) beside large ones; at twelve busy partitions a node's write
// system calls were 6% of its CPU. Bodies are still copied under their
// sendReady's lock, as upstream does, so a sender that gives up (shutdown,
// write timeout) may reuse its buffer at once.

// sendBatchBytes and sendBatchFrames bound what one write gathers; a
// frame is never split, so a write may exceed sendBatchBytes by one.
const (
	sendBatchBytes  = 256 << 10
	sendBatchFrames = 64
	// sendBatchKeep is the largest buffer kept between writes.
	sendBatchKeep = 4 << 20
)

// sendBatch is the send loop's: the frames of one write and their bytes.
type sendBatch struct {
	buf   []byte
	ready []*sendReady
}

// add appends a frame's header and body.
func (b *sendBatch) add(r *sendReady) {
	b.buf = append(b.buf, r.Hdr...)
	r.mu.Lock()
	b.buf = append(b.buf, r.Body...)
	r.Body = nil
	r.mu.Unlock()
	b.ready = append(b.ready, r)
}

// gather adds the frames queued on ch without waiting for more.
func (b *sendBatch) gather(ch <-chan *sendReady) {
	for len(b.ready) < sendBatchFrames && len(b.buf) < sendBatchBytes {
		select {
		case r := <-ch:
			b.add(r)
		default:
			return
		}
	}
}

// write sends the batch and answers each frame's sender with the result.
func (b *sendBatch) write(w io.Writer) error {
	var err error
	if len(b.buf) > 0 {
		_, err = w.Write(b.buf)
	}
	for i, r := range b.ready {
		asyncSendErr(r.Err, err)
		b.ready[i] = nil
	}
	b.ready = b.ready[:0]
	if cap(b.buf) > sendBatchKeep {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
	return err
}
