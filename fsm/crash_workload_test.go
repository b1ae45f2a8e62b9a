package fsm_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/producerstate"
	"github.com/minikafka/minikafka-go/record"
)

// crashRef is the outcome of applying the workload without a crash, after
// every entry.
type crashRef struct {
	entries []*raft.Log
	endAt   []int64                // endAt[i]: the log end after entries[:i]
	startAt []int64                // startAt[i]: the log start after entries[:i]
	tables  []*producerstate.Table // tables[i]: the producer table after entries[:i]
	lso     []int64                // lso[i]: the last stable offset after entries[:i]
	// full holds every batch ever appended, in offset order: trims delete
	// none of it here. posOf is the byte position in full of each batch
	// boundary (the offset of a batch's first record, and the end).
	full  []byte
	posOf map[int64]int
	ops   int64 // file operations of one crash-free harness run
	// fileLimit bounds the open files of each incarnation (0: none).
	fileLimit int
}

func (ref *crashRef) last() int { return len(ref.entries) }

// tail is what the reference log holds from the batch that holds start
// (the final start) to its end.
func (ref *crashRef) tail() []byte {
	start := ref.startAt[ref.last()]
	for off := start; off >= 0; off-- {
		if pos, ok := ref.posOf[off]; ok {
			return ref.full[pos:]
		}
	}
	panic("no batch boundary at or below the start")
}

// crashWorkload makes the harness's entries from history: some produce
// entries become CmdProduceAt with LogAppendTime, some batches become
// transactional, and between entries it inserts, from the reference log's
// state, trims (inside a segment, to a segment's base, to the end, past
// the end), producer expiries and transaction markers (COMMIT and ABORT,
// some with a stale epoch or coordinator epoch, which are refused).
type crashWorkload struct {
	rng   *rand.Rand
	clock int64 // the leader's clock in ms: steps forward per entry
	// epochs is the latest epoch each producer's batches carried.
	epochs map[int64]int16
	coord  int32 // the coordinator epoch, bumped now and then
}

// next returns the entries to apply for e: e itself (perhaps as a
// CmdProduceAt), then perhaps a trim or an expiry. Indexes are left to the
// caller.
func (w *crashWorkload) next(e *raft.Log, l *seglog.Log) []*raft.Log {
	w.clock += 1 + w.rng.Int64N(20)
	c := *e
	t, body, err := fsm.DecodeCommand(c.Data)
	isProduce := err == nil && t == fsm.CmdProduce
	if h, err := record.Check(body); isProduce && err == nil && h.ProducerID >= 0 {
		w.epochs[h.ProducerID] = max(w.epochs[h.ProducerID], h.ProducerEpoch) // zombies carry old ones
		// Producers 100 and 101 write transactions, with a rare stray
		// non-transactional batch (INVALID_TXN_STATE); 102 never does.
		if h.ProducerID != 102 && w.rng.IntN(10) != 0 { // a copy: retries share the history's bytes
			body = makeTransactional(bytes.Clone(body))
			c.Data = fsm.EncodeProduce(body)
		}
	}
	if isProduce && w.rng.IntN(3) == 0 {
		flags := fsm.FlagLogAppendTime
		if w.rng.IntN(4) == 0 {
			flags = 0
		}
		c.Data = fsm.EncodeProduceAt(body, w.clock, flags)
	}
	out := []*raft.Log{&c}
	cmd := func(data []byte) *raft.Log {
		return &raft.Log{Term: e.Term, Type: raft.LogCommand, Data: data}
	}
	switch k := w.rng.IntN(40); {
	case k < 3:
		out = append(out, cmd(fsm.EncodeTrim(w.trimTarget(l))))
	case k < 4:
		out = append(out, cmd(fsm.EncodeTrim(l.EndOffset())))
	case k < 5:
		ttl := []int64{30, 200, 2000}[w.rng.IntN(3)]
		out = append(out, cmd(fsm.EncodeExpireProducers(w.clock, ttl)))
	case k < 12:
		out = append(out, cmd(fsm.EncodeEndTxn(w.marker())))
	}
	return out
}

// marker is a COMMIT or ABORT for one of the history's producers at its
// latest epoch and the current coordinator epoch; one in eight has a
// stale epoch, one in eight bumps it (as the coordinator does for a new
// producer instance), one in eight comes from a stale coordinator.
func (w *crashWorkload) marker() fsm.EndTxn {
	pid := int64(100 + w.rng.IntN(3))
	if w.rng.IntN(16) == 0 {
		w.coord++
	}
	m := fsm.EndTxn{ProducerID: pid, ProducerEpoch: w.epochs[pid], Commit: w.rng.IntN(3) == 0,
		CoordinatorEpoch: w.coord, LeaderTime: w.clock}
	switch w.rng.IntN(8) {
	case 0:
		m.ProducerEpoch--
	case 1:
		m.ProducerEpoch++
		w.epochs[pid] = m.ProducerEpoch
	case 2:
		m.CoordinatorEpoch--
	}
	return m
}

// trimTarget picks an offset inside a segment or at a segment's base,
// rarely one past the end (refused).
func (w *crashWorkload) trimTarget(l *seglog.Log) int64 {
	if w.rng.IntN(10) == 0 {
		return l.EndOffset() + 1 + w.rng.Int64N(3)
	}
	segs := l.Segments()
	s := segs[w.rng.IntN(len(segs))]
	if w.rng.IntN(4) == 0 || s.Next == s.Base {
		return s.Base
	}
	return s.Base + 1 + w.rng.Int64N(s.Next-s.Base)
}

// newCrashWorkload returns the workload generator for seed.
func newCrashWorkload(seed uint64) *crashWorkload {
	return &crashWorkload{rng: rand.New(rand.NewPCG(seed, 2)), clock: 1_000_000, epochs: map[int64]int16{}}
}

// crashReference applies entries (made into the crash workload by w, if
// not nil) on a file system that never crashes, recording the outcome
// after every entry.
func crashReference(t *testing.T, entries []*raft.Log, w *crashWorkload) *crashRef {
	m := vfs.NewStrictMem()
	l, err := seglog.Open(crashLogDir, crashLogOpts(m, 0))
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsm.New(fsm.Config{Dir: crashFSMDir, FS: m}, l)
	if err != nil {
		t.Fatal(err)
	}
	ref := &crashRef{endAt: []int64{0}, startAt: []int64{0}, tables: []*producerstate.Table{f.Producers()},
		lso: []int64{0}, posOf: map[int64]int{0: 0}}
	for _, e := range entries {
		batch := []*raft.Log{e}
		if w != nil {
			batch = w.next(e, l)
		}
		for _, c := range batch {
			c.Index = uint64(len(ref.entries) + 1)
			ref.entries = append(ref.entries, c)
			f.ApplyBatch([]*raft.Log{c})
			ref.record(t, l, f)
		}
	}
	if err := errors.Join(f.Close(), l.Close()); err != nil {
		t.Fatal(err)
	}
	return ref
}

// record notes the reference's state after its last entry.
func (ref *crashRef) record(t *testing.T, l *seglog.Log, f *fsm.FSM) {
	t.Helper()
	prev := ref.endAt[len(ref.endAt)-1]
	if end := l.EndOffset(); end > prev {
		b, err := l.Read(prev, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for rest := b; len(rest) > 0; {
			one, r, _, err := record.Next(rest)
			if err != nil {
				t.Fatal(err)
			}
			h, err := record.ParseHeader(one)
			if err != nil {
				t.Fatal(err)
			}
			ref.full = append(ref.full, one...)
			ref.posOf[h.NextOffset()] = len(ref.full)
			rest = r
		}
	}
	ref.endAt = append(ref.endAt, l.EndOffset())
	ref.startAt = append(ref.startAt, l.StartOffset())
	ref.tables = append(ref.tables, f.Producers())
	ref.lso = append(ref.lso, f.LastStableOffset())
}

// workloadMix counts the entries of each kind, for the test log.
func (ref *crashRef) workloadMix() map[string]int {
	mix := map[string]int{}
	for i, e := range ref.entries {
		t, _, err := fsm.DecodeCommand(e.Data)
		switch {
		case e.Type != raft.LogCommand || err != nil:
			mix["other"]++
		case t == fsm.CmdTrim && ref.startAt[i+1] > ref.startAt[i]:
			mix["trim (moved)"]++
		case t == fsm.CmdExpireProducers && ref.tables[i+1].Len() < ref.tables[i].Len():
			mix["expire (removed)"]++
		case t == fsm.CmdEndTxn && len(ref.tables[i+1].AbortedTxns()) > len(ref.tables[i].AbortedTxns()):
			mix["end-txn (aborted one)"]++
		case t == fsm.CmdEndTxn && ref.endAt[i+1] > ref.endAt[i]:
			mix["end-txn (written)"]++
		default:
			mix[t.String()]++
		}
	}
	return mix
}
