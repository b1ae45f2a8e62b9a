package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// idState is where the producer is in getting its identity.
type idState uint8

const (
	idNone    idState = iota // not asked for yet (or must be asked again)
	idPending                // InitProducerID running
	idReady
)

// Producer sends records to Kafka in batches. Create it with NewProducer;
// it is safe for concurrent use. See the package documentation for its
// duties and guarantees.
type Producer struct {
	cfg    *config
	cl     *cluster
	log    *slog.Logger
	ctx    context.Context // ends background requests on Close
	cancel context.CancelFunc

	mu        sync.Mutex // guards the fields below, every partState and every batch
	parts     map[tp]*partState
	order     []*partState  // parts in creation order, for deterministic iteration
	buffered  int           // estimated bytes of records produced and not yet completed (P3)
	records   int           // records produced and not yet completed
	idle      chan struct{} // closed while records == 0; Flush waits on it
	space     chan struct{} // closed and replaced whenever buffered bytes are released
	flushing  int           // Flush calls in progress: pending lists close at once
	closing   bool          // Close was called: Produce fails with ErrClosed
	fatal     error         // once set (fenced), every record fails with it
	inflight  map[int32]int // produce requests in flight per broker
	id        producerID    // identity of the idempotent producer
	idState   idState
	needReset bool     // an ambiguous failure: move to a new epoch before numbering more batches
	completed []*batch // batches whose promises are due, in completion order

	// The transaction (TransactionalID only; see txn.go).
	txn       txnState
	txnErr    error              // the open transaction's first failure: it can only abort
	txnParts  map[tp]bool        // partitions the coordinator added to the open transaction
	txnGroups bool               // AddOffsetsToTxn succeeded in the open transaction
	txnMaybe  bool               // an add was attempted: the coordinator may hold something
	adding    bool               // an addPartitions goroutine runs
	addDone   chan struct{}      // closed when that goroutine ends
	addCancel context.CancelFunc // ends that goroutine early (AbortTransaction)

	wake     chan struct{} // capacity 1: the sender should look at the state again
	promWake chan struct{} // capacity 1: completed has batches
	quit     chan struct{} // closed by Close: the background goroutines stop
	wg       sync.WaitGroup

	txnMu    sync.Mutex   // serializes InitTransactions, SendOffsetsToTransaction, Commit- and AbortTransaction
	txnCoord *coordinator // the transaction coordinator; nil without TransactionalID
}

// NewProducer validates the options and starts a producer. Its background
// goroutines (the sender, which drives linger and retries, and the one
// that calls promises) run until Close. It does not contact a broker
// until the first Produce.
func NewProducer(opts ...Opt) (*Producer, error) {
	cfg, err := newConfig(producerOpt, opts)
	if err != nil {
		return nil, err
	}
	idle := make(chan struct{})
	close(idle)
	ctx, cancel := context.WithCancel(context.Background())
	p := &Producer{
		ctx:      ctx,
		cancel:   cancel,
		cfg:      cfg,
		cl:       newCluster(cfg),
		log:      cfg.logger,
		parts:    map[tp]*partState{},
		idle:     idle,
		space:    make(chan struct{}),
		inflight: map[int32]int{},
		id:       producerID{id: -1, epoch: -1},
		wake:     make(chan struct{}, 1),
		promWake: make(chan struct{}, 1),
		quit:     make(chan struct{}),
		txnParts: map[tp]bool{},
	}
	if cfg.txnID != "" {
		p.txnCoord = newTxnCoordinator(p.cl, cfg.txnID)
	}
	if !cfg.idempotent {
		p.idState = idReady
	}
	p.cl.onUpdate(p.wakeSender)
	p.wg.Add(2)
	go p.run()
	go p.deliver()
	return p, nil
}

func (p *Producer) wakeSender() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Produce buffers r for sending and returns at once; promise (which may be
// nil) is called exactly once with r and the record's result, from the
// producer's promise goroutine, in offset order within a partition. On
// success r.Partition and r.Offset are set. Do not modify r until then.
//
// Produce itself returns an error, and never calls promise, when the
// record cannot be buffered: ErrBufferFull (P3), ErrRecordTooLarge,
// ErrClosed, ErrNoTopic, a fenced producer's FencedError, for a
// TransactionalID producer ErrTransactionState outside a transaction or an
// AbortableTxnError in one that must abort, a bad explicit
// partition, or ctx ending while Produce waits for the topic's metadata
// (the first record of a topic waits for it) or, with BlockOnBufferFull,
// for room in the buffer.
//
// Promises must not block for long: they hold up every later promise.
// They may call Produce (unless BlockOnBufferFull is set: only promises
// free buffer space), but must not call Flush, ProduceSync or Close.
func (p *Producer) Produce(ctx context.Context, r *Record, promise func(*Record, error)) error {
	if promise == nil {
		promise = func(*Record, error) {}
	}
	if r.Topic == "" {
		return ErrNoTopic
	}
	size := r.estimatedSize()
	if size > p.cfg.bufferLimit {
		return fmt.Errorf("%w: estimated %d bytes, limit %d", ErrRecordTooLarge, size, p.cfg.bufferLimit)
	}
	if err := p.usable(); err != nil {
		return err
	}
	n, err := p.partitionCount(ctx, r.Topic)
	if err != nil {
		return err
	}
	if r.ExplicitPartition && (r.Partition < 0 || int(r.Partition) >= n) {
		return fmt.Errorf("%w: partition %d of %q, which has %d", ErrUnknownTopicOrPartition, r.Partition, r.Topic, n)
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = time.Now()
	}

	p.mu.Lock()
	wake, err := p.bufferLocked(ctx, pendingRec{r: r, promise: promise, size: size}, n)
	p.mu.Unlock()
	if wake {
		p.wakeSender()
	}
	return err
}

// partitionCount is the topic's partition count, from metadata already
// known or, for the first record of a topic, asked for within
// DeliveryTimeout.
func (p *Producer) partitionCount(ctx context.Context, topic string) (int, error) {
	if n, ok := p.cl.knownPartitionCount(topic); ok {
		return n, nil
	}
	mctx, cancel := context.WithTimeout(ctx, p.cfg.deliveryTimeout)
	defer cancel()
	return p.cl.partitionCount(mctx, topic)
}

// bufferLocked waits for room in the buffer, picks the record's partition
// unless it is explicit, and appends the record to the partition's pending
// list. It reports whether the sender must look at the state again.
func (p *Producer) bufferLocked(ctx context.Context, pr pendingRec, n int) (wake bool, err error) {
	if err := p.waitForRoomLocked(ctx, pr.size); err != nil {
		return false, err
	}
	r := pr.r
	partition, sticky := r.Partition, false
	if !r.ExplicitPartition {
		partition, sticky = p.cfg.partitioner.Partition(r, n)
		if partition < 0 || int(partition) >= n {
			return false, fmt.Errorf("client: partitioner chose partition %d of %d", partition, n)
		}
		r.Partition = partition
	}
	r.Offset = -1
	ps := p.partLocked(tp{r.Topic, partition})
	if len(ps.pending) == 0 {
		ps.oldest = time.Now()
	}
	ps.pending = append(ps.pending, pr)
	ps.pendingBytes += pr.size
	if sticky {
		ps.stickyN = n
	}
	if p.records == 0 {
		p.idle = make(chan struct{})
	}
	p.records++
	p.buffered += pr.size

	wake = len(ps.pending) == 1 // arm the linger timer
	if ps.pendingBytes >= p.cfg.batchSize || p.flushing > 0 {
		p.closePendingLocked(ps) // P4: size reached, flush at once
		wake = true
	}
	return wake, nil
}

// waitForRoomLocked returns nil once size more bytes fit under BufferLimit
// (P3), or the error that fails the Produce. With BlockOnBufferFull it
// releases p.mu while it waits; it always returns with p.mu held.
func (p *Producer) waitForRoomLocked(ctx context.Context, size int) error {
	for {
		if err := p.usableLocked(); err != nil {
			return err
		}
		if p.buffered+size <= p.cfg.bufferLimit {
			return nil
		}
		if !p.cfg.blockOnFull {
			return ErrBufferFull
		}
		space := p.space
		p.mu.Unlock()
		select {
		case <-space:
			p.mu.Lock()
		case <-ctx.Done():
			p.mu.Lock()
			return fmt.Errorf("%w: %w", ErrBufferFull, ctx.Err())
		}
	}
}

func (p *Producer) usable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.usableLocked()
}

func (p *Producer) usableLocked() error {
	if p.fatal != nil {
		return p.fatal
	}
	if p.closing {
		return ErrClosed
	}
	if p.cfg.txnID != "" {
		if p.txnErr != nil {
			return &AbortableTxnError{Err: p.txnErr}
		}
		if p.txn != txnOpen {
			return fmt.Errorf("%w: produce outside a transaction", ErrTransactionState)
		}
	}
	return nil
}

// ProduceSync produces the records and waits for all their results. It
// returns the first record's error, in argument order, or nil. If ctx ends
// first it returns ctx's error; the records already buffered are still
// sent, and must not be reused until Flush returns.
func (p *Producer) ProduceSync(ctx context.Context, rs ...*Record) error {
	var wg sync.WaitGroup
	errs := make([]error, len(rs))
	for i, r := range rs {
		wg.Add(1)
		if err := p.Produce(ctx, r, func(_ *Record, err error) {
			errs[i] = err
			wg.Done()
		}); err != nil {
			errs[i] = err
			wg.Done()
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Flush closes every partition's pending records into batches at once
// (P4) and waits until every record produced so far, and any produced
// while it waits, has its result and its promise has returned. It returns
// ctx's error if ctx ends first; nothing is lost then.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	p.flushing++
	for _, ps := range p.order {
		if len(ps.pending) > 0 {
			p.closePendingLocked(ps)
		}
	}
	idle := p.idle
	p.mu.Unlock()
	p.wakeSender()
	defer func() {
		p.mu.Lock()
		p.flushing--
		p.mu.Unlock()
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting records (Produce returns ErrClosed), flushes, and
// releases connections and goroutines. If ctx ends before everything is
// delivered, the remaining records fail with ErrClosed and Close returns
// ctx's error. Close may be called more than once.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		<-p.quit
		return nil
	}
	p.closing = true
	p.mu.Unlock()

	err := p.Flush(ctx)
	if err != nil {
		p.mu.Lock()
		p.failAllLocked(ErrClosed)
		idle := p.idle
		p.mu.Unlock()
		<-idle // every record is failed; the promise goroutine finishes them
	}
	close(p.quit)
	p.cancel()
	p.wg.Wait()
	p.cl.close()
	return err
}

// partLocked returns the partition's state, creating it.
func (p *Producer) partLocked(t tp) *partState {
	ps := p.parts[t]
	if ps == nil {
		ps = &partState{tp: t, broker: -1}
		p.parts[t] = ps
		p.order = append(p.order, ps)
	}
	return ps
}

// slotFreeLocked reports whether one more batch of ps would find a
// request slot: its leader is known, and the requests out to it plus the
// batches of ps already waiting (each needs a request of its own: one
// batch per partition per request) are fewer than MaxInFlight.
func (p *Producer) slotFreeLocked(ps *partState) bool {
	node, _, ok := p.cl.leader(ps.tp.topic, ps.tp.partition)
	if !ok {
		return false
	}
	waiting := 0
	for _, b := range ps.queue {
		if !b.done && !b.inflight {
			waiting++
		}
	}
	return p.inflight[node]+waiting < p.cfg.maxInFlight
}

// closePendingLocked closes a partition's whole pending list into one
// batch, in send order (P5), and moves the sticky partition on (P2).
func (p *Producer) closePendingLocked(ps *partState) {
	// A closed batch still waiting for its first send, when no request
	// slot is left for another batch, takes the newly closed records in
	// (see MaxBatchBytes): same order, fewer and larger batches.
	if n := len(ps.queue); n > 0 && p.fatal == nil && !p.slotFreeLocked(ps) {
		if last := ps.queue[n-1]; last.attempts == 0 && !last.inflight && !last.seqd && !last.done &&
			last.bytes+ps.pendingBytes <= p.cfg.maxBatchBytes {
			last.recs = append(last.recs, ps.pending...)
			last.bytes += ps.pendingBytes
			if ps.stickyN > 0 {
				p.cfg.partitioner.BatchClosed(ps.tp.partition, ps.stickyN)
			}
			ps.pending, ps.pendingBytes, ps.stickyN = nil, 0, 0
			return
		}
	}
	b := &batch{part: ps, recs: ps.pending, bytes: ps.pendingBytes, created: ps.oldest}
	ps.queue = append(ps.queue, b)
	if ps.stickyN > 0 {
		p.cfg.partitioner.BatchClosed(ps.tp.partition, ps.stickyN)
	}
	ps.pending, ps.pendingBytes, ps.stickyN = nil, 0, 0
	if p.fatal != nil {
		p.failBatchLocked(b, p.fatal)
		p.popDoneLocked(ps)
	}
}

// failAllLocked fails every record not yet completed with err.
func (p *Producer) failAllLocked(err error) {
	for _, ps := range p.order {
		if len(ps.pending) > 0 {
			b := &batch{part: ps, recs: ps.pending, created: ps.oldest}
			ps.queue = append(ps.queue, b)
			ps.pending, ps.pendingBytes, ps.stickyN = nil, 0, 0
		}
		for _, b := range ps.queue {
			if !b.done {
				b.done, b.err = true, err
			}
		}
		p.popDoneLocked(ps)
	}
}

// popDoneLocked hands the finished batches at the front of a partition's
// queue to the promise goroutine, in order.
func (p *Producer) popDoneLocked(ps *partState) {
	n := 0
	for _, b := range ps.queue {
		if !b.done {
			break
		}
		if b.err == nil && b.seqd && b.id == p.id {
			ps.ackedSeq = b.nextSeq()
		}
		if b.err != nil {
			p.noteTxnErrLocked(b.err)
		}
		p.completed = append(p.completed, b)
		n++
	}
	if n == 0 {
		return
	}
	clear(ps.queue[:n])
	ps.queue = ps.queue[n:]
	select {
	case p.promWake <- struct{}{}:
	default:
	}
}

// deliver is the promise goroutine: it calls the promises of completed
// batches, then releases their buffer space.
func (p *Producer) deliver() {
	defer p.wg.Done()
	for {
		select {
		case <-p.promWake:
		case <-p.quit:
			return // Close waited for idle: nothing is left
		}
		p.mu.Lock()
		done := p.completed
		p.completed = nil
		p.mu.Unlock()
		if len(done) == 0 {
			continue
		}

		released, count := 0, 0
		for _, b := range done {
			for _, pr := range b.recs {
				pr.promise(pr.r, b.err)
				released += pr.size
				count++
			}
		}
		p.mu.Lock()
		p.buffered -= released
		p.records -= count
		close(p.space)
		p.space = make(chan struct{})
		if p.records == 0 {
			close(p.idle)
		}
		p.mu.Unlock()
	}
}
