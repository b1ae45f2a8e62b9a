package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeatLoop keeps a generation alive: it heartbeats every
// HeartbeatInterval, auto-commits every AutoCommitInterval, and watches
// metadata as the leader. It returns why the generation ended: errRejoin
// (wrapped) for a rebalance, a fatal error, or mctx's error on Close.
func (g *GroupConsumer) heartbeatLoop() error {
	hb := time.NewTimer(g.cfg.heartbeat)
	defer hb.Stop()
	var autoC <-chan time.Time
	if g.cfg.autoCommit {
		t := time.NewTicker(g.cfg.autoCommitEvery)
		defer t.Stop()
		autoC = t.C
	}
	lastOK := time.Now()
	attempt := 0
	for {
		select {
		case <-g.mctx.Done(): // Close: it commits, revokes and leaves itself
			return g.mctx.Err()
		case n := <-g.rejoin: // a commit found the generation gone or a rebalance under way
			if _, gen := g.Member(); n.gen == gen {
				return g.afterGroupErr(n.err)
			}
		case <-g.meta: // metadata refreshed: the leader rebalances when a partition count changed
			if g.leader && !maps.Equal(g.counts, g.partitionCounts(g.topics)) {
				g.log.Info("partition counts changed; rebalancing")
				return errRejoin
			}
		case <-autoC: // auto-commit what the caller has processed
			if err := g.autoCommit(); errors.Is(err, errRejoin) || fatalGroupErr(err) {
				return err
			}
		case <-hb.C: // time to heartbeat
			err := g.heartbeat()
			switch {
			case err == nil:
				lastOK, attempt = time.Now(), 0
				hb.Reset(g.cfg.heartbeat)
			case errors.Is(err, errRejoin) || fatalGroupErr(err):
				return err
			case !IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded):
				return err
			case time.Since(lastOK) >= g.cfg.sessionTimeout:
				// The coordinator has dropped the member by now.
				g.lose(true)
				return fmt.Errorf("%w: no heartbeat answered within the session timeout (last error: %w)", errRejoin, err)
			default:
				attempt++
				hb.Reset(backoff(g.cfg, attempt))
			}
		}
	}
}

// heartbeat sends one Heartbeat and handles its answer (afterGroupErr).
func (g *GroupConsumer) heartbeat() error {
	req := kmsg.NewPtrHeartbeatRequest()
	g.mu.Lock()
	req.Group, req.Generation, req.MemberID, req.InstanceID = g.cfg.group, g.generation, g.memberID, g.instanceID
	g.mu.Unlock()
	resp, err := g.coord.request(g.mctx, classDefault, req, 0)
	if err != nil {
		return err
	}
	return g.afterGroupErr(kafkaErr(resp.(*kmsg.HeartbeatResponse).ErrorCode, nil))
}

// autoCommit commits, once, the positions the caller has processed.
// Failures wait for the next interval; those that call for a rejoin are
// returned as such.
func (g *GroupConsumer) autoCommit() error {
	offsets := g.positions(func(op *ownedPart) (int64, int32) { return op.processed, op.procEpoch })
	if len(offsets) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(g.mctx, g.cfg.requestTimeout)
	defer cancel()
	err := g.commit(ctx, offsets)
	if err == nil {
		return nil
	}
	g.log.Debug("auto-commit failed", "err", err)
	return g.afterGroupErr(err)
}

// positions returns the positions pos picks of the owned partitions, where
// known and not committed yet.
func (g *GroupConsumer) positions(pos func(*ownedPart) (int64, int32)) map[tp]commitOffset {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[tp]commitOffset{}
	for t, op := range g.owned {
		if off, epoch := pos(op); off >= 0 && off != op.committed {
			out[t] = commitOffset{off, epoch}
		}
	}
	return out
}

// leave ends the membership for Close, on its goroutine once the member
// goroutine has returned: it commits everything Poll returned (with
// AutoCommit), calls OnRevoked, and sends LeaveGroup unless the member is
// static. Nothing is committed or left after a fatal error.
func (g *GroupConsumer) leave(ctx context.Context) error {
	g.mu.Lock()
	fatal, member, gen := g.fatal, g.memberID, g.generation
	g.mu.Unlock()
	if fatal != nil {
		return nil
	}
	var firstErr error
	if offsets := g.positions(func(op *ownedPart) (int64, int32) { return op.consumed, op.epoch }); g.cfg.autoCommit && gen >= 0 && len(offsets) > 0 {
		firstErr = retryGroup(ctx, g.cfg, func(ctx context.Context) error { return g.commit(ctx, offsets) })
		if firstErr != nil {
			firstErr = fmt.Errorf("commit on close: %w", firstErr)
		}
	}
	parts := g.ownedParts()
	if len(parts) > 0 && g.cfg.onRevoked != nil {
		g.cfg.onRevoked(ctx, byTopic(parts))
	}
	g.forgetParts(parts)
	if g.cfg.groupProtocol == GroupProtocolConsumer {
		if gen < 0 {
			return firstErr // never joined, or fenced: nothing to leave
		}
		if err := g.leaveConsumer(ctx, member); err != nil && !errors.Is(err, ErrUnknownMemberID) && firstErr == nil {
			firstErr = fmt.Errorf("leave group: %w", err)
		}
		return firstErr
	}
	if member == "" || g.instanceID != nil {
		return firstErr
	}
	err := retryGroup(ctx, g.cfg, func(ctx context.Context) error {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = g.cfg.group, member // v0-2
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.Reason = member, kmsg.StringPtr("the consumer is closing") // v3+
		req.Members = []kmsg.LeaveGroupRequestMember{m}
		resp, err := g.coord.request(ctx, classDefault, req, 0)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.LeaveGroupResponse)
		err = kafkaErr(r.ErrorCode, nil)
		for _, rm := range r.Members {
			if err == nil {
				err = kafkaErr(rm.ErrorCode, nil)
			}
		}
		g.coord.noteErr(err)
		return err
	})
	if err != nil && !errors.Is(err, ErrUnknownMemberID) && firstErr == nil {
		firstErr = fmt.Errorf("leave group: %w", err) // UNKNOWN_MEMBER_ID: already gone
	}
	return firstErr
}
