package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errRejoin ends a generation of membership: the member joins again at
// once.
var errRejoin = errors.New("client: rejoin the group")

// fatalGroupErr reports whether a coordinator's answer ends the membership
// for good: retrying cannot fix it (Kafka's clients raise these to the
// application).
func fatalGroupErr(err error) bool {
	for _, fatal := range []error{ErrFencedInstanceID, ErrInconsistentGroupProtocol, ErrInvalidSessionTimeout,
		ErrGroupAuthorizationFailed, ErrGroupMaxSizeReached, ErrInvalidGroupID, ErrUnsupported} {
		if errors.Is(err, fatal) {
			return true
		}
	}
	return false
}

// manage is the member goroutine: it joins the group, keeps the membership
// alive and rejoins whenever the group rebalances, until Close cancels
// mctx or a fatal error ends the membership. Transient failures (the
// coordinator moved or is loading, a lost connection) are retried with
// backoff.
func (g *GroupConsumer) manage() {
	if g.cfg.groupProtocol == GroupProtocolConsumer {
		g.manageConsumer()
		return
	}
	defer close(g.done)
	attempt := 0
	for g.mctx.Err() == nil {
		err := g.generationRound()
		switch {
		case g.mctx.Err() != nil:
			return
		case errors.Is(err, errRejoin):
			attempt = 0
		case fatalGroupErr(err):
			g.fail(err)
			return
		default:
			attempt++
			g.log.Debug("group membership failed, retrying", "err", err, "attempt", attempt)
			if !sleep(g.mctx, backoff(g.cfg, attempt)) {
				return
			}
		}
	}
}

// generationRound is one generation of membership: join, sync, take the
// assignment, then heartbeat (and auto-commit) until the group rebalances
// or something fails. It returns why the generation ended.
func (g *GroupConsumer) generationRound() error {
	if !g.cooperative() {
		// Eager protocol: give up everything before joining.
		g.revoke(g.ownedParts(), true)
	}
	join, strategy, err := g.join()
	if err != nil {
		return err
	}
	var plan []kmsg.SyncGroupRequestGroupAssignment
	g.leader = join.LeaderID == join.MemberID
	if g.leader && !join.SkipAssignment {
		if plan, err = g.plan(join, strategy); err != nil {
			return err
		}
	}
	assigned, err := g.sync(join, plan)
	if err != nil {
		return err
	}
	moved, err := g.adopt(join.Generation, assigned)
	if err != nil {
		return err
	}
	if moved && g.cooperative() {
		return errRejoin // the partitions we gave up go to their new owners in the next round
	}
	return g.heartbeatLoop()
}

// cooperative reports whether the member follows the cooperative
// protocol: only when every strategy it lists is cooperative (Kafka's
// rule, so that a group migrating from an eager strategy stays safe).
func (g *GroupConsumer) cooperative() bool {
	for _, s := range g.cfg.strategies {
		if !s.cooperative() {
			return false
		}
	}
	return true
}

// ownedParts returns the partitions owned now.
func (g *GroupConsumer) ownedParts() []tp {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Collect(maps.Keys(g.owned))
}

// join sends JoinGroup until the coordinator answers with a generation,
// taking the member id it hands out (MEMBER_ID_REQUIRED) on the way. It
// returns the response and the strategy the coordinator chose.
func (g *GroupConsumer) join() (*kmsg.JoinGroupResponse, AssignStrategy, error) {
	for {
		g.mu.Lock()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = g.cfg.group
		req.SessionTimeoutMillis = int32(g.cfg.sessionTimeout / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(g.cfg.rebalanceTimeout / time.Millisecond)
		req.MemberID, req.InstanceID = g.memberID, g.instanceID
		req.ProtocolType = consumerProtocol
		owned, gen := byTopic(slices.Collect(maps.Keys(g.owned))), g.ownedGen
		g.mu.Unlock()
		for _, s := range g.cfg.strategies {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = s.String(), memberMetadata(s, g.cfg.consumeTopics, owned, gen)
			req.Protocols = append(req.Protocols, p)
		}
		resp, err := g.coord.request(g.mctx, classGroup, req, g.cfg.rebalanceTimeout)
		if err != nil {
			return nil, 0, err
		}
		r := resp.(*kmsg.JoinGroupResponse)
		err = kafkaErr(r.ErrorCode, nil)
		switch {
		case err == nil:
			s, err := g.chosen(r)
			if err != nil {
				return nil, 0, err
			}
			g.mu.Lock()
			g.memberID, g.generation = r.MemberID, r.Generation
			g.mu.Unlock()
			g.log.Debug("joined", "member", r.MemberID, "generation", r.Generation, "leader", r.LeaderID, "strategy", s)
			return r, s, nil
		case errors.Is(err, ErrMemberIDRequired):
			g.mu.Lock()
			g.memberID = r.MemberID
			g.mu.Unlock()
			continue
		}
		return nil, 0, fmt.Errorf("join group: %w", g.afterGroupErr(err))
	}
}

// chosen returns the strategy the coordinator picked.
func (g *GroupConsumer) chosen(r *kmsg.JoinGroupResponse) (AssignStrategy, error) {
	if r.ProtocolType != nil && *r.ProtocolType != consumerProtocol {
		return 0, &KafkaError{Code: ErrInconsistentGroupProtocol.Code, Message: "protocol type " + *r.ProtocolType}
	}
	if r.Protocol != nil {
		for _, s := range g.cfg.strategies {
			if s.String() == *r.Protocol {
				return s, nil
			}
		}
	}
	name := "none"
	if r.Protocol != nil {
		name = *r.Protocol
	}
	return 0, &KafkaError{Code: ErrInconsistentGroupProtocol.Code, Message: "coordinator chose strategy " + name}
}

// plan computes the group's assignment as its leader, from fresh metadata
// of every topic a member subscribes to (topics that do not exist are left
// out), and remembers the partition counts it used.
func (g *GroupConsumer) plan(r *kmsg.JoinGroupResponse, s AssignStrategy) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	members, err := parseMembers(r.Members)
	if err != nil {
		return nil, err
	}
	var topics []string
	for _, m := range members {
		topics = append(topics, m.topics...)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	g.cl.addInterest(topics...)
	ctx, cancel := context.WithTimeout(g.mctx, g.cfg.requestTimeout)
	err = g.cl.waitRefresh(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("metadata for the assignment: %w", err)
	}
	g.topics, g.counts = topics, g.partitionCounts(topics)
	out := []kmsg.SyncGroupRequestGroupAssignment{}
	for id, a := range assign(s, members, g.counts, s.cooperative()) {
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID, sa.MemberAssignment = id, encodeAssignment(a)
		out = append(out, sa)
	}
	slices.SortFunc(out, func(a, b kmsg.SyncGroupRequestGroupAssignment) int { return strings.Compare(a.MemberID, b.MemberID) })
	return out, nil
}

// partitionCounts returns the cached partition count of each topic that
// exists.
func (g *GroupConsumer) partitionCounts(topics []string) map[string]int32 {
	counts := map[string]int32{}
	for _, t := range topics {
		if n, ok := g.cl.knownPartitionCount(t); ok {
			counts[t] = int32(n)
		}
	}
	return counts
}

// sync sends SyncGroup (with the plan, as the leader) and returns this
// member's assignment.
func (g *GroupConsumer) sync(join *kmsg.JoinGroupResponse, plan []kmsg.SyncGroupRequestGroupAssignment) (map[string][]int32, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID, req.InstanceID = g.cfg.group, join.Generation, join.MemberID, g.instanceID
	req.ProtocolType, req.Protocol = kmsg.StringPtr(consumerProtocol), join.Protocol
	req.GroupAssignment = plan
	resp, err := g.coord.request(g.mctx, classGroup, req, g.cfg.rebalanceTimeout)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.SyncGroupResponse)
	if err := g.afterGroupErr(kafkaErr(r.ErrorCode, nil)); err != nil {
		return nil, fmt.Errorf("sync group: %w", err)
	}
	return decodeAssignment(r.MemberAssignment)
}

// afterGroupErr does what an error of a group request calls for and
// returns it: REBALANCE_IN_PROGRESS asks for a rejoin; UNKNOWN_MEMBER_ID
// (the coordinator dropped the member) and ILLEGAL_GENERATION (the group
// moved on without it) lose the owned partitions and ask for a rejoin, the
// first with a new member id; NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE
// make the next request find the coordinator again.
func (g *GroupConsumer) afterGroupErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrRebalanceInProgress):
		return fmt.Errorf("%w: %w", errRejoin, err)
	case errors.Is(err, ErrUnknownMemberID):
		g.lose(true)
		return fmt.Errorf("%w: %w", errRejoin, err)
	case errors.Is(err, ErrIllegalGeneration):
		g.lose(false)
		return fmt.Errorf("%w: %w", errRejoin, err)
	}
	g.coord.noteErr(err)
	return err
}

// adopt takes the assignment of a new generation: it revokes owned
// partitions that are not in it, then reads the committed offsets of the
// new ones, calls OnAssigned, and hands them to Poll. It reports whether
// partitions were revoked.
func (g *GroupConsumer) adopt(generation int32, assigned map[string][]int32) (bool, error) {
	want := map[tp]bool{}
	for t, ps := range assigned {
		for _, p := range ps {
			want[tp{t, p}] = true
		}
	}
	var revoked, added []tp
	for _, t := range g.ownedParts() {
		if !want[t] {
			revoked = append(revoked, t)
		}
	}
	g.mu.Lock()
	for t := range want {
		if g.owned[t] == nil {
			added = append(added, t)
		}
	}
	g.mu.Unlock()
	g.revoke(revoked, true)

	starts, err := g.startOffsets(added)
	if err != nil {
		return false, err
	}
	if len(added) > 0 && g.cfg.onAssigned != nil {
		g.cfg.onAssigned(g.mctx, byTopic(added))
	}
	g.mu.Lock()
	g.ownedGen = generation
	for _, t := range added {
		g.inc++
		committed := int64(-1)
		if starts[t].kind == offsetAt {
			committed = starts[t].at
		}
		g.owned[t] = &ownedPart{inc: g.inc, start: starts[t], consumed: committed, processed: committed,
			committed: committed, epoch: -1, procEpoch: -1}
	}
	if len(added) > 0 {
		g.wakeLocked()
	}
	g.mu.Unlock()
	g.log.Debug("assigned", "generation", generation, "added", len(added), "revoked", len(revoked))
	return len(revoked) > 0, nil
}

// startOffsets returns where each partition starts: its committed offset,
// or ConsumeResetOffset when the group has none.
func (g *GroupConsumer) startOffsets(parts []tp) (map[tp]Offset, error) {
	out := map[tp]Offset{}
	if len(parts) == 0 {
		return out, nil
	}
	var committed map[tp]committedOffset
	err := retryGroup(g.mctx, g.cfg, func(ctx context.Context) error {
		var err error
		committed, err = fetchCommitted(ctx, g.coord, g.cfg.group, byTopic(parts))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("committed offsets: %w", err)
	}
	for _, t := range parts {
		out[t] = g.cfg.resetOffset
		if c, ok := committed[t]; ok && c.offset >= 0 {
			out[t] = At(c.offset)
		}
	}
	return out, nil
}

// revoke gives up partitions cleanly: it waits (up to RebalanceTimeout)
// until the caller is done with what Poll returned, stops Poll returning
// their records, commits their positions (with AutoCommit and commit
// set), calls OnRevoked, and forgets them.
func (g *GroupConsumer) revoke(parts []tp, commit bool) {
	if len(parts) == 0 {
		return
	}
	g.awaitProcessed()
	if g.mctx.Err() != nil {
		return // Close: leave commits them and calls OnRevoked
	}
	offsets := map[tp]commitOffset{}
	g.mu.Lock()
	for _, t := range parts {
		if op := g.owned[t]; op != nil {
			op.inc = 0
			pos, epoch := op.processed, op.procEpoch
			if g.inPoll || !g.unprocessed || g.closed {
				pos, epoch = op.consumed, op.epoch
			}
			if pos >= 0 && pos != op.committed {
				offsets[t] = commitOffset{pos, epoch}
			}
		}
	}
	g.wakeLocked()
	g.mu.Unlock()
	if commit && g.cfg.autoCommit && len(offsets) > 0 {
		ctx, cancel := context.WithTimeout(g.mctx, g.cfg.requestTimeout)
		if err := g.commit(ctx, offsets); err != nil {
			g.log.Warn("commit before revoking failed", "err", err)
		}
		cancel()
	}
	if g.cfg.onRevoked != nil {
		g.cfg.onRevoked(g.mctx, byTopic(parts))
	}
	g.forgetParts(parts)
}

// awaitProcessed waits until the caller has come back to Poll after the
// records it last got (or is in Poll now), at most RebalanceTimeout: the
// role of Kafka's max.poll.interval.ms.
func (g *GroupConsumer) awaitProcessed() {
	deadline := time.NewTimer(g.cfg.rebalanceTimeout)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		ready := g.inPoll || !g.unprocessed || g.closed
		entered := g.pollEntered
		g.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-entered: // the caller called Poll: what it had is processed
		case <-deadline.C: // the caller did not come back in time
			g.log.Warn("Poll not called within the rebalance timeout; revoking anyway")
			return
		case <-g.mctx.Done(): // Close: it commits and revokes itself
			return
		}
	}
}

func (g *GroupConsumer) forgetParts(parts []tp) {
	g.mu.Lock()
	for _, t := range parts {
		delete(g.owned, t)
	}
	g.wakeLocked()
	g.mu.Unlock()
}

// lose drops the generation (and the member id with dropID) and every
// owned partition without committing: the coordinator no longer counts
// the member in, so another may own them already. It calls OnLost.
func (g *GroupConsumer) lose(dropID bool) {
	g.mu.Lock()
	g.generation, g.ownedGen = -1, -1
	if dropID {
		g.memberID = ""
	}
	lost := slices.Collect(maps.Keys(g.owned))
	for _, op := range g.owned {
		op.inc = 0
	}
	g.wakeLocked()
	g.mu.Unlock()
	if len(lost) == 0 {
		return
	}
	g.log.Info("partitions lost", "count", len(lost))
	if fn := firstCallback(g.cfg.onLost, g.cfg.onRevoked); fn != nil {
		fn(g.mctx, byTopic(lost))
	}
	g.forgetParts(lost)
}

func firstCallback(fns ...PartitionsCallback) PartitionsCallback {
	for _, fn := range fns {
		if fn != nil {
			return fn
		}
	}
	return nil
}

// fail ends the membership for good with a fatal error.
func (g *GroupConsumer) fail(err error) {
	g.mu.Lock()
	ge := &GroupError{Group: g.cfg.group, MemberID: g.memberID, InstanceID: g.cfg.instanceID, Err: err}
	g.mu.Unlock()
	g.log.Error("group membership ended", "err", err)
	g.lose(false)
	g.mu.Lock()
	g.fatal = ge
	g.wakeLocked()
	g.mu.Unlock()
}
