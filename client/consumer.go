package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

type offsetKind uint8

const (
	offsetAt offsetKind = iota
	offsetStart
	offsetEnd
)

// Offset is where a consumer starts reading a partition.
type Offset struct {
	kind offsetKind
	at   int64
}

// AtStart starts at the earliest offset the partition still has.
func AtStart() Offset { return Offset{kind: offsetStart} }

// AtEnd starts at the log end: only records produced from now on.
func AtEnd() Offset { return Offset{kind: offsetEnd} }

// At starts at an exact offset. Records below it in the same batch are
// skipped; an offset outside the log restarts at ConsumeResetOffset.
func At(offset int64) Offset { return Offset{kind: offsetAt, at: offset} }

func (o Offset) String() string {
	switch o.kind {
	case offsetStart:
		return "start"
	case offsetEnd:
		return "end"
	}
	return fmt.Sprintf("%d", o.at)
}

// consumePart is an assigned partition and where reading continues. Every
// field is guarded by Consumer.mu.
type consumePart struct {
	tp    tp
	start Offset // where to (re)start while next < 0
	next  int64  // next offset to return; -1 until resolved
	epoch int32  // leader epoch from metadata, sent with fetches (KIP-320)
	stale bool   // the last answer said our metadata is old
}

// Consumer reads assigned partitions: no consumer group, no committed
// offsets. Create it with NewConsumer, call Poll in a loop from one
// goroutine (calls are serialized), and Close it when done.
type Consumer struct {
	cfg *config
	cl  *cluster

	pollMu sync.Mutex // serializes Poll, which owns parts' positions while it runs

	mu     sync.Mutex // guards the fields below
	parts  map[tp]*consumePart
	order  []*consumePart
	topics []string // ConsumeTopics, expanded to partitions by Poll
	closed bool
}

// NewConsumer validates the options and creates a consumer. It does not
// contact a broker until the first Poll.
func NewConsumer(opts ...Opt) (*Consumer, error) {
	cfg, err := newConfig(consumerOpt, opts)
	if err != nil {
		return nil, err
	}
	c := &Consumer{cfg: cfg, cl: newCluster(cfg), parts: map[tp]*consumePart{}, topics: cfg.consumeTopics}
	c.cl.addInterest(cfg.consumeTopics...)
	c.Assign(cfg.consumePartitions)
	return c, nil
}

// Assign adds partitions to read, or moves already assigned ones to a new
// start offset.
func (c *Consumer) Assign(parts map[string]map[int32]Offset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	topics := make([]string, 0, len(parts))
	for t := range parts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		ps := make([]int32, 0, len(parts[t]))
		for p := range parts[t] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for _, p := range ps {
			cp := c.partLocked(tp{t, p})
			cp.start, cp.next = parts[t][p], -1
		}
	}
	c.cl.addInterest(topics...)
}

// unassign stops reading a partition.
func (c *Consumer) unassign(t tp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.parts[t]; cp != nil {
		delete(c.parts, t)
		c.order = slices.DeleteFunc(c.order, func(o *consumePart) bool { return o == cp })
	}
}

func (c *Consumer) partLocked(t tp) *consumePart {
	cp := c.parts[t]
	if cp == nil {
		cp = &consumePart{tp: t, start: c.cfg.resetOffset, next: -1, epoch: -1}
		c.parts[t] = cp
		c.order = append(c.order, cp)
	}
	return cp
}

// Position returns the next offset Poll returns from a partition, and
// whether it is known yet.
func (c *Consumer) Position(topic string, partition int32) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.parts[tp{topic, partition}]
	if cp == nil || cp.next < 0 {
		return -1, false
	}
	return cp.next, true
}

// Close releases the consumer's connections. Poll returns ErrClosed after.
func (c *Consumer) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cl.close()
}

// Poll returns the next records of the assigned partitions, waiting until
// there are some or ctx ends (then it returns ctx's error). Records come in
// offset order per partition; records of control batches and records below
// a partition's start offset are skipped. Leader changes are followed by
// refreshing metadata. A non-retriable error (for example an authorization
// failure) is returned as is; the next Poll tries again.
func (c *Consumer) Poll(ctx context.Context) ([]*Record, error) {
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	for {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if err := c.expandTopics(ctx); err != nil {
			return nil, err
		}
		recs, progress, err := c.pollOnce(ctx)
		if len(recs) > 0 || err != nil {
			return recs, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !progress {
			// Nothing could be asked: wait for fresh metadata, and back
			// off if even that failed.
			err := c.cl.waitRefresh(ctx)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err == nil {
				continue
			}
			t := time.NewTimer(c.cfg.retryBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
	}
}

// expandTopics assigns the partitions of ConsumeTopics that metadata shows.
func (c *Consumer) expandTopics(ctx context.Context) error {
	for _, t := range c.topics {
		n, err := c.cl.partitionCount(ctx, t)
		if err != nil {
			return err
		}
		c.mu.Lock()
		for p := int32(0); p < int32(n); p++ {
			c.partLocked(tp{t, p})
		}
		c.mu.Unlock()
	}
	return nil
}

// pollOnce resolves start offsets and fetches once from every leader. It
// reports whether any request could be sent.
func (c *Consumer) pollOnce(ctx context.Context) ([]*Record, bool, error) {
	unresolved, ready := c.groupByLeader()
	var firstErr error
	for _, g := range unresolved {
		if err := c.listOffsets(ctx, g.node, g.parts); err != nil && firstErr == nil && !IsRetriable(err) && ctx.Err() == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return nil, true, firstErr
	}
	// Partitions just resolved are fetched on the next turn.
	if len(ready) == 0 {
		return nil, len(unresolved) > 0, nil
	}

	out, errs := c.fetchAll(ctx, ready)
	for _, err := range errs {
		if err != nil && firstErr == nil && !IsRetriable(err) && ctx.Err() == nil {
			firstErr = err
		}
	}
	if len(out) == 0 && firstErr == nil {
		retriable := false
		for _, err := range errs {
			if err != nil {
				retriable = true
			}
		}
		if retriable {
			return nil, false, nil // back off before the next turn
		}
	}
	return out, true, firstErr
}

// leaderParts is the partitions one request to a leader covers.
type leaderParts struct {
	node  int32
	parts []*consumePart
}

// addToLeader adds cp to node's group in gs, creating the group.
func addToLeader(gs []leaderParts, node int32, cp *consumePart) []leaderParts {
	for i := range gs {
		if gs[i].node == node {
			gs[i].parts = append(gs[i].parts, cp)
			return gs
		}
	}
	return append(gs, leaderParts{node: node, parts: []*consumePart{cp}})
}

// groupByLeader sorts the assigned partitions by leader: those whose start
// offset is still to be resolved and those ready to fetch. A partition
// without a known leader, or with stale metadata, asks for a refresh.
func (c *Consumer) groupByLeader() (unresolved, ready []leaderParts) {
	refresh := false
	c.mu.Lock()
	for _, cp := range c.order {
		if cp.next < 0 && cp.start.kind == offsetAt {
			cp.next = cp.start.at
		}
		node, epoch, ok := c.cl.leader(cp.tp.topic, cp.tp.partition)
		if !ok || cp.stale {
			refresh = true
			if !ok {
				continue
			}
		}
		cp.epoch = epoch
		if cp.next < 0 {
			unresolved = addToLeader(unresolved, node, cp)
		} else {
			ready = addToLeader(ready, node, cp)
		}
	}
	c.mu.Unlock()
	if refresh {
		c.cl.triggerRefresh()
	}
	return unresolved, ready
}

// fetchAll fetches from every leader in ready at once. It returns the
// records in the order of ready, and each fetch's error.
func (c *Consumer) fetchAll(ctx context.Context, ready []leaderParts) ([]*Record, []error) {
	results := make([][]*Record, len(ready))
	errs := make([]error, len(ready))
	var wg sync.WaitGroup
	for i, g := range ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = c.fetch(ctx, g.node, g.parts)
		}()
	}
	wg.Wait()
	var out []*Record
	for _, recs := range results {
		out = append(out, recs...)
	}
	return out, errs
}
