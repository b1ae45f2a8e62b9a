package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// PipelineConfig describes one instance of a consume-transform-produce
// pipeline.
type PipelineConfig struct {
	Brokers []string // seed brokers; required
	Group   string   // the consumer group; required
	TxnID   string   // the transactional id; required, one per instance
	Name    string   // the instance's name in the history; required, without '|'
	In, Out string   // input and output topics; required, with as many partitions
	// AbortEvery makes every AbortEvery-th transaction end with TryAbort
	// after writing its outputs (the session then rewinds to the
	// committed offsets). 0: never.
	AbortEvery int
	// Logger receives the sessions' franz-go logs. Default: none.
	Logger kgo.Logger
}

// Pipeline is one franz-go GroupTransactSession in the test process that
// copies In to Out exactly once: each poll's records become one
// transaction that writes, for each input record, one output to the same
// partition number (TransformValue) and commits the group's offsets with
// it. On an error from Begin or End it closes the session and starts a
// new one with the same transactional id, as an application would: the
// new one fences the old and resumes from the committed offsets. Every
// transaction and its outcome goes into a TxnHistory. Stop it with Close.
type Pipeline struct {
	cfg    PipelineConfig
	h      *TxnHistory
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has returned and closed its session

	mu       sync.Mutex     // guards errs and sessions
	errs     map[string]int // errors seen, by operation and class
	sessions int            // sessions started
}

// Timeouts of the pipeline's sessions: short, so that a request to a
// killed or paused node is given up soon.
const (
	txnEndTimeout      = 30 * time.Second
	pipelinePollWait   = 500 * time.Millisecond
	pipelineTxnTimeout = 20 * time.Second
)

// StartPipeline starts the instance's first session and its loop.
func StartPipeline(cfg PipelineConfig, h *TxnHistory) (*Pipeline, error) {
	if len(cfg.Brokers) == 0 || cfg.Group == "" || cfg.TxnID == "" || cfg.Name == "" || cfg.In == "" || cfg.Out == "" {
		return nil, errors.New("e2e: PipelineConfig needs Brokers, Group, TxnID, Name, In and Out")
	}
	p := &Pipeline{cfg: cfg, h: h, done: make(chan struct{}), errs: map[string]int{}}
	sess, err := p.newSession()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.loop(ctx, sess)
	return p, nil
}

// newSession starts a GroupTransactSession of the instance.
func (p *Pipeline) newSession() (*kgo.GroupTransactSession, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(p.cfg.Brokers...),
		kgo.ClientID(p.cfg.Name),
		kgo.TransactionalID(p.cfg.TxnID),
		kgo.TransactionTimeout(pipelineTxnTimeout),
		kgo.ConsumerGroup(p.cfg.Group),
		kgo.ConsumeTopics(p.cfg.In),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		// A JoinGroup waits up to the rebalance timeout: to a paused
		// coordinator, that long.
		kgo.RebalanceTimeout(6 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.ProduceRequestTimeout(4 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	if p.cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(p.cfg.Logger))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, fmt.Errorf("e2e: pipeline %s: new session: %w", p.cfg.Name, err)
	}
	p.mu.Lock()
	p.sessions++
	p.mu.Unlock()
	return sess, nil
}

// loop runs transactions until ctx ends, replacing the session after a
// failure, then closes the session.
func (p *Pipeline) loop(ctx context.Context, sess *kgo.GroupTransactSession) {
	defer close(p.done)
	txn := 0
	for ctx.Err() == nil {
		ok, err := p.step(ctx, sess, txn)
		if ok {
			txn++
		}
		if err == nil {
			continue
		}
		p.noteErr("session", err)
		sess.Close()
		if ctx.Err() != nil {
			return
		}
		next, err := p.newSession()
		if err != nil {
			// A configuration error: every retry would fail the same.
			p.noteErr("restart", err)
			return
		}
		sess = next
	}
	sess.Close()
}

// step polls once and, if it got records, runs one transaction of them.
// It reports whether a transaction was begun, and an error if the session
// must be replaced.
func (p *Pipeline) step(ctx context.Context, sess *kgo.GroupTransactSession, txn int) (bool, error) {
	pctx, cancel := context.WithTimeout(ctx, pipelinePollWait)
	fs := sess.PollFetches(pctx)
	cancel()
	if fs.IsClientClosed() {
		return false, kgo.ErrClientClosed
	}
	for _, fe := range fs.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
			p.noteErr("fetch", fe.Err)
		}
	}
	recs := fs.Records()
	if len(recs) == 0 {
		return false, nil
	}
	p.mu.Lock()
	label := fmt.Sprintf("%s.s%d.t%d", p.cfg.Name, p.sessions, txn)
	p.mu.Unlock()
	deliberate := p.cfg.AbortEvery > 0 && txn%p.cfg.AbortEvery == p.cfg.AbortEvery-1
	inputs := make([]InputRef, len(recs))
	for i, r := range recs {
		inputs[i] = InputRef{Partition: r.Partition, Offset: r.Offset}
	}
	if err := sess.Begin(); err != nil {
		return false, fmt.Errorf("e2e: pipeline %s: begin: %w", p.cfg.Name, err)
	}
	i := p.h.Begin(label, p.cfg.Name, inputs, deliberate)
	var failed atomic.Bool
	for j, r := range recs {
		out := &kgo.Record{Topic: p.cfg.Out, Partition: r.Partition, Key: r.Key,
			Value: TransformValue(label, inputs[j], r.Value)}
		sess.Produce(context.Background(), out, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(true)
				p.noteErr("produce", err)
			}
		})
	}
	ectx, cancel := context.WithTimeout(context.Background(), txnEndTimeout)
	defer cancel()
	// Flush before End: End(TryAbort) drops records still buffered (the
	// aborted records of a deliberate abort belong in the log, for readers
	// to skip), and a record that failed must abort the transaction. The
	// Java producer refuses the commit itself; franz-go leaves it to the
	// application, which would otherwise commit the inputs without it.
	if err := sess.Client().Flush(ectx); err != nil {
		p.h.End(i, TxnUnknown, err)
		return true, fmt.Errorf("e2e: pipeline %s: flush: %w", p.cfg.Name, err)
	}
	committed, err := sess.End(ectx, kgo.TransactionEndTry(!deliberate && !failed.Load()))
	switch {
	case err != nil:
		p.h.End(i, TxnUnknown, err)
		return true, fmt.Errorf("e2e: pipeline %s: end: %w", p.cfg.Name, err)
	case committed:
		p.h.End(i, TxnCommitted, nil)
	default:
		p.h.End(i, TxnAborted, nil)
	}
	return true, nil
}

func (p *Pipeline) noteErr(op string, err error) {
	var ke *kerr.Error
	class := err.Error()
	switch {
	case errors.As(err, &ke):
		class = ke.Message
	case errors.Is(err, context.DeadlineExceeded):
		class = "timeout"
	case len(class) > 80:
		class = class[:80] + "..."
	}
	p.mu.Lock()
	p.errs[op+":"+class]++
	p.mu.Unlock()
}

// Errors returns the errors the instance saw, counted by operation and
// class, as sorted "op:class=count" strings.
func (p *Pipeline) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(p.errs)) {
		out = append(out, fmt.Sprintf("%s=%d", k, p.errs[k]))
	}
	return out
}

// Sessions returns the number of sessions the instance started: one plus
// its restarts.
func (p *Pipeline) Sessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions
}

// Name is the instance's name.
func (p *Pipeline) Name() string { return p.cfg.Name }

// Close stops the loop after the transaction in progress ends, and closes
// the session (leaving the group), waiting at most until ctx ends.
func (p *Pipeline) Close(ctx context.Context) error {
	p.cancel()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("e2e: pipeline %s: close: %w", p.cfg.Name, ctx.Err())
	}
}
