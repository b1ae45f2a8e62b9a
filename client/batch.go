package client

import (
	"time"

	"github.com/minikafka/minikafka-go/record"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// pendingRec is a produced record waiting for its result.
type pendingRec struct {
	r       *Record
	promise func(*Record, error)
	size    int // estimated size (39 + key + value)
}

// producerID is an idempotent producer's identity.
type producerID struct {
	id    int64
	epoch int16
}

// batch is a closed batch: the whole pending list of a partition at the
// moment it closed, in send order (P5). It keeps its records so that it can
// be rebuilt when its sequence changes.
type batch struct {
	part    *partState
	recs    []pendingRec
	bytes   int       // estimated size of recs
	created time.Time // when its oldest record was produced; DeliveryTimeout counts from it

	// Idempotence: the identity and sequence the batch was numbered with.
	// Set when the batch is first sent; kept on retries (the broker
	// deduplicates by them) and renumbered only when the batch is known
	// not to have been written.
	seqd bool
	id   producerID
	seq  int32
	wire []byte // the encoded batch for (id, seq), nil when it must be rebuilt

	attempts     int
	maybeWritten bool // some attempt may have reached the log
	inflight     bool
	lastErr      error

	done bool
	err  error
}

// nextSeq is the sequence following the batch.
func (b *batch) nextSeq() int32 { return record.AddSequence(b.seq, int32(len(b.recs))) }

// deadline is when the batch fails with a DeliveryTimeoutError.
func (b *batch) deadline(d time.Duration) time.Time { return b.created.Add(d) }

// partState is a partition's producer state: the accumulator side (the
// pending list, P4/P5) and the sender side (closed batches in order).
// Every field is guarded by Producer.mu.
type partState struct {
	tp tp

	pending      []pendingRec
	pendingBytes int
	oldest       time.Time // when pending[0] was produced
	stickyN      int       // partition count of sticky records in pending, 0 if none

	// queue holds the closed batches not yet handed to their promises, in
	// send order. Batches in flight are a subset; a failed one stays until
	// every batch before it completes, so that promises run in order.
	queue    []*batch
	inflight int   // batches of queue in flight
	broker   int32 // where the in-flight batches went
	// rewind is set when a batch fails: nothing more is sent until every
	// in-flight batch of the partition is back, then sending resumes from
	// the first unfinished batch, in order, with the same sequences.
	rewind  bool
	retryAt time.Time // backoff: no send before

	nextSeq  int32 // sequence for the next batch numbered
	ackedSeq int32 // sequence after the last batch known written, in order
}
