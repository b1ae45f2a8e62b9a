package e2e

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ShareMemberConfig describes one share-group member.
type ShareMemberConfig struct {
	Brokers []string // seed brokers; required
	Group   string   // required
	Topic   string   // required
	Name    string   // the member's name in the history (and its client id); required
	// ReleaseEvery releases, instead of accepting, the first delivery of
	// one record in ReleaseEvery (by offset), to exercise redelivery; 0
	// accepts everything.
	ReleaseEvery int64
}

// ShareMember is a stock franz-go share consumer (kgo.ShareGroup) in the
// test process. After each poll it records every record delivered (with
// its delivery count), acknowledges each one (accept, or release for a
// few first deliveries), flushes the acknowledgements synchronously
// (Client.FlushAcks) and records each one's outcome as the client reported
// it in its ShareAckCallback. Stop it with Close.
type ShareMember struct {
	cfg    ShareMemberConfig
	h      *ShareHistory
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{} // closed when the poll loop has returned

	mu      sync.Mutex           // guards results and errs
	results []kgo.ShareAckResult // reported since the current flush began
	errs    errCounts            // errors seen, by class
}

// shareFlushTimeout bounds one FlushAcks; the client retries within.
const shareFlushTimeout = 20 * time.Second

// StartShareMember joins cfg.Group and starts the member's poll loop.
func StartShareMember(cfg ShareMemberConfig, h *ShareHistory) (*ShareMember, error) {
	if len(cfg.Brokers) == 0 || cfg.Group == "" || cfg.Topic == "" || cfg.Name == "" {
		return nil, errors.New("e2e: ShareMemberConfig needs Brokers, Group, Topic and Name")
	}
	m := &ShareMember{cfg: cfg, h: h, done: make(chan struct{}), errs: errCounts{}}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.Name),
		kgo.ShareGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ShareMaxRecords(100),
		kgo.ShareAckCallback(m.onAck),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(ctx)
	return m, nil
}

// onAck is the ShareAckCallback: it keeps the results for the flush in
// progress.
func (m *ShareMember) onAck(_ *kgo.Client, rs kgo.ShareAckResults) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results = append(m.results, rs...)
}

// loop polls, records and acknowledges, until ctx ends.
func (m *ShareMember) loop(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, pollWait)
		fs := m.cl.PollRecords(pctx, 200)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				m.noteErr("fetch", fe.Err)
			}
		}
		if recs := fs.Records(); len(recs) > 0 {
			m.handle(recs)
		}
	}
}

// handle records the deliveries of one poll, acknowledges every record,
// flushes, and records each acknowledgement's outcome: ok when every
// result reported for its partition during the flush is, failed when one
// is not, unknown when none came. Results of an earlier flush that timed
// out may land in this one; requiring all of them to be ok keeps a
// reported success true.
func (m *ShareMember) handle(recs []*kgo.Record) {
	m.mu.Lock()
	m.results = nil
	m.mu.Unlock()
	now := time.Now()
	acks := make([]ShareEvent, 0, len(recs))
	dels := make([]ShareEvent, 0, len(recs))
	for _, r := range recs {
		id, ok := ParseValue(r.Value)
		e := ShareEvent{Kind: ShareDelivered, Member: m.cfg.Name, Partition: r.Partition, Offset: r.Offset,
			ID: id, IDOK: ok, Count: r.DeliveryCount(), At: now}
		dels = append(dels, e)
		e.Kind, e.Ack = ShareAcked, ShareAccept
		if m.cfg.ReleaseEvery > 0 && r.DeliveryCount() == 1 && r.Offset%m.cfg.ReleaseEvery == 0 {
			e.Ack = ShareRelease
		}
		r.Ack(kgo.AckStatus(e.Ack))
		acks = append(acks, e)
	}
	m.h.Add(dels...)
	fctx, cancel := context.WithTimeout(context.Background(), shareFlushTimeout)
	ferr := m.cl.FlushAcks(fctx)
	cancel()
	if ferr != nil {
		m.noteErr("flush", ferr)
	}
	m.mu.Lock()
	byPart := map[int32]error{}
	for _, res := range m.results {
		if res.Topic != m.cfg.Topic {
			continue
		}
		if prev, seen := byPart[res.Partition]; !seen || prev == nil {
			byPart[res.Partition] = res.Err
		}
		if res.Err != nil {
			m.noteErrLocked("ack", res.Err)
		}
	}
	m.mu.Unlock()
	done := time.Now()
	for i := range acks {
		acks[i].At = done
		err, seen := byPart[acks[i].Partition]
		switch {
		case !seen:
			acks[i].Outcome = AckUnknown
		case err != nil:
			acks[i].Outcome, acks[i].Err = AckFailed, err.Error()
		}
	}
	m.h.Add(acks...)
}

func (m *ShareMember) noteErr(op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteErrLocked(op, err)
}

func (m *ShareMember) noteErrLocked(op string, err error) { m.errs.note(op, err) }

// Errors returns the errors the member saw, counted by operation and
// class, as sorted "op:class=count" strings.
func (m *ShareMember) Errors() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs.sorted()
}

// Name is the member's name.
func (m *ShareMember) Name() string { return m.cfg.Name }

// Close stops the poll loop (the last poll's acknowledgements are
// flushed and recorded first), then leaves the group, bounded by ctx, and
// closes the client; records it still buffered go back to the broker.
func (m *ShareMember) Close(ctx context.Context) error {
	m.cancel()
	<-m.done
	err := m.cl.LeaveGroupContext(ctx)
	m.cl.Close()
	return err
}
