package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the membership of a share consumer: ShareGroupHeartbeat at
// the interval the coordinator sets. The coordinator assigns the
// partitions; unlike a consumer group there is nothing to revoke first,
// since the broker's record locks keep two members off the same record.

// shareBeatState is what the member goroutine keeps between heartbeats.
// Only that goroutine touches it.
type shareBeatState struct {
	epoch    int32
	interval time.Duration
	attempt  int // failed heartbeats in a row
}

// manage is the member goroutine: it heartbeats until Close cancels mctx
// or an error ends the membership.
func (s *ShareConsumer) manage() {
	defer close(s.done)
	st := &shareBeatState{interval: s.cfg.heartbeat}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.mctx.Done(): // Close: it leaves the group itself
			return
		case <-t.C: // time to heartbeat
			next, err := s.beat(st)
			if err != nil {
				s.mu.Lock()
				s.fatal = fmt.Errorf("share group %q: %w", s.cfg.share.group, err)
				s.mu.Unlock()
				s.signal()
				return
			}
			t.Reset(next)
		}
	}
}

// fatalShareErr reports whether a ShareGroupHeartbeat error ends the
// membership: a retry cannot fix it.
func fatalShareErr(err error) bool {
	var ke *KafkaError
	if errors.Is(err, ErrUnknownMemberID) || errors.Is(err, ErrFencedMemberEpoch) {
		return false
	}
	return errors.Is(err, ErrUnsupported) || (errors.As(err, &ke) && !ke.Retriable())
}

// beat sends one ShareGroupHeartbeat and handles its answer. It returns
// when to send the next, or an error that ends the membership.
func (s *ShareConsumer) beat(st *shareBeatState) (time.Duration, error) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = s.cfg.share.group, s.memberID, st.epoch
	req.SubscribedTopicNames = slices.Sorted(slices.Values(s.cfg.consumeTopics))
	resp, err := s.coord.request(s.mctx, classDefault, req, 0)
	var r *kmsg.ShareGroupHeartbeatResponse
	if err == nil {
		r = resp.(*kmsg.ShareGroupHeartbeatResponse)
		err = kafkaErr(r.ErrorCode, r.ErrorMessage)
	}
	switch {
	case err == nil:
		st.attempt = 0
		s.adoptBeat(st, r)
		return st.interval, nil
	case s.mctx.Err() != nil:
		return 0, nil
	case errors.Is(err, ErrUnknownMemberID) || errors.Is(err, ErrFencedMemberEpoch):
		// The coordinator dropped us: join again at epoch 0 with the
		// same id. Records still held go back when their locks end.
		s.cfg.logger.Info("share member fenced; rejoining", "group", s.cfg.share.group, "err", err)
		st.epoch, st.attempt = 0, 0
		s.setAssignment(0, map[tp]bool{})
		return 0, nil
	case fatalShareErr(err):
		return 0, fmt.Errorf("share group heartbeat: %w", shareUnsupported("ShareGroupHeartbeat", err))
	}
	s.coord.noteErr(err)
	st.attempt++
	s.cfg.logger.Debug("share group heartbeat failed, retrying", "err", err, "attempt", st.attempt)
	return backoff(s.cfg, st.attempt), nil
}

// adoptBeat takes a successful answer: epoch, interval, and the
// assignment if it carries one.
func (s *ShareConsumer) adoptBeat(st *shareBeatState, r *kmsg.ShareGroupHeartbeatResponse) {
	st.epoch = r.MemberEpoch
	if r.HeartbeatIntervalMillis > 0 {
		st.interval = time.Duration(r.HeartbeatIntervalMillis) * time.Millisecond
	}
	if r.Assignment == nil {
		s.mu.Lock()
		s.epoch = r.MemberEpoch
		s.mu.Unlock()
		return
	}
	ids := map[[16]byte][]int32{}
	for _, t := range r.Assignment.TopicPartitions {
		ids[t.TopicID] = append(ids[t.TopicID], t.Partitions...)
	}
	assigned := map[tp]bool{}
	for try := 0; try < 2; try++ {
		names := s.cl.topicNames()
		missing := false
		for id, ps := range ids {
			name, ok := names[id]
			if !ok {
				missing = true
				continue
			}
			for _, p := range ps {
				assigned[tp{name, p}] = true
			}
		}
		if !missing {
			break
		}
		ctx, cancel := context.WithTimeout(s.mctx, s.cfg.requestTimeout)
		_ = s.cl.waitRefresh(ctx) // an id still unknown is taken with the next assignment
		cancel()
	}
	s.setAssignment(r.MemberEpoch, assigned)
}

// setAssignment records the member epoch and assignment, and wakes Poll.
func (s *ShareConsumer) setAssignment(epoch int32, assigned map[tp]bool) {
	s.mu.Lock()
	s.epoch, s.assigned = epoch, assigned
	s.mu.Unlock()
	s.signal()
}

// leave sends the leaving heartbeat of Close (epoch -1).
func (s *ShareConsumer) leave(ctx context.Context) error {
	return retryGroup(ctx, s.cfg, func(ctx context.Context) error {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = s.cfg.share.group, s.memberID, epochLeave
		resp, err := s.coord.request(ctx, classDefault, req, 0)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ShareGroupHeartbeatResponse)
		err = kafkaErr(r.ErrorCode, r.ErrorMessage)
		s.coord.noteErr(err)
		return err
	})
}
