package client

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
)

// GroupConsumer is a member of a Kafka consumer group: the group's leader
// assigns it partitions of the topics it subscribes to, it reads them from
// their committed offsets, and it commits how far it got. See the package
// documentation ("Consuming in a group") for the caller's duties.
//
// A GroupConsumer runs one goroutine of its own, the member: it joins the
// group, heartbeats, rebalances, auto-commits, and calls the callbacks.
// Close stops it.
type GroupConsumer struct {
	cfg   *config
	cl    *cluster
	log   *slog.Logger
	coord *coordinator
	fetch *Consumer // reads the owned partitions; only Poll changes its assignment

	mctx    context.Context // ends the member goroutine; Close cancels it
	mcancel context.CancelFunc
	done    chan struct{}   // closed when the member goroutine has returned
	rejoin  chan rejoinNote // capacity 1: a commit learned that the member must rejoin
	meta    chan struct{}   // capacity 1: metadata was refreshed

	pollMu   sync.Mutex       // serializes Poll; guards fetching
	fetching map[tp]uint64    // incarnation of each partition the fetcher reads
	commitMu sync.Mutex       // serializes commits, so that an older one never lands after a newer one
	closeMu  sync.Mutex       // serializes Close
	closeErr error            // the first Close's result, guarded by closeMu
	topics   []string         // every member's topics in the last assignment; member goroutine only
	counts   map[string]int32 // partition counts the last assignment was made with; member goroutine only
	leader   bool             // this member leads the current generation; member goroutine only

	mu          sync.Mutex // guards the fields below
	memberID    string
	instanceID  *string
	generation  int32 // of the group, for requests; -1 without one
	ownedGen    int32 // generation in which owned was assigned, sent when rejoining
	owned       map[tp]*ownedPart
	inc         uint64        // last incarnation handed out
	fatal       error         // a *GroupError once the membership has ended for good
	closed      bool          // Close was called
	inPoll      bool          // a Poll is running
	unprocessed bool          // Poll returned records since the caller last entered Poll
	pollEntered chan struct{} // closed and replaced whenever Poll starts
	changed     chan struct{} // closed and replaced when owned changes, fatal is set or Close starts
}

// ownedPart is a partition the group assigned to this member.
type ownedPart struct {
	inc       uint64 // incarnation; 0 while the partition is being revoked (Poll drops its records)
	start     Offset // where reading starts: the committed offset, or ConsumeResetOffset
	consumed  int64  // position after the records Poll returned; -1 unknown
	epoch     int32  // leader epoch of the last record returned, -1 unknown
	processed int64  // consumed when the caller last entered Poll
	procEpoch int32
	committed int64 // last offset committed or found committed; -1 none
}

// NewGroupConsumer validates the options and starts the member, which
// joins the group in the background. ConsumerGroup and ConsumeTopics are
// required; ConsumePartitions is refused.
func NewGroupConsumer(opts ...Opt) (*GroupConsumer, error) {
	cfg, err := newConfig(groupOpt, opts)
	if err != nil {
		return nil, err
	}
	cl := newCluster(cfg)
	cl.addInterest(cfg.consumeTopics...)
	g := &GroupConsumer{
		cfg: cfg, cl: cl, log: cfg.logger.With("group", cfg.group),
		coord:    newCoordinator(cl, cfg.group),
		fetch:    &Consumer{cfg: cfg, cl: cl, parts: map[tp]*consumePart{}},
		done:     make(chan struct{}),
		rejoin:   make(chan rejoinNote, 1),
		meta:     make(chan struct{}, 1),
		fetching: map[tp]uint64{},

		generation:  -1,
		ownedGen:    -1,
		owned:       map[tp]*ownedPart{},
		pollEntered: make(chan struct{}),
		changed:     make(chan struct{}),
	}
	if cfg.instanceID != "" {
		id := cfg.instanceID
		g.instanceID = &id
	}
	cl.onUpdate(func() {
		select {
		case g.meta <- struct{}{}:
		default:
		}
	})
	g.mctx, g.mcancel = context.WithCancel(context.Background())
	go g.manage()
	return g, nil
}

// Assigned returns the partitions the member owns now, by topic.
func (g *GroupConsumer) Assigned() map[string][]int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return byTopic(slices.Collect(maps.Keys(g.owned)))
}

// Member returns the member id the coordinator gave this member and the
// group generation it belongs to (-1 when it has none); with
// GroupProtocolConsumer, the member epoch in place of the generation.
func (g *GroupConsumer) Member() (memberID string, generation int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.memberID, g.generation
}

// Poll returns the next records of the partitions the member owns, waiting
// until there are some, or ctx ends (then it returns ctx's error). Records
// come in offset order per partition. Calling Poll also tells the member
// that the caller is done with the records of the previous Poll: those
// are what auto-commit commits, and a rebalance waits (up to
// RebalanceTimeout) for that before revoking partitions. Poll returns no
// record of a partition once it is revoked. After Close it returns
// ErrClosed; after a fatal group error, a *GroupError.
func (g *GroupConsumer) Poll(ctx context.Context) ([]*Record, error) {
	g.pollMu.Lock()
	defer g.pollMu.Unlock()
	g.enterPoll()
	defer g.leavePoll()
	for {
		wake, err := g.syncFetcher()
		if err != nil {
			return nil, err
		}
		if len(g.fetching) == 0 {
			select {
			case <-ctx.Done(): // the caller gives up
				return nil, ctx.Err()
			case <-wake: // partitions assigned, Close, or a fatal error
			}
			continue
		}
		recs, progress, err := g.fetch.pollOnce(ctx)
		recs = g.keep(recs)
		if len(recs) > 0 || (err != nil && ctx.Err() == nil) {
			return recs, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !progress {
			if err := g.cl.waitRefresh(ctx); err != nil && !sleep(ctx, g.cfg.retryBackoff) {
				return nil, ctx.Err()
			}
		}
	}
}

// enterPoll marks the records of earlier Polls processed and wakes a
// rebalance waiting for that.
func (g *GroupConsumer) enterPoll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inPoll, g.unprocessed = true, false
	for _, op := range g.owned {
		op.processed, op.procEpoch = op.consumed, op.epoch
	}
	close(g.pollEntered)
	g.pollEntered = make(chan struct{})
}

func (g *GroupConsumer) leavePoll() {
	g.mu.Lock()
	g.inPoll = false
	g.mu.Unlock()
}

// syncFetcher makes the fetcher read exactly the owned partitions that are
// not being revoked, each new incarnation from its start offset. It
// returns a channel closed at the next change of ownership, and the error
// Poll must return instead, if any.
func (g *GroupConsumer) syncFetcher() (<-chan struct{}, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if g.fatal != nil {
		return nil, g.fatal
	}
	for t, inc := range g.fetching {
		if op := g.owned[t]; op == nil || op.inc != inc {
			g.fetch.unassign(t)
			delete(g.fetching, t)
		}
	}
	add := map[string]map[int32]Offset{}
	for t, op := range g.owned {
		if op.inc == 0 || g.fetching[t] == op.inc {
			continue
		}
		if add[t.topic] == nil {
			add[t.topic] = map[int32]Offset{}
		}
		add[t.topic][t.partition] = op.start
		g.fetching[t] = op.inc
	}
	if len(add) > 0 {
		g.fetch.Assign(add)
	}
	return g.changed, nil
}

// keep drops records of partitions revoked (or revoked and assigned
// again) while they were fetched, and advances the consumed positions
// past the rest.
func (g *GroupConsumer) keep(recs []*Record) []*Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.fatal != nil {
		return nil
	}
	current := func(t tp) *ownedPart {
		if op := g.owned[t]; op != nil && op.inc != 0 && op.inc == g.fetching[t] {
			return op
		}
		return nil
	}
	out := recs[:0]
	for _, r := range recs {
		if op := current(tp{r.Topic, r.Partition}); op != nil {
			out = append(out, r)
			op.epoch = r.LeaderEpoch
		}
	}
	for t := range g.fetching {
		if op := current(t); op != nil {
			if pos, ok := g.fetch.Position(t.topic, t.partition); ok && pos > op.consumed {
				op.consumed = pos
			}
		}
	}
	if len(out) > 0 {
		g.unprocessed = true
	}
	return out
}

// byTopic groups partitions by topic, each topic's sorted.
func byTopic(parts []tp) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range parts {
		out[t.topic] = append(out[t.topic], t.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// wakeLocked tells a waiting Poll that something changed. Called with mu.
func (g *GroupConsumer) wakeLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Close ends the membership: it stops the member goroutine, commits
// everything Poll returned (with AutoCommit), calls OnRevoked with the
// owned partitions, and leaves the group with LeaveGroup so that the
// others get the partitions at once (a static member, GroupInstanceID,
// does not leave: its place waits for it until the session timeout). ctx
// bounds the commit and the leave; the connections are released either
// way. It returns the first error of the commit or the leave; calling it
// again returns the same.
func (g *GroupConsumer) Close(ctx context.Context) error {
	g.closeMu.Lock()
	defer g.closeMu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return g.closeErr
	}
	g.closed = true
	g.wakeLocked()
	g.mu.Unlock()

	g.mcancel()
	<-g.done
	g.closeErr = g.leave(ctx)
	g.cl.close()
	return g.closeErr
}
