package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/metadata"
)

// MemberConfig describes one consumer-group member.
type MemberConfig struct {
	Brokers []string // seed brokers; required
	Group   string   // required
	Topic   string   // required
	Name    string   // the member's name in the history (and its client id); required
	Round   int      // the round of members it belongs to
	// ServerSide makes the member use KIP-848 (kgo.ServerSideBalancer):
	// the coordinator assigns, and the session and heartbeat settings are
	// the broker's.
	ServerSide bool
	// Logger, if set, receives the client's log (kgo.WithLogger).
	Logger kgo.Logger
	// Opts are more client options, applied after the member's own (a
	// test's hooks).
	Opts []kgo.Opt
}

// Member is one franz-go group consumer in the test process. It commits
// by hand, synchronously, after each poll and when partitions are revoked,
// and records in a GroupHistory every assignment, revocation, loss, record
// delivered and commit acknowledged. Polls and rebalances exclude each
// other (kgo.BlockRebalanceOnPoll), so a member never commits across a
// rebalance. Stop it with Close.
type Member struct {
	cfg    MemberConfig
	h      *GroupHistory
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{} // closed when the poll loop has returned

	mu      sync.Mutex      // guards pending and errs
	pending map[int32]int64 // by owned partition: the offset to commit (delivered, not yet committed)
	errs    errCounts       // errors seen, by class
}

// commitTimeout bounds one synchronous commit; kgo retries it within.
const commitTimeout = 15 * time.Second

// StartMember joins cfg.Group and starts the member's poll loop.
func StartMember(cfg MemberConfig, h *GroupHistory) (*Member, error) {
	if len(cfg.Brokers) == 0 || cfg.Group == "" || cfg.Topic == "" || cfg.Name == "" {
		return nil, errors.New("e2e: MemberConfig needs Brokers, Group, Topic and Name")
	}
	m := &Member{cfg: cfg, h: h, done: make(chan struct{}), pending: map[int32]int64{}, errs: errCounts{}}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.Name),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		// Kafka's smallest session timeout; heartbeats often enough that a
		// coordinator failover does not expire a live member.
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
	}
	if cfg.ServerSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(cfg.Logger))
	}
	opts = append(opts, cfg.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(ctx)
	return m, nil
}

// pollWait bounds one poll, so that a member retries its pending commits
// even when nothing new arrives.
const pollWait = 500 * time.Millisecond

// loop polls, records what it got, commits it, and allows rebalances,
// until ctx ends.
func (m *Member) loop(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, pollWait)
		fs := m.cl.PollFetches(pctx)
		cancel()
		if fs.IsClientClosed() {
			m.cl.AllowRebalance()
			return
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				m.noteErr("fetch", fe.Err)
			}
			if coordinatorUnreachable(fe.Err) {
				m.cl.ForceMetadataRefresh()
			}
		}
		m.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			m.h.Delivered(m.cfg.Round, m.cfg.Name, r.Partition, r.Offset, r.Value)
			m.pending[r.Partition] = r.Offset + 1
		})
		m.mu.Unlock()
		m.commit(nil)
		m.cl.AllowRebalance()
	}
}

// coordinatorUnreachable reports whether err is the client saying that
// its group session fails because the coordinator it has cached cannot be
// dialled. franz-go v1.22.3 does not look a KIP-848 group's coordinator up
// again after a failed dial (the Java consumer's KAFKA-17293): a member
// that joined through a coordinator killed before its OffsetFetch retries
// the dead address in a loop until the new coordinator's session timeout
// fences it. A metadata refresh that no longer lists the dead node makes
// the client find the new coordinator, as the Java consumer does at once.
func coordinatorUnreachable(err error) bool {
	if _, ok := errors.AsType[*kgo.ErrGroupSession](err); !ok {
		return false
	}
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// commit commits, synchronously, the pending offsets of ps (nil: of every
// partition), and records each one the coordinator acknowledged.
func (m *Member) commit(ps []int32) {
	m.mu.Lock()
	offs := map[int32]kgo.EpochOffset{}
	for p, o := range m.pending {
		if ps == nil || slices.Contains(ps, p) {
			offs[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	m.mu.Unlock()
	if len(offs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	sent := time.Now()
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{m.cfg.Topic: offs},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				m.noteErr("commit", err)
				return
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					o, ok := offs[p.Partition]
					if t.Topic != m.cfg.Topic || !ok {
						continue
					}
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						m.noteErrLocked("commit", err)
						continue
					}
					m.h.Committed(m.cfg.Round, m.cfg.Name, p.Partition, o.Offset, sent)
					if m.pending[p.Partition] == o.Offset {
						delete(m.pending, p.Partition)
					}
				}
			}
		})
}

func (m *Member) generation(cl *kgo.Client) int32 {
	_, gen := cl.GroupMetadata()
	return gen
}

func (m *Member) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	if ps := assigned[m.cfg.Topic]; len(ps) > 0 {
		m.h.Assigned(m.cfg.Round, m.cfg.Name, m.generation(cl), ps)
	}
}

// onRevoked commits what the member read of the revoked partitions before
// giving them up, as Kafka asks of manual committers.
func (m *Member) onRevoked(_ context.Context, cl *kgo.Client, revoked map[string][]int32) {
	ps := revoked[m.cfg.Topic]
	if len(ps) == 0 {
		return
	}
	m.commit(ps)
	m.drop(ps)
	m.h.Revoked(m.cfg.Round, m.cfg.Name, m.generation(cl), ps)
}

// onLost forgets the lost partitions: a commit would be refused.
func (m *Member) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	ps := lost[m.cfg.Topic]
	if len(ps) == 0 {
		return
	}
	m.drop(ps)
	m.h.Lost(m.cfg.Round, m.cfg.Name, m.generation(cl), ps)
}

func (m *Member) drop(ps []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		delete(m.pending, p)
	}
}

func (m *Member) noteErr(op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteErrLocked(op, err)
}

func (m *Member) noteErrLocked(op string, err error) { m.errs.note(op, err) }

// Errors returns the errors the member saw, counted by operation and
// class, as sorted "op:class=count" strings.
func (m *Member) Errors() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs.sorted()
}

// FirstErrors is the first error of each class the member saw, whole, one
// per line.
func (m *Member) FirstErrors() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs.firsts()
}

// GroupSessionFailing is the longest time the member's client reported its
// group session failing without a pause of burstGap (kgo injects an
// ErrGroupSession fetch error every few failed heartbeat sessions), and
// that error's class.
func (m *Member) GroupSessionFailing() (time.Duration, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs.longestBurst("fetch", "group session: ")
}

// Name is the member's name.
func (m *Member) Name() string { return m.cfg.Name }

// Close stops the poll loop, leaves the group (committing what is pending
// on revocation; bounded by ctx) and closes the client.
func (m *Member) Close(ctx context.Context) error {
	m.cancel()
	<-m.done
	m.cl.AllowRebalance()
	err := m.cl.LeaveGroupContext(ctx)
	m.cl.Close()
	return err
}

// GroupCoordinator waits until every running, unpaused node answers
// FindCoordinator for group with the same running node, and returns it.
func (c *Cluster) GroupCoordinator(ctx context.Context, group string) (int, error) {
	return c.coordinator(ctx, coordinatorGroup, group)
}

// FindCoordinator key types.
const (
	coordinatorGroup int8 = 0
	coordinatorTxn   int8 = 1
)

// coordinator waits until every running, unpaused node answers
// FindCoordinator for key of keyType with the same running node, and
// returns it.
func (c *Cluster) coordinator(ctx context.Context, keyType int8, key string) (int, error) {
	var coord int
	err := poll(ctx, fmt.Sprintf("coordinator of %s (key type %d)", key, keyType), func() (bool, error) {
		running := c.Running()
		coord = -1
		for _, id := range running {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(3)
			req.CoordinatorKey = key
			req.CoordinatorType = keyType
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := Request(rctx, c.nodes[id-1].KafkaAddr, req)
			cancel()
			if err != nil {
				return false, nil
			}
			r := resp.(*kmsg.FindCoordinatorResponse)
			n := int(r.NodeID)
			if r.ErrorCode != 0 || !slices.Contains(running, n) || (coord >= 0 && n != coord) {
				return false, nil
			}
			coord = n
		}
		return coord >= 0, nil
	})
	return coord, err
}

// OffsetsPartitionLeader returns the partition of __consumer_offsets that
// holds group and its leader, as every running node agrees (Leaders).
func (c *Cluster) OffsetsPartitionLeader(ctx context.Context, group string) (int32, PartitionLeader, error) {
	ls, err := c.Leaders(ctx, metadata.ConsumerOffsetsTopic)
	if err != nil {
		return 0, PartitionLeader{}, err
	}
	p := metadata.GroupPartition(group, int32(len(ls)))
	return p, ls[p], nil
}

// FetchCommitted asks the group's coordinator for the offsets committed
// on topic's partitions (OffsetFetch), retrying until it answers without
// error; absent partitions have none. asOf is h.Len() just before the
// request that answered was sent, for GroupHistory.Observed.
func (c *Cluster) FetchCommitted(ctx context.Context, h *GroupHistory, group, topic string, partitions int32) (offsets map[int32]int64, asOf int, err error) {
	err = poll(ctx, "committed offsets of group "+group, func() (bool, error) {
		coord, err := c.GroupCoordinator(ctx, group)
		if err != nil {
			return false, err
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(7)
		req.Group = group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = topic
		for p := range partitions {
			rt.Partitions = append(rt.Partitions, p)
		}
		req.Topics = append(req.Topics, rt)
		asOf = h.Len()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := Request(rctx, c.nodes[coord-1].KafkaAddr, req)
		if err != nil {
			return false, nil
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if r.ErrorCode != 0 {
			return false, nil
		}
		offsets = map[int32]int64{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || t.Topic != topic {
					return false, nil
				}
				if p.Offset >= 0 {
					offsets[p.Partition] = p.Offset
				}
			}
		}
		return true, nil
	})
	return offsets, asOf, err
}
