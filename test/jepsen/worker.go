package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// worker is one client process: its clients, made when first needed and
// closed when an operation's outcome is unknown (the process crashes and
// goes on under a new number, as Jepsen's do). Owned by one goroutine.
type worker struct {
	id            int
	cfg           *Config
	rec           *Recorder
	role          role
	readCommitted bool
	rng           *rand.Rand
	proc          int

	prod *kgo.Client               // idempotent producer
	txn  *kgo.Client               // transactional producer
	cons *kgo.Client               // the assign or subscribe consumer
	sess *kgo.GroupTransactSession // the consume-transform-produce session
	next map[int32]int64           // partition → the offset after the last one this worker's assign consumers read
}

// run does operations until ctx ends: about 3 in 10 sends, 4 in 10
// transactions, 3 in 10 polls (transactions, for a ctp worker).
func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		var err error
		switch pick := w.rng.IntN(10); {
		case pick < 3:
			err = w.send(ctx)
		case pick < 7 || w.role == ctpReader:
			if w.role == ctpReader {
				err = w.ctpTxn(ctx)
			} else {
				err = w.plainTxn(ctx)
			}
		default:
			err = w.poll(ctx)
		}
		if err != nil {
			w.crash()
			// A client that cannot be made, or a cluster that refuses
			// everything: do not spin.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// crash closes the worker's clients and makes it a new process.
func (w *worker) crash() {
	w.closeClients()
	w.proc = w.rec.NewProcess()
}

func (w *worker) closeClients() {
	for _, c := range []*kgo.Client{w.prod, w.txn, w.cons} {
		if c != nil {
			c.Close()
		}
	}
	if w.sess != nil {
		w.sess.Close()
	}
	w.prod, w.txn, w.cons, w.sess = nil, nil, nil, nil
}

// opts are every client's options, then extra.
func (w *worker) opts(extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(w.cfg.Brokers...),
		kgo.ClientID(fmt.Sprintf("jepsen-%d", w.id)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.RetryTimeout(w.cfg.OpTimeout),
	}
	o = append(o, w.cfg.ClientOpts...)
	return append(o, extra...)
}

func (w *worker) isolation() kgo.IsolationLevel {
	if w.readCommitted {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

// txnID is the worker's transactional id: kept across its crashes, so
// that each new process fences the one before.
func (w *worker) txnID() string { return fmt.Sprintf("jepsen-txn-%d", w.id) }

func (w *worker) producer() (*kgo.Client, error) {
	if w.prod == nil {
		c, err := kgo.NewClient(w.opts()...)
		if err != nil {
			return nil, err
		}
		w.prod = c
	}
	return w.prod, nil
}

func (w *worker) transactional() (*kgo.Client, error) {
	if w.txn == nil {
		c, err := kgo.NewClient(w.opts(kgo.TransactionalID(w.txnID()), kgo.TransactionTimeout(w.cfg.TxnTimeout))...)
		if err != nil {
			return nil, err
		}
		w.txn = c
	}
	return w.txn, nil
}

func (w *worker) session() (*kgo.GroupTransactSession, error) {
	if w.sess == nil {
		s, err := kgo.NewGroupTransactSession(w.opts(
			kgo.TransactionalID(w.txnID()), kgo.TransactionTimeout(w.cfg.TxnTimeout),
			kgo.ConsumerGroup(ctpGroup), kgo.ConsumeTopics(w.cfg.Topic),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(6*time.Second))...)
		if err != nil {
			return nil, err
		}
		w.sess = s
	}
	return w.sess, nil
}

// consumer is the worker's assign consumer (resuming where its last one
// stopped) or its group consumer.
func (w *worker) consumer() (*kgo.Client, error) {
	if w.cons != nil {
		return w.cons, nil
	}
	o := w.opts(kgo.FetchIsolationLevel(w.isolation()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if w.role == subscribeReader {
		o = append(o, kgo.ConsumerGroup(subscribeGroup), kgo.ConsumeTopics(w.cfg.Topic),
			kgo.SessionTimeout(6*time.Second))
	} else {
		at := map[int32]kgo.Offset{}
		for p := range w.cfg.Partitions {
			at[p] = kgo.NewOffset().At(w.next[p])
		}
		o = append(o, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.cfg.Topic: at}))
	}
	c, err := kgo.NewClient(o...)
	if err != nil {
		return nil, err
	}
	w.cons = c
	return c, nil
}
