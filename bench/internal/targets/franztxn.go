package targets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults of FranzTxn: transactions of TxnRecords records (the size of
// issue 15's aim), spread over TxnProducers producers, and TxnLinger, the
// longest a transaction waits for more records before it commits fewer.
const (
	TxnRecords   = 100
	TxnProducers = 8
	TxnLinger    = 10 * time.Millisecond // kgo's default linger
)

// FranzTxn produces with franz-go's transactional producer: Producers
// clients, each with its own TransactionalID, otherwise set up as Franz.
// A client cannot overlap two transactions, so one client would have at
// most Records records outstanding; several keep the pipeline full. Each
// takes the next Records records the bench sends (waiting up to Linger for
// more, so the last transaction of a run and those at a low offered rate
// may be smaller), begins a transaction, produces them, flushes and
// commits; a record is acknowledged when its transaction commits.
type FranzTxn struct {
	queue   chan txnRecord
	clients []*kgo.Client
	topic   string
	records int
	linger  time.Duration

	// ctx ends the producers' work early when Close gives up.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// closeOnce guards closing queue.
	closeOnce sync.Once
}

// txnRecord is one record waiting for a transaction.
type txnRecord struct {
	partition int
	value     []byte
	done      func(error)
}

// FranzTxnConfig shapes a FranzTxn; zero fields take the defaults above.
type FranzTxnConfig struct {
	Brokers   []string
	Topic     string
	Window    int    // records outstanding at most (the queue's size)
	IDPrefix  string // transactional ids are IDPrefix-0, IDPrefix-1, ...
	Producers int
	Records   int
	Linger    time.Duration
}

// NewFranzTxn creates the clients and starts their producers; extra
// options go after the bench's own.
func NewFranzTxn(cfg FranzTxnConfig, extra ...kgo.Opt) (*FranzTxn, error) {
	cfg.Producers = orDefault(cfg.Producers, TxnProducers)
	cfg.Records = orDefault(cfg.Records, TxnRecords)
	if cfg.Linger <= 0 {
		cfg.Linger = TxnLinger
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &FranzTxn{queue: make(chan txnRecord, cfg.Window+cfg.Records), topic: cfg.Topic,
		records: cfg.Records, linger: cfg.Linger, ctx: ctx, cancel: cancel}
	for i := range cfg.Producers {
		opts := append([]kgo.Opt{
			kgo.SeedBrokers(cfg.Brokers...),
			kgo.ClientID("kgo-txn-bench"),
			kgo.TransactionalID(fmt.Sprintf("%s-%d", cfg.IDPrefix, i)),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedRecords(cfg.Records + 1024),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
		}, extra...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.closeClients()
			cancel()
			return nil, fmt.Errorf("targets: transactional client %d: %w", i, err)
		}
		t.clients = append(t.clients, cl)
	}
	for _, cl := range t.clients {
		t.wg.Add(1)
		go t.produce(cl)
	}
	return t, nil
}

// WarmTxn runs one transaction of one record to partition 0 of
// cfg.Topic for each transactional id a FranzTxn with cfg would use, so
// that __transaction_state exists and those ids' coordinators are loaded
// before anything is measured.
func WarmTxn(ctx context.Context, cfg FranzTxnConfig) error {
	for i := range orDefault(cfg.Producers, TxnProducers) {
		if err := warmOne(ctx, cfg, i); err != nil {
			return fmt.Errorf("targets: warm-up transaction of %s-%d: %w", cfg.IDPrefix, i, err)
		}
	}
	return nil
}

func warmOne(ctx context.Context, cfg FranzTxnConfig, i int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("kgo-txn-bench-warmup"),
		kgo.TransactionalID(fmt.Sprintf("%s-%d", cfg.IDPrefix, i)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: cfg.Topic, Value: []byte("warm-up")}).FirstErr(); err != nil {
		return errors.Join(err, cl.EndTransaction(ctx, kgo.TryAbort))
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// orDefault is v, or def when v is not positive.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Send queues the record for the next transaction. The queue holds the
// bench's whole window, so it blocks only past it.
func (t *FranzTxn) Send(ctx context.Context, partition int, value []byte, done func(error)) error {
	select {
	case t.queue <- txnRecord{partition: partition, value: value, done: done}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// produce runs one client's transactions until the queue is closed and
// empty.
func (t *FranzTxn) produce(cl *kgo.Client) {
	defer t.wg.Done()
	for {
		recs, ok := nextTxn(t.queue, t.records, t.linger)
		if !ok {
			return
		}
		err := t.transact(cl, recs)
		for _, r := range recs {
			r.done(err)
		}
	}
}

// nextTxn takes the records of the next transaction from queue: it waits
// for one, then takes up to limit in all, waiting at most linger for the
// rest. ok is false when queue is closed and empty.
func nextTxn(queue <-chan txnRecord, limit int, linger time.Duration) (recs []txnRecord, ok bool) {
	r, ok := <-queue
	if !ok {
		return nil, false
	}
	recs = append(make([]txnRecord, 0, limit), r)
	timer := time.NewTimer(linger)
	defer timer.Stop()
	for len(recs) < limit {
		select {
		case r, ok := <-queue:
			if !ok {
				return recs, true
			}
			recs = append(recs, r)
		case <-timer.C:
			return recs, true
		}
	}
	return recs, true
}

// transact produces recs in one transaction and commits it; if a record
// fails, the transaction is aborted and that error returned.
func (t *FranzTxn) transact(cl *kgo.Client, recs []txnRecord) error {
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	var mu sync.Mutex // guards first
	var first error
	for _, r := range recs {
		cl.Produce(t.ctx, &kgo.Record{Topic: t.topic, Value: r.value, Partition: int32(r.partition)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = firstErr(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(t.ctx); err != nil {
		first = firstErr(first, err)
	}
	mu.Lock()
	produceErr := first
	mu.Unlock()
	if produceErr != nil {
		err := cl.AbortBufferedRecords(t.ctx)
		return errors.Join(fmt.Errorf("produce: %w", produceErr), err, cl.EndTransaction(t.ctx, kgo.TryAbort))
	}
	if err := cl.EndTransaction(t.ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// firstErr keeps the first error.
func firstErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Close commits what is queued and waits for the producers (bounded by
// ctx: then their work is cancelled), and closes the clients.
func (t *FranzTxn) Close(ctx context.Context) error {
	t.closeOnce.Do(func() { close(t.queue) })
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		t.cancel()
		<-done
		err = fmt.Errorf("targets: transactions still open at close: %w", ctx.Err())
	}
	t.cancel()
	t.closeClients()
	return err
}

func (t *FranzTxn) closeClients() {
	for _, cl := range t.clients {
		cl.Close()
	}
}
