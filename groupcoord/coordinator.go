package groupcoord

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator is the group coordinator of one __consumer_offsets
// partition, run by the partition's leader: it serves the classic group
// protocol and the offset APIs for the groups that hash to the partition.
// Its methods are safe for concurrent use; they block until they can
// answer (a JoinGroup until its rebalance completes), or until their ctx
// is done.
type Coordinator struct {
	cfg    Config
	log    Log
	view   *View
	logger *slog.Logger

	// ctx bounds the coordinator's own writes (group metadata); Close
	// cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts timer callbacks that may still run and background
	// writes; Close waits for it. Add happens only under mu while open.
	wg sync.WaitGroup

	// mu guards closed, groups, committing, and every group and member
	// reachable from groups. It is never held while calling the Log or
	// waiting.
	mu     sync.Mutex
	closed bool
	groups map[string]*group // groups with live state; others live only in the View
	// committing counts, by group, the OffsetCommits admitted and not yet
	// written: offset expiry leaves those groups alone (expiry.go).
	committing map[string]int
	// cgroups are the KIP-848 consumer groups' timers and turns.
	cgroups map[string]*cgLive
	// regex is the consumer groups' resolved regexes (cgtopics.go).
	regex regexCache
}

// New returns the coordinator of the partition whose records view holds,
// with every group the view knows loaded: stable generations keep their
// members, whose sessions start now. Call it once the partition's leader
// has applied every entry of earlier terms (until then the view is
// behind, and the broker should answer COORDINATOR_LOAD_IN_PROGRESS), and
// Close it when the leadership is lost.
func New(cfg Config, log Log, view *View) (*Coordinator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		return nil, &ConfigError{Field: "log", Reason: "nil"}
	}
	if view == nil {
		return nil, &ConfigError{Field: "view", Reason: "nil"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{
		cfg:    cfg,
		log:    log,
		view:   view,
		logger: cfg.Logger,
		ctx:    ctx,
		cancel: cancel,
		groups: make(map[string]*group),

		committing: make(map[string]int),
		cgroups:    make(map[string]*cgLive),
		regex:      regexCache{groups: make(map[string]map[string][]string), matches: make(map[string]regexMatches)},
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, id := range view.Groups() {
		md, ok := view.Group(id)
		if !ok {
			continue // only offsets: an empty group, loaded when used
		}
		g := loadGroup(id, md, now)
		c.groups[id] = g
		for _, m := range g.members {
			c.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
		if len(g.members) > cfg.MaxGroupSize {
			c.prepareRebalance(g, "loaded over group.max.size")
		}
	}
	c.loadConsumerGroups()
	c.loadShareGroups()
	return c, nil
}

// Close stops the coordinator: it answers every waiting request
// NOT_COORDINATOR, stops every timer, abandons its pending writes (their
// outcome is for the next coordinator to read from the log), and returns
// once none of its goroutines runs. Requests after Close are answered
// NOT_COORDINATOR. Close is idempotent.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		for _, g := range c.groups {
			c.unload(g)
		}
		c.closeConsumerGroups()
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// unload answers g's waiters and stops its timers.
func (c *Coordinator) unload(g *group) {
	for _, m := range g.members {
		g.answerJoin(m, joinError(m.id, kerr.NotCoordinator))
		g.answerSync(m, syncResult{err: kerr.NotCoordinator})
		c.stopTimer(&m.heartbeat)
	}
	for id := range g.pending {
		c.removePending(g, id)
	}
	c.stopTimer(&g.join)
	c.stopTimer(&g.sync)
}

// lookup returns a group's live state, loading an empty group the View
// knows only by its offsets (or by a metadata record without members);
// nil if the group does not exist. Call with mu held.
func (c *Coordinator) lookup(id string) *group {
	if g := c.groups[id]; g != nil {
		return g
	}
	if !c.view.HasGroup(id) {
		return nil
	}
	g := newGroup(id, time.Now())
	if md, ok := c.view.Group(id); ok {
		g = loadGroup(id, md, time.Now())
	}
	c.groups[id] = g
	return g
}

// startTimer runs f under mu after d, unless the timer in slot is stopped
// or replaced first, or the coordinator closes. Call with mu held.
func (c *Coordinator) startTimer(slot **time.Timer, d time.Duration, f func()) {
	c.stopTimer(slot)
	if c.closed {
		return
	}
	c.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer c.wg.Done()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || *slot != t {
			return // stopped or replaced while this callback waited for mu
		}
		*slot = nil
		f()
	})
	*slot = t
}

// stopTimer stops the timer in slot, if any. Call with mu held.
func (c *Coordinator) stopTimer(slot **time.Timer) {
	if t := *slot; t != nil {
		*slot = nil
		if t.Stop() {
			c.wg.Done() // its callback will never run
		}
	}
}

// write commits a group's metadata records in a goroutine of the
// coordinator, after the group's earlier metadata writes, and then calls
// done under mu with the outcome (nil, or the client's error), unless the
// coordinator closed. Metadata writes outlive the request that caused
// them (a leader may hang up after its SyncGroup). Call with mu held.
func (c *Coordinator) write(g *group, recs []Record, done func(err *kerr.Error)) {
	if c.closed {
		done(kerr.NotCoordinator)
		return
	}
	prev, mine := g.lastWrite, make(chan struct{})
	g.lastWrite = mine
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(mine)
		var err *kerr.Error
		if prev != nil {
			select {
			case <-prev: // the group's previous write finished
			case <-c.ctx.Done(): // closing
				err = kerr.NotCoordinator
			}
		}
		if err == nil {
			err = c.append(c.ctx, recs)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		done(err)
	}()
}

// append commits records through the Log within the commit timeout, or
// until the coordinator closes, and returns the client's error if that
// failed.
func (c *Coordinator) append(ctx context.Context, recs []Record) *kerr.Error {
	for _, r := range recs {
		if len(r.Key)+len(r.Value) > c.cfg.MaxRecordBytes {
			return kerr.UnknownServerError // Kafka's log: MESSAGE_TOO_LARGE, converted
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	if err := c.log.Append(ctx, recs); err != nil {
		c.logger.Debug("groupcoord: append failed", "records", len(recs), "err", err)
		if c.ctx.Err() != nil {
			return kerr.NotCoordinator // closed: the client must find the next coordinator
		}
		return appendError(err)
	}
	return nil
}

// maxMemberIDPrefix keeps a member id (prefix, dash, 32 hex digits) within
// what a non-flexible string carries, as DescribeGroups v0-v4 must.
const maxMemberIDPrefix = MaxGroupIDBytes - 1 - 32

// newMemberID returns a fresh member id: the client id (or a static
// member's instance id), a dash, and 16 random bytes in hex, as Kafka
// makes them; a client id past maxMemberIDPrefix is cut short.
func (c *Coordinator) newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	prefix = prefix[:min(len(prefix), maxMemberIDPrefix)]
	var b [16]byte
	if _, err := io.ReadFull(c.cfg.Rand, b[:]); err != nil {
		// crypto/rand does not fail; a broken test source still
		// yields distinct ids through the time.
		now := time.Now().UnixNano()
		for i := range 8 {
			b[i] ^= byte(now >> (8 * i))
		}
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}
