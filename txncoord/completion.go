package txncoord

import (
	"context"
	"time"
)

// completion is the end of one transaction in a Prepare state: its
// markers, then its Complete state. The Complete state of a producer that
// already waits to begin its next transaction is written by that request,
// in one Append with the next transaction's Ongoing state (Kafka writes
// them one after the other), so that a producer running transactions back
// to back costs one coordinator commit less per transaction.
type completion struct {
	m Metadata // the Prepare state being completed
	// marked closes once every marker is written; done once the
	// completion ends: the Complete state written, or given up.
	marked, done chan struct{}
	// waiters counts the requests that wait for this completion and may
	// write its Complete state (guarded by Coordinator.mu); the
	// completion writes it only when none is left. wake (buffered, one)
	// tells it that a waiter left.
	waiters int
	wake    chan struct{}
}

// startCompletion starts writing the markers of m, a transaction in a
// Prepare state, unless that is under way. Call with id's lock held.
func (c *Coordinator) startCompletion(id string, m Metadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.completing[id] != nil {
		return
	}
	comp := &completion{m: m, marked: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.completing[id] = comp
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.complete(id, comp)
		c.finish(id, comp)
		close(comp.done)
	}()
}

// complete writes comp's markers, retrying until every partition has one
// or the coordinator closes, then, once no request of the producer waits
// to write it, the Complete state, retrying that too: a transaction left
// in a Prepare state would answer every request of its producer
// CONCURRENT_TRANSACTIONS until the coordinator moved.
func (c *Coordinator) complete(id string, comp *completion) {
	m := comp.m
	mk := Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: c.epoch,
		Commit: m.State == PrepareCommit, TxnVersion: m.TxnVersion}
	attempt := 1
	for ; ; attempt++ {
		err := c.markers.WriteMarkers(c.ctx, mk, m.Partitions)
		if err == nil {
			break
		}
		if attempt == 1 || attempt%20 == 0 { // once, then every ~2 s: a stuck completion shows in the log
			c.logger.Info("txncoord: markers not written yet", "transactional_id", id, "attempt", attempt, "err", err)
		}
		if !c.sleep(c.cfg.MarkerRetry) {
			return
		}
	}
	if attempt > 1 {
		c.logger.Info("txncoord: markers written", "transactional_id", id, "attempts", attempt)
	}
	close(comp.marked)
	if !c.awaitWaiters(comp) {
		return
	}
	for attempt := 1; ; attempt++ {
		done, err := c.writeComplete(id, comp)
		if done {
			return
		}
		if attempt == 1 || attempt%20 == 0 {
			c.logger.Warn("txncoord: markers written, the Complete state not yet", "transactional_id", id, "attempt", attempt, "err", err)
		}
		if !c.sleep(c.cfg.MarkerRetry) {
			return
		}
	}
}

// awaitWaiters returns once no request waits on comp (each has written
// the Complete state with its own record, or left it to the completion),
// or false if the coordinator closed.
func (c *Coordinator) awaitWaiters(comp *completion) bool {
	for {
		c.mu.Lock()
		n := comp.waiters
		c.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-comp.wake:
		case <-c.ctx.Done():
			return false
		}
	}
}

// writeComplete records that comp's markers are written; done is false
// when that should be tried again. A completion whose Complete state the
// producer's next request wrote is finished already: the transaction in
// the view may then be a later one of the same producer id and epoch
// (transactions v1 keep both).
func (c *Coordinator) writeComplete(id string, comp *completion) (done bool, err error) {
	defer c.ids.lock(id)()
	cur, ok := c.view.Txn(id)
	if !ok || !sameTxn(cur, comp.m) || !c.running(id, comp) {
		return true, nil // changed meanwhile
	}
	if err := c.write(c.ctx, id, completed(cur)); err != nil {
		return false, err
	}
	c.finish(id, comp)
	return true, nil
}

// running reports whether comp is id's completion.
func (c *Coordinator) running(id string, comp *completion) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.completing[id] == comp
}

// finish forgets comp, id's completion, once its Complete state is
// written (or it gave up), so that the next transaction's end can start
// its own at once. Call with id's lock held, or from comp's goroutine.
func (c *Coordinator) finish(id string, comp *completion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if comp != nil && c.completing[id] == comp {
		delete(c.completing, id)
	}
}

// sameTxn reports whether cur is still the Prepare state m.
func sameTxn(cur, m Metadata) bool {
	return cur.ProducerID == m.ProducerID && cur.ProducerEpoch == m.ProducerEpoch && cur.State == m.State
}

// completed is the Complete state that follows the Prepare state m.
func completed(m Metadata) Metadata {
	commit := m.State == PrepareCommit
	m.State, m.Partitions = CompleteAbort, nil
	if commit {
		m.State = CompleteCommit
	}
	if m.NextProducerID > 0 { // the epoch overflowed: the producer goes on under a new id
		m.PrevProducerID, m.ProducerID, m.ProducerEpoch, m.NextProducerID = m.ProducerID, m.NextProducerID, 0, 0
	}
	return m
}

// awaitCompletion waits until id's markers are written, for at most
// Config.CompletionWait, if they are being written: a producer that
// begins its next transaction at once then needs no retry. It returns
// the completion it waited for (nil if none), whose waiter the caller
// stays until it calls leave, with id's lock held, after its own write:
// the caller may write the Complete state (pendingComplete).
func (c *Coordinator) awaitCompletion(ctx context.Context, id string) *completion {
	c.mu.Lock()
	comp := c.completing[id]
	if comp != nil {
		comp.waiters++
	}
	c.mu.Unlock()
	if comp == nil {
		return nil
	}
	t := time.NewTimer(c.cfg.CompletionWait)
	defer t.Stop()
	select {
	case <-comp.marked:
	case <-comp.done:
	case <-t.C:
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
	return comp
}

// leave ends the caller's wait on comp (awaitCompletion); nil is none.
func (c *Coordinator) leave(comp *completion) {
	if comp == nil {
		return
	}
	c.mu.Lock()
	comp.waiters--
	c.mu.Unlock()
	select {
	case comp.wake <- struct{}{}:
	default: // a wake is pending already
	}
}

// pendingComplete returns id's metadata m (from the view) as the caller
// should act on it: if comp's markers are written and m is still comp's
// Prepare state, the Complete state, with the record that writes it,
// which the caller must write before (or with) any record of its own;
// else m and no record. Call with id's lock held, as comp's waiter.
func (c *Coordinator) pendingComplete(id string, comp *completion, m Metadata, ok bool) (Metadata, []Record) {
	if comp == nil || !ok || !sameTxn(m, comp.m) || !c.running(id, comp) {
		return m, nil
	}
	select {
	case <-comp.marked:
	default:
		return m, nil
	}
	done := completed(m)
	done.LastUpdate = c.cfg.Now().UnixMilli()
	return done, []Record{MetadataRecord(id, done)}
}
