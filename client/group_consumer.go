package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the member of a KIP-848 group (GroupProtocolConsumer). The
// coordinator computes the assignment; the member heartbeats with
// ConsumerGroupHeartbeat at the interval the coordinator returns, reports
// the partitions it owns, and reconciles towards the target assignment the
// coordinator sends: it first gives up what it no longer has (stops
// fetching, commits, OnRevoked), then takes what is new (committed
// offsets, OnAssigned), and the next heartbeat acknowledges both. The
// member epoch stands in for the classic generation: commits carry it
// (OffsetCommit v9), and Member reports it.

// Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	epochJoin        = 0  // (re)join the group
	epochLeave       = -1 // a dynamic member leaves
	epochStaticLeave = -2 // a static member leaves; its place waits for it
)

// memberState is what the member goroutine of a KIP-848 member keeps
// between heartbeats. Only that goroutine touches it.
type memberState struct {
	epoch    int32         // the member epoch to send: 0 to (re)join
	interval time.Duration // heartbeat interval the coordinator gave
	attempt  int           // failed heartbeats in a row

	target    map[[16]byte][]int32 // latest target assignment, by topic id
	targetSeq uint64               // bumped when the target changes
	doneSeq   uint64               // the target a finished (or running) reconciliation worked on
	running   chan bool            // non-nil while a reconciliation runs; gets whether it completed
}

// manageConsumer is the member goroutine of a KIP-848 member: it
// heartbeats, reconciles and auto-commits until Close cancels mctx or a
// fatal error ends the membership.
func (g *GroupConsumer) manageConsumer() {
	defer close(g.done)
	s := &memberState{interval: g.cfg.heartbeat}
	defer s.wait()
	g.mu.Lock()
	g.memberID = newMemberID()
	g.mu.Unlock()
	hb := time.NewTimer(0)
	defer hb.Stop()
	var autoC <-chan time.Time
	if g.cfg.autoCommit {
		t := time.NewTicker(g.cfg.autoCommitEvery)
		defer t.Stop()
		autoC = t.C
	}
	for {
		select {
		case <-g.mctx.Done(): // Close: it commits, revokes and leaves itself
			return
		case <-g.rejoin: // a commit found the member unknown or fenced: ask the coordinator now
			hb.Reset(0)
		case <-autoC: // auto-commit what the caller has processed
			_ = g.autoCommit()
		case complete := <-s.running: // a reconciliation ended: acknowledge it at once
			s.running = nil
			if !complete {
				s.doneSeq-- // not every topic could be resolved: try again
			}
			g.startReconcile(s)
			hb.Reset(0)
		case <-hb.C: // time to heartbeat
			next, err := g.consumerBeat(s)
			if err != nil {
				s.wait()
				g.fail(err)
				return
			}
			hb.Reset(next)
		}
	}
}

// wait waits for a running reconciliation to end.
func (s *memberState) wait() {
	if s.running != nil {
		<-s.running
		s.running = nil
	}
}

// newMemberID makes a member id as Kafka's clients do (KIP-1082): a
// random UUID in URL-safe base64.
func newMemberID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// fatalConsumerErr reports whether a ConsumerGroupHeartbeat error ends
// the membership for good, as it does in Kafka's consumer.
func fatalConsumerErr(err error) bool {
	for _, fatal := range []error{ErrUnreleasedInstanceID, ErrUnsupportedAssignor, ErrInvalidRequest,
		ErrUnsupportedVersion, ErrGroupIDNotFound} {
		if errors.Is(err, fatal) {
			return true
		}
	}
	var ke *KafkaError
	return fatalGroupErr(err) || (errors.As(err, &ke) && !ke.Retriable() && !errors.Is(err, ErrUnknownMemberID) && !errors.Is(err, ErrFencedMemberEpoch))
}

// consumerBeat sends one ConsumerGroupHeartbeat and handles its answer.
// It returns when to send the next, or a fatal error.
func (g *GroupConsumer) consumerBeat(s *memberState) (time.Duration, error) {
	req := g.beatRequest(s.epoch)
	resp, err := g.coord.request(g.mctx, classDefault, req, 0)
	var r *kmsg.ConsumerGroupHeartbeatResponse
	if err == nil {
		r = resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		err = kafkaErr(r.ErrorCode, r.ErrorMessage)
	}
	switch {
	case err == nil:
		s.attempt = 0
		g.adoptBeat(s, r)
		return s.interval, nil
	case g.mctx.Err() != nil:
		return 0, nil
	case errors.Is(err, ErrFencedMemberEpoch):
		g.fenced(s, false)
		return 0, nil
	case errors.Is(err, ErrUnknownMemberID):
		g.fenced(s, true)
		return 0, nil
	case fatalConsumerErr(err):
		return 0, fmt.Errorf("consumer group heartbeat: %w", err)
	}
	g.coord.noteErr(err)
	s.attempt++
	g.log.Debug("consumer group heartbeat failed, retrying", "err", err, "attempt", s.attempt)
	return backoff(g.cfg, s.attempt), nil
}

// beatRequest builds a full heartbeat: subscription, server assignor and
// owned partitions every time (the coordinator takes an unchanged field
// as a no-op), none owned when joining.
func (g *GroupConsumer) beatRequest(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	g.mu.Lock()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = g.cfg.group, g.memberID, epoch, g.instanceID
	owned := byTopic(slices.Collect(maps.Keys(g.owned)))
	g.mu.Unlock()
	req.RebalanceTimeoutMillis = int32(g.cfg.rebalanceTimeout / time.Millisecond)
	req.SubscribedTopicNames = slices.Sorted(slices.Values(g.cfg.consumeTopics))
	if g.cfg.remoteAssignor != "" {
		req.ServerAssignor = kmsg.StringPtr(g.cfg.remoteAssignor)
	}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if epoch == epochJoin {
		return req
	}
	for _, topic := range slices.Sorted(maps.Keys(owned)) {
		tm, ok := g.cl.topic(topic)
		if !ok {
			continue
		}
		rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		rt.TopicID, rt.Partitions = tm.id, owned[topic]
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// adoptBeat takes a successful answer: member id and epoch, heartbeat
// interval, and a new target assignment if it carries one.
func (g *GroupConsumer) adoptBeat(s *memberState, r *kmsg.ConsumerGroupHeartbeatResponse) {
	g.mu.Lock()
	if r.MemberID != nil && *r.MemberID != "" {
		g.memberID = *r.MemberID
	}
	g.generation = r.MemberEpoch
	g.mu.Unlock()
	if s.epoch != r.MemberEpoch {
		g.log.Debug("member epoch", "epoch", r.MemberEpoch)
	}
	s.epoch = r.MemberEpoch
	if r.HeartbeatIntervalMillis > 0 {
		s.interval = time.Duration(r.HeartbeatIntervalMillis) * time.Millisecond
	}
	if r.Assignment == nil {
		return
	}
	target := map[[16]byte][]int32{}
	for _, t := range r.Assignment.Topics {
		target[t.TopicID] = slices.Sorted(slices.Values(t.Partitions))
	}
	if !maps.EqualFunc(target, s.target, slices.Equal) || s.target == nil {
		s.target = target
		s.targetSeq++
	}
	g.startReconcile(s)
}

// startReconcile starts reconciling towards the latest target, unless a
// reconciliation is running (it starts again when that one ends) or the
// target was reconciled already.
func (g *GroupConsumer) startReconcile(s *memberState) {
	if s.running != nil || s.target == nil || s.doneSeq == s.targetSeq {
		return
	}
	s.doneSeq = s.targetSeq
	target, epoch := maps.Clone(s.target), s.epoch
	done := make(chan bool, 1)
	s.running = done
	go func() { done <- g.reconcile(epoch, target) }()
}

// reconcile moves the owned partitions to target: revoked ones first,
// then the new ones (adopt). It reports whether it got every topic: a
// topic id that metadata does not resolve yet is left for a later try.
func (g *GroupConsumer) reconcile(epoch int32, target map[[16]byte][]int32) bool {
	assigned, complete := g.resolveTopics(target)
	if _, err := g.adopt(epoch, assigned); err != nil {
		if g.mctx.Err() == nil {
			g.log.Warn("taking the assignment failed", "err", err)
		}
		return false
	}
	return complete
}

// resolveTopics names the topics of an assignment from cached metadata,
// refreshing it once when an id is unknown.
func (g *GroupConsumer) resolveTopics(target map[[16]byte][]int32) (map[string][]int32, bool) {
	for try := 0; ; try++ {
		names := g.cl.topicNames()
		out := map[string][]int32{}
		missing := 0
		for id, ps := range target {
			if name, ok := names[id]; ok {
				out[name] = ps
			} else {
				missing++
			}
		}
		if missing == 0 || try > 0 {
			return out, missing == 0
		}
		ctx, cancel := context.WithTimeout(g.mctx, g.cfg.requestTimeout)
		_ = g.cl.waitRefresh(ctx)
		cancel()
	}
}

// fenced handles FENCED_MEMBER_EPOCH (newID false) and UNKNOWN_MEMBER_ID
// (newID true) as Kafka's consumer does: once a running reconciliation
// ends, every owned partition is lost (no commit: another member may own
// it already, OnLost), and the member joins again with epoch 0, under
// the same member id when fenced and a new one when unknown.
func (g *GroupConsumer) fenced(s *memberState, newID bool) {
	g.log.Info("member fenced; rejoining", "unknown", newID)
	s.wait()
	g.lose(newID)
	if newID {
		g.mu.Lock()
		g.memberID = newMemberID()
		g.mu.Unlock()
	}
	s.epoch, s.target, s.attempt = epochJoin, nil, 0
	s.doneSeq = s.targetSeq
}

// leaveConsumer sends the leaving heartbeat of Close: epoch -1, or -2 for
// a static member, whose place then waits for it.
func (g *GroupConsumer) leaveConsumer(ctx context.Context, member string) error {
	epoch := int32(epochLeave)
	if g.instanceID != nil {
		epoch = epochStaticLeave
	}
	return retryGroup(ctx, g.cfg, func(ctx context.Context) error {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = g.cfg.group, member, epoch, g.instanceID
		resp, err := g.coord.request(ctx, classDefault, req, 0)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		err = kafkaErr(r.ErrorCode, r.ErrorMessage)
		g.coord.noteErr(err)
		return err
	})
}
