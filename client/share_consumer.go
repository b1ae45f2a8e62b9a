package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// This file is the share consumer of KIP-932 (Kafka's KafkaShareConsumer):
// a member of a share group, whose partitions several members read at
// once. The broker hands each record to one member at a time (it
// acquires the record for that member under a time lock); the member
// acknowledges it (accept, release, reject), and released or timed-out
// records go to some member again with a higher delivery count.

// Share-group error codes the share consumer acts on.
var (
	ErrUnknownTopicID           = &KafkaError{Code: 100}
	ErrInvalidRecordState       = &KafkaError{Code: 121}
	ErrShareSessionNotFound     = &KafkaError{Code: 122}
	ErrInvalidShareSessionEpoch = &KafkaError{Code: 123}
)

// ShareRecord is a record a ShareConsumer delivers: the record, and how
// many times the group has delivered it (1 the first time).
type ShareRecord struct {
	Record
	DeliveryCount int16
}

// ackKey names one delivered record.
type ackKey struct {
	tp     tp
	offset int64
}

// sessKey names one share session: the broker and which opening of the
// session on it (gen). Acknowledgements are only good in the session the
// record was acquired in.
type sessKey struct {
	node int32
	gen  uint64
}

// ShareConsumer is a member of a share group. Create it with
// NewShareConsumer; call Poll in a loop from one goroutine, acknowledge
// what it returns (or not: then Poll accepts it all), and Close it when
// done. Acknowledge, CommitAsync and Close may be called from other
// goroutines; Poll, CommitSync and Close are serialized.
type ShareConsumer struct {
	cfg      *config
	cl       *cluster
	coord    *coordinator
	memberID string // made by the client, as KIP-932 requires; never changes

	mctx    context.Context // ends the member goroutine
	mcancel context.CancelFunc
	done    chan struct{} // closed when the member goroutine returned
	wake    chan struct{} // capacity 1: the assignment changed, or Close began
	closing chan struct{} // closed by Close: a waiting Poll returns

	pollMu   sync.Mutex              // serializes Poll, CommitSync and Close, which own sessions
	sessions map[int32]*shareSession // by broker; guarded by pollMu

	mu        sync.Mutex // guards the fields below
	assigned  map[tp]bool
	epoch     int32 // member epoch; 0 until joined
	fatal     error // ends the membership: Poll returns it
	closed    bool
	delivered map[ackKey]sessKey                // returned by the last Poll, not acknowledged yet
	explicit  bool                              // the caller acknowledged some of them
	pending   map[sessKey]map[tp]map[int64]int8 // acknowledgements not sent yet
}

// NewShareConsumer validates the options (ShareGroup and ConsumeTopics
// are required) and starts joining the share group in the background.
func NewShareConsumer(opts ...Opt) (*ShareConsumer, error) {
	cfg, err := newConfig(shareOpt, opts)
	if err != nil {
		return nil, err
	}
	cl := newCluster(cfg)
	cl.addInterest(cfg.consumeTopics...)
	s := &ShareConsumer{
		cfg: cfg, cl: cl, coord: newCoordinator(cl, cfg.share.group), memberID: newMemberID(),
		done: make(chan struct{}), wake: make(chan struct{}, 1), closing: make(chan struct{}),
		sessions: map[int32]*shareSession{}, assigned: map[tp]bool{},
		delivered: map[ackKey]sessKey{}, pending: map[sessKey]map[tp]map[int64]int8{},
	}
	s.mctx, s.mcancel = context.WithCancel(context.Background())
	go s.manage()
	return s, nil
}

// MemberID is the member's id in the group, and its member epoch (0
// until the coordinator has taken it in).
func (s *ShareConsumer) MemberID() (string, int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memberID, s.epoch
}

// Assigned returns the partitions the group assigns to this member, by
// topic, each sorted.
func (s *ShareConsumer) Assigned() map[string][]int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := make([]tp, 0, len(s.assigned))
	for t := range s.assigned {
		parts = append(parts, t)
	}
	return byTopic(parts)
}

// Acknowledge acknowledges one record the last Poll returned. Once the
// caller acknowledges any record of a Poll, it must acknowledge each of
// them before the next Poll (ErrUnacknowledged otherwise); acknowledging
// none accepts them all. The acknowledgements go to the broker with the
// next ShareFetch (Poll), or at once with CommitSync. A record not
// returned by the last Poll, or acknowledged already, gives
// ErrNotDelivered; after Close, ErrClosed.
func (s *ShareConsumer) Acknowledge(rec *ShareRecord, kind AckKind) error {
	if kind != AckAccept && kind != AckRelease && kind != AckReject {
		return fmt.Errorf("client: acknowledge: unknown kind %d: %w", kind, ErrInvalidConfig)
	}
	key := ackKey{tp{rec.Topic, rec.Partition}, rec.Offset}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	sk, ok := s.delivered[key]
	if !ok {
		return fmt.Errorf("acknowledge %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, ErrNotDelivered)
	}
	delete(s.delivered, key)
	s.explicit = true
	s.addPendingLocked(sk, key, int8(kind))
	return nil
}

// addPendingLocked queues one acknowledgement. Called with mu.
func (s *ShareConsumer) addPendingLocked(sk sessKey, key ackKey, kind int8) {
	byTP := s.pending[sk]
	if byTP == nil {
		byTP = map[tp]map[int64]int8{}
		s.pending[sk] = byTP
	}
	if byTP[key.tp] == nil {
		byTP[key.tp] = map[int64]int8{}
	}
	byTP[key.tp][key.offset] = kind
}

// finalize settles the records of the last Poll: when the caller
// acknowledged none of them they are accepted (implicit mode). With some
// acknowledged and others not, forPoll makes it ErrUnacknowledged; a
// commit sends what is acknowledged and leaves the rest.
func (s *ShareConsumer) finalize(forPoll bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.delivered) == 0 {
		return nil
	}
	if s.explicit {
		if forPoll {
			return fmt.Errorf("%d records: %w", len(s.delivered), ErrUnacknowledged)
		}
		return nil
	}
	for key, sk := range s.delivered {
		s.addPendingLocked(sk, key, int8(AckAccept))
	}
	clear(s.delivered)
	return nil
}

// CommitAsync settles the records of the last Poll (accepting them all if
// none was acknowledged) without waiting: the acknowledgements go with
// the next ShareFetch, and their outcome to OnShareAcknowledged.
func (s *ShareConsumer) CommitAsync() {
	_ = s.finalize(false)
}

// CommitSync settles the records of the last Poll as CommitAsync does,
// sends every pending acknowledgement at once (ShareAcknowledge) and
// waits for the outcome: per partition, nil or why the broker did not
// take it. The error joins the partitions' failures, or says why no
// request could be sent.
func (s *ShareConsumer) CommitSync(ctx context.Context) (map[TopicPartition]error, error) {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if s.isClosed() {
		return nil, ErrClosed
	}
	_ = s.finalize(false)
	results := s.acknowledgeAll(ctx, false)
	return results, joinAckErrs(results)
}

// joinAckErrs joins the failures of an acknowledgement's results.
func joinAckErrs(results map[TopicPartition]error) error {
	var errs []error
	for t, err := range results {
		if err != nil {
			errs = append(errs, fmt.Errorf("acknowledge %s[%d]: %w", t.Topic, t.Partition, err))
		}
	}
	return errors.Join(errs...)
}

// usable returns ErrClosed after Close, or the error that ended the
// membership.
func (s *ShareConsumer) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.fatal
}

func (s *ShareConsumer) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// signal wakes a Poll waiting for an assignment.
func (s *ShareConsumer) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close leaves the share group: it settles the last Poll's records as
// CommitSync does, closes every share session (ShareAcknowledge with
// epoch -1, carrying the pending acknowledgements; the broker releases
// what this member still holds), stops the member goroutine, sends the
// leaving heartbeat (epoch -1), and releases connections. ctx bounds it.
func (s *ShareConsumer) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	joined := s.epoch > 0 && s.fatal == nil
	s.mu.Unlock()
	close(s.closing)
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	_ = s.finalize(false)
	err := joinAckErrs(s.acknowledgeAll(ctx, true))
	s.mcancel()
	<-s.done
	if joined {
		if lerr := s.leave(ctx); lerr != nil {
			err = errors.Join(err, fmt.Errorf("leaving share group %q: %w", s.cfg.share.group, lerr))
		}
	}
	s.cl.close()
	return err
}

// Poll returns the next records acquired for this member, waiting until
// there are some or ctx ends (then it returns ctx's error; a fetch
// already sent is waited for, its wait cut to ctx's deadline, so that no
// acquired record is lost to a cancelled request). First it
// settles the records of the previous Poll (see Acknowledge); their
// acknowledgements go with the fetches. Records come in offset order per
// partition. Errors that end the membership (the group id belongs to a
// consumer group, the cluster does not serve share groups, an
// authorization failure) are returned by every call.
func (s *ShareConsumer) Poll(ctx context.Context) ([]*ShareRecord, error) {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if err := s.finalize(true); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if err := s.usable(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		recs, progress, err := s.fetchRound(ctx)
		if len(recs) > 0 || err != nil {
			return recs, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if progress {
			attempt = 0
			continue
		}
		// Nothing could be asked: no assignment yet, or no leader known.
		t := time.NewTimer(backoff(s.cfg, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-s.closing:
			t.Stop()
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}
