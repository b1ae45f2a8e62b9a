package txncoord

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator is the transaction coordinator of one __transaction_state
// partition, run by the partition's leader. Its methods are safe for
// concurrent use.
type Coordinator struct {
	cfg     Config
	log     Log
	view    *View
	markers Markers
	epoch   int32 // the coordinator epoch the markers carry: the leader's term
	logger  *slog.Logger

	// ctx bounds the coordinator's own work (marker writes, timeouts);
	// Close cancels it. wg counts the goroutines doing that work.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// ids serialises the reads, checks and writes of each transactional
	// id's metadata, so that no two requests act on the same stale state;
	// different ids proceed at once (their records commit together). An
	// id's lock is held across Log.Append (one record) but never while
	// markers are written.
	ids idLocks

	// mu guards closed, completing and every completion's waiters.
	mu     sync.Mutex
	closed bool
	// completing holds the ids whose transactions are being completed:
	// markers, then the Complete state.
	completing map[string]*completion
}

// New returns the coordinator of the partition whose records view holds.
// It resumes writing the markers of every transaction it finds in a
// Prepare state, and aborts transactions past their timeout every
// cfg.AbortInterval. Call Close when the leadership is lost.
func New(cfg Config, log Log, view *View, markers Markers, epoch int32) (*Coordinator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil || view == nil || markers == nil {
		return nil, errors.New("txncoord: New needs a Log, a View and Markers")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{cfg: cfg, log: log, view: view, markers: markers, epoch: epoch,
		logger: cfg.Logger, ctx: ctx, cancel: cancel, completing: make(map[string]*completion),
		ids: idLocks{locks: make(map[string]*idLock)}}
	for _, id := range view.IDs() { // nothing else runs yet: no id lock needed
		if m, ok := view.Txn(id); ok && (m.State == PrepareCommit || m.State == PrepareAbort) {
			c.startCompletion(id, m)
		}
	}
	c.wg.Add(1)
	go c.abortLoop()
	return c, nil
}

// Close stops the coordinator and returns once none of its goroutines
// runs; marker writes in flight are abandoned, for the next coordinator
// to redo. Requests after Close are answered NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// write commits a transactional id's new metadata, stamped with the
// leader's clock. Call with id's lock held.
func (c *Coordinator) write(ctx context.Context, id string, m Metadata) error {
	m.LastUpdate = c.cfg.Now().UnixMilli()
	return c.appendRecords(ctx, []Record{MetadataRecord(id, m)})
}

// appendRecords commits records through the Log within the commit timeout,
// or until the coordinator closes. Call with the locks of the records'
// ids held.
func (c *Coordinator) appendRecords(ctx context.Context, recs []Record) error {
	if c.isClosed() {
		return kerr.NotCoordinator
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	if err := c.log.Append(ctx, recs); err != nil {
		c.logger.Debug("txncoord: append failed", "records", len(recs), "err", err)
		if c.ctx.Err() != nil {
			return kerr.NotCoordinator
		}
		return appendError(err)
	}
	return nil
}

// appendError is the client's error for a failed write, as Kafka converts
// a log append's errors for a coordinator.
func appendError(err error) error {
	var ke *kerr.Error
	switch {
	case !errors.As(err, &ke):
		return kerr.CoordinatorNotAvailable // the outcome is unknown; a retry is safe
	case ke == kerr.NotLeaderForPartition || ke == kerr.KafkaStorageError || ke == kerr.NotCoordinator:
		return kerr.NotCoordinator
	}
	return kerr.CoordinatorNotAvailable
}

// check returns a transactional id's metadata if pid and epoch are its
// current producer's: INVALID_PRODUCER_ID_MAPPING for an unknown id or
// another producer id, PRODUCER_FENCED for another epoch.
func (c *Coordinator) check(id string, pid int64, epoch int16) (Metadata, error) {
	m, ok := c.view.Txn(id)
	return checkProducer(m, ok, pid, epoch)
}

// checkProducer is check of m, id's metadata (ok false if id is unknown).
func checkProducer(m Metadata, ok bool, pid int64, epoch int16) (Metadata, error) {
	switch {
	case !ok || m.ProducerID != pid:
		return m, kerr.InvalidProducerIDMapping
	case m.ProducerEpoch != epoch:
		return m, kerr.ProducerFenced
	}
	return m, nil
}

// completion returns the channel that closes when id's completion ends
// (its Complete state written, or given up), or nil if none runs.
func (c *Coordinator) completion(id string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if comp := c.completing[id]; comp != nil {
		return comp.done
	}
	return nil
}

// bumped is the epoch that fences epoch, and false if the epoch is
// exhausted (the producer then needs a new producer id).
func bumped(epoch int16) (int16, bool) {
	if epoch >= math.MaxInt16-1 {
		return epoch, false
	}
	return epoch + 1, true
}

// addParts returns m's partitions with parts added, sorted.
func addParts(m []TopicPartition, parts []TopicPartition) []TopicPartition {
	out := append(slices.Clone(m), parts...)
	slices.SortFunc(out, compareTP)
	return slices.Compact(out)
}

// sleep waits d, or until the coordinator closes (false).
func (c *Coordinator) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// idLocks is a mutex per transactional id, kept while someone holds or
// waits for it.
type idLocks struct {
	mu    sync.Mutex         // guards locks and every idLock's refs
	locks map[string]*idLock // by transactional id
}

type idLock struct {
	sync.Mutex
	refs int // holders and waiters
}

// lock locks id and returns its unlock.
func (l *idLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	k := l.locks[id]
	if k == nil {
		k = &idLock{}
		l.locks[id] = k
	}
	k.refs++
	l.mu.Unlock()
	k.Lock()
	return func() {
		k.Unlock()
		l.mu.Lock()
		if k.refs--; k.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
