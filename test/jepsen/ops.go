package jepsen

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/test/jepsen/history"
)

// errUnknown marks an operation whose outcome is unknown: its process
// crashes.
var errUnknown = errors.New("jepsen: outcome unknown")

// maxPollRecords bounds one poll.
const maxPollRecords = 200

// records makes n records of new values to random partitions, and the
// writes the history will hold for them.
func (w *worker) records(n int) ([]*kgo.Record, []history.Write) {
	rs := make([]*kgo.Record, n)
	ws := make([]history.Write, n)
	for i := range n {
		p := w.rng.Int32N(w.cfg.Partitions)
		v := w.rec.NextValue()
		rs[i] = &kgo.Record{Topic: w.cfg.Topic, Partition: p, Value: strconv.AppendInt(nil, v, 10)}
		ws[i] = history.Write{Partition: w.cfg.partitionName(p), Value: v, Offset: -1}
	}
	return rs, ws
}

// acked fills in the offsets of the writes (made for rs, in order) that
// the produce acknowledged and returns the first error. Results come in
// the order the acknowledgements arrived, not rs's.
func acked(rs []*kgo.Record, res kgo.ProduceResults, ws []history.Write) error {
	var first error
	for _, r := range res {
		if r.Err != nil {
			first = cmp.Or(first, r.Err)
			continue
		}
		if i := slices.Index(rs, r.Record); i >= 0 {
			ws[i].Offset = r.Record.Offset
		}
	}
	return first
}

// reads turns what a poll returned into the history's reads.
func (w *worker) reads(fs kgo.Fetches) []history.Read {
	var out []history.Read
	fs.EachRecord(func(r *kgo.Record) {
		v, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			v = -1 // not ours; the checker reports it as a value no one wrote
		}
		out = append(out, history.Read{Partition: w.cfg.partitionName(r.Partition), Offset: r.Offset, Value: v})
	})
	return out
}

// send is one idempotent produce of one value.
func (w *worker) send(ctx context.Context) error {
	cl, err := w.producer()
	if err != nil {
		return err
	}
	rs, ws := w.records(1)
	op := history.Op{Process: w.proc, Kind: history.Send, Invoke: w.rec.Now(), Writes: ws}
	octx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	err = acked(rs, cl.ProduceSync(octx, rs...), ws)
	cancel()
	op.Complete = w.rec.Now()
	op.Outcome = history.OK
	if err != nil {
		op.Outcome, err = history.Info, errUnknown
	}
	w.rec.Add(op)
	return err
}

// plainTxn sends one to four values in a transaction, then commits it,
// or one time in ten aborts it.
func (w *worker) plainTxn(ctx context.Context) error {
	cl, err := w.transactional()
	if err != nil {
		return err
	}
	rs, ws := w.records(1 + w.rng.IntN(4))
	commit := w.rng.IntN(10) != 0
	op := history.Op{Process: w.proc, Kind: history.Txn, Invoke: w.rec.Now(), Writes: ws}
	octx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err // nothing was sent
	}
	if err := acked(rs, cl.ProduceSync(octx, rs...), ws); err != nil {
		commit = false
	}
	op.Commit = w.rec.Now()
	err = cl.EndTransaction(octx, kgo.TransactionEndTry(commit))
	return w.ended(op, commit, err)
}

// ended records a transaction whose end was tried: committed (OK),
// aborted (Fail), or unknown when ending it failed.
func (w *worker) ended(op history.Op, committed bool, err error) error {
	op.Complete = w.rec.Now()
	switch {
	case err != nil:
		op.Outcome, err = history.Info, errUnknown
	case committed:
		op.Outcome = history.OK
	default:
		op.Outcome = history.Fail
	}
	w.rec.Add(op)
	return err
}

// ctpTxn is consume-transform-produce: a read_committed poll of the
// session's group, then one to three values sent and the polled offsets
// committed in one transaction (aborted one time in ten).
func (w *worker) ctpTxn(ctx context.Context) error {
	s, err := w.session()
	if err != nil {
		return err
	}
	op := history.Op{Process: w.proc, Kind: history.Txn, Invoke: w.rec.Now(), ReadCommitted: true}
	pctx, cancel := context.WithTimeout(ctx, pollWait)
	op.Reads = w.reads(s.PollRecords(pctx, maxPollRecords))
	cancel()
	rs, ws := w.records(1 + w.rng.IntN(3))
	op.Writes = ws
	commit := w.rng.IntN(10) != 0
	if err := s.Begin(); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	if err := acked(rs, s.ProduceSync(octx, rs...), ws); err != nil {
		commit = false
	}
	op.Commit = w.rec.Now()
	committed, err := s.End(octx, kgo.TransactionEndTry(commit))
	return w.ended(op, committed, err)
}

// pollWait is how long a poll waits for records.
const pollWait = time.Second

// poll is one poll of the worker's assign or group consumer.
func (w *worker) poll(ctx context.Context) error {
	cl, err := w.consumer()
	if err != nil {
		return err
	}
	op := history.Op{Process: w.proc, Kind: history.Poll, Invoke: w.rec.Now(),
		Assign: w.role == assignReader, ReadCommitted: w.readCommitted}
	pctx, cancel := context.WithTimeout(ctx, pollWait)
	fs := cl.PollRecords(pctx, maxPollRecords)
	cancel()
	op.Complete = w.rec.Now()
	op.Outcome = history.OK
	op.Reads = w.reads(fs)
	fs.EachRecord(func(r *kgo.Record) { w.next[r.Partition] = r.Offset + 1 })
	w.rec.Add(op)
	return nil
}
