package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/record"
)

// history is a deterministic mix of everything Apply meets: in-sequence
// batches of several producers, exact retries, gaps, fenced epochs,
// non-idempotent batches, no-ops, configuration entries and garbage.
func history(seed uint64, n int) []*raft.Log {
	rng := rand.New(rand.NewPCG(seed, 1))
	type prod struct {
		epoch int16
		next  int32
		sent  [][]byte
	}
	prods := map[int64]*prod{}
	var out []*raft.Log
	term := uint64(1)
	for i := 1; len(out) < n; i++ {
		idx := uint64(len(out) + 1)
		if rng.IntN(20) == 0 {
			term++
		}
		pid := int64(100 + rng.IntN(3))
		p := prods[pid]
		if p == nil {
			p = &prod{}
			prods[pid] = p
		}
		switch k := rng.IntN(20); {
		case k < 10: // next batch in sequence
			cnt := 1 + rng.IntN(4)
			vals := make([]string, cnt)
			for j := range vals {
				vals[j] = fmt.Sprintf("p%d-s%d-%d", pid, p.next, j)
			}
			b := batch(pid, p.epoch, p.next, "k", vals...)
			p.sent = append(p.sent, b)
			p.next = record.AddSequence(p.next, int32(cnt))
			out = append(out, produce(idx, term, b))
		case k < 13 && len(p.sent) > 0: // retry one of the recent batches
			out = append(out, produce(idx, term, p.sent[len(p.sent)-1-rng.IntN(min(len(p.sent), 7))]))
		case k < 14: // a gap
			out = append(out, produce(idx, term, batch(pid, p.epoch, p.next+5, "", "gap")))
		case k < 15: // a new epoch
			p.epoch++
			p.next = 0
			p.sent = nil
		case k < 16 && p.epoch > 0: // a zombie with an old epoch
			out = append(out, produce(idx, term, batch(pid, p.epoch-1, p.next, "", "zombie")))
		case k < 17: // not idempotent
			out = append(out, produce(idx, term, batch(-1, -1, -1, "", "plain", "plain2")))
		case k < 18:
			out = append(out, &raft.Log{Index: idx, Term: term, Type: raft.LogCommand, Data: fsm.EncodeNoop()})
		case k < 19:
			out = append(out, &raft.Log{Index: idx, Term: term, Type: raft.LogConfiguration, Data: []byte{1}})
		default: // garbage and a corrupted batch
			if rng.IntN(2) == 0 {
				out = append(out, &raft.Log{Index: idx, Term: term, Type: raft.LogCommand, Data: []byte{0xee, 1, 2}})
			} else {
				b := batch(pid, p.epoch, p.next, "", "bitflip")
				b[len(b)-1] ^= 1
				out = append(out, produce(idx, term, b))
			}
		}
	}
	return out
}

func TestReplicasEndByteIdentical(t *testing.T) {
	entries := history(7, 600)
	a := openReplica(t, t.TempDir())
	b := openReplica(t, t.TempDir())
	defer a.close()
	defer b.close()
	ra := applyAll(a.f, entries, 1)
	rb := applyAll(b.f, entries, 17) // different batching, same outcome
	verdicts := map[string]int{}
	for i := range ra {
		pa, _ := ra[i].(*fsm.ProduceResult)
		pb, _ := rb[i].(*fsm.ProduceResult)
		if (pa == nil) != (pb == nil) {
			t.Fatalf("entry %d: results %v vs %v", i+1, ra[i], rb[i])
		}
		if pa == nil {
			continue
		}
		if pa.BaseOffset != pb.BaseOffset || pa.Duplicate != pb.Duplicate || !errors.Is(pb.Err, errCode(pa.Err)) {
			t.Fatalf("entry %d: %+v vs %+v", i+1, pa, pb)
		}
		switch {
		case pa.Duplicate:
			verdicts["duplicate"]++
		case pa.Err == nil:
			verdicts["append"]++
		default:
			verdicts[errCode(pa.Err).Error()]++
		}
	}
	for _, want := range []string{"append", "duplicate", kerr.OutOfOrderSequenceNumber.Error(), kerr.InvalidProducerEpoch.Error(), kerr.CorruptMessage.Error()} {
		if verdicts[want] == 0 {
			t.Fatalf("history never produced %q: %v", want, verdicts)
		}
	}
	if !bytes.Equal(a.logBytes(), b.logBytes()) {
		t.Fatal("replica logs differ")
	}
	if !a.f.Producers().Equal(b.f.Producers()) {
		t.Fatal("producer tables differ")
	}
	if a.f.AppliedIndex() != uint64(len(entries)) || a.f.HighWatermark() != a.log.EndOffset() {
		t.Fatalf("applied %d hw %d end %d", a.f.AppliedIndex(), a.f.HighWatermark(), a.log.EndOffset())
	}
	// Each stored batch carries the leader epoch of its entry's term and an
	// offset that follows the one before.
	next := int64(0)
	for h, err := range a.log.Batches(0) {
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset != next || h.PartitionLeaderEpoch < 1 {
			t.Fatalf("stored batch %+v, expected base %d and an epoch", h, next)
		}
		next = h.NextOffset()
	}
}

func errCode(err error) error {
	var e *fsm.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return err
}

func TestAppliedResultsAndEpochStamp(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	b0 := batch(9, 0, 0, "", "a", "b")
	res := r.f.ApplyBatch([]*raft.Log{
		produce(1, 3, b0),
		produce(2, 3, batch(9, 0, 2, "", "c")),
		produce(3, 4, b0),                       // exact retry
		produce(4, 4, batch(9, 0, 9, "", "x")),  // gap
		produce(5, 4, batch(9, 1, 3, "", "x")),  // new epoch must start at 0
		produce(6, 5, batch(9, 1, 0, "", "e1")), // new epoch
		produce(7, 5, batch(9, 0, 3, "", "z")),  // zombie
	})
	want := []struct {
		base int64
		dup  bool
		err  error
	}{{0, false, nil}, {2, false, nil}, {0, true, nil}, {-1, false, kerr.OutOfOrderSequenceNumber},
		{-1, false, kerr.OutOfOrderSequenceNumber}, {3, false, nil}, {-1, false, kerr.InvalidProducerEpoch}}
	for i, w := range want {
		got := result(t, res[i])
		if got.BaseOffset != w.base || got.Duplicate != w.dup || (w.err == nil) != (got.Err == nil) || (w.err != nil && !errors.Is(got.Err, w.err)) {
			t.Errorf("entry %d: got %+v, want base %d dup %v err %v", i+1, got, w.base, w.dup, w.err)
		}
	}
	epochs := []int32{}
	for h := range r.log.Batches(0) {
		epochs = append(epochs, h.PartitionLeaderEpoch)
	}
	if fmt.Sprint(epochs) != "[3 3 5]" {
		t.Fatalf("leader epochs of stored batches = %v, want the entries' terms [3 3 5]", epochs)
	}
	if r.f.HighWatermark() != 4 {
		t.Fatalf("high watermark %d, want 4", r.f.HighWatermark())
	}
}

func TestChangedFiresOnAppend(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	ch := r.f.Changed()
	r.f.ApplyBatch([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: fsm.EncodeNoop()}})
	select {
	case <-ch:
		t.Fatal("Changed fired without the high watermark moving")
	default:
	}
	r.f.Apply(produce(2, 1, batch(-1, -1, -1, "", "v")))
	select {
	case <-ch:
	default:
		t.Fatal("Changed did not fire after an append")
	}
}

// A wake-up registered with WatchChanged is called once by the append
// that moves the high watermark, not by an entry that does not.
func TestWatchChangedWakesOnAppend(t *testing.T) {
	r := openReplica(t, t.TempDir())
	defer r.close()
	woke := 0
	r.f.WatchChanged(r.f.Changed(), func() { woke++ })
	r.f.ApplyBatch([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: fsm.EncodeNoop()}})
	if woke != 0 {
		t.Fatal("woken without the high watermark moving")
	}
	r.f.Apply(produce(2, 1, batch(-1, -1, -1, "", "v")))
	r.f.Apply(produce(3, 1, batch(-1, -1, -1, "", "w")))
	if woke != 1 {
		t.Fatalf("woken %d times by two appends, want once", woke)
	}
}

func TestCommandCodec(t *testing.T) {
	b := batch(1, 0, 0, "", "v")
	typ, body, err := fsm.DecodeCommand(fsm.EncodeProduce(b))
	if err != nil || typ != fsm.CmdProduce || !bytes.Equal(body, b) {
		t.Fatalf("produce round trip: %v %v", typ, err)
	}
	if typ, _, err := fsm.DecodeCommand(fsm.EncodeNoop()); err != nil || typ != fsm.CmdNoop {
		t.Fatalf("noop round trip: %v %v", typ, err)
	}
	if _, _, err := fsm.DecodeCommand(nil); !errors.Is(err, fsm.ErrEmptyCommand) {
		t.Fatalf("empty: %v", err)
	}
	if _, _, err := fsm.DecodeCommand([]byte{200}); !errors.Is(err, fsm.ErrUnknownCommand) {
		t.Fatalf("unknown: %v", err)
	}
	// The byte values are part of the stored format and must never change.
	if fsm.CmdProduce != 1 || fsm.CmdNoop != 2 {
		t.Fatal("command type bytes changed; stored logs would be misread")
	}
}

// FuzzApplyCommand: no command bytes make Apply panic, two replicas
// agree on every outcome, and the state restores from its snapshot.
func FuzzApplyCommand(f *testing.F) {
	f.Add(fsm.EncodeProduce(batch(5, 0, 0, "k", "v")))
	f.Add(fsm.EncodeProduce(batch(5, 0, 1, "k", "v", "w")))
	f.Add(fsm.EncodeNoop())
	f.Add(fsm.EncodeEndTxn(fsm.EndTxn{ProducerID: 5, Commit: true, LeaderTime: 7}))
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{})
	dir := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		var la, lb memLog
		a, err := fsm.New(fsm.Config{Dir: fmt.Sprintf("%s/a%d", dir, n)}, &la)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fsm.New(fsm.Config{Dir: fmt.Sprintf("%s/b%d", dir, n)}, &lb)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		defer b.Close()
		first := produce(1, 1, batch(5, 0, 0, "k", "first"))
		e := &raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: data}
		ra := a.ApplyBatch([]*raft.Log{first, e})
		rb := b.ApplyBatch([]*raft.Log{first, e})
		if fmt.Sprintf("%+v", ra[1]) != fmt.Sprintf("%+v", rb[1]) {
			t.Fatalf("replicas disagree: %+v vs %+v", ra[1], rb[1])
		}
		if !bytes.Equal(la.bytes(), lb.bytes()) {
			t.Fatal("logs differ")
		}
		if r, ok := ra[1].(*fsm.ProduceResult); ok && r.Err == nil && !r.Duplicate && la.end <= 1 {
			t.Fatalf("accepted %+v without appending", r)
		}
		// Whatever state the command left, a replica can be rebuilt from
		// its snapshot (a node once could not reopen such a partition).
		var lc memLog
		c, err := fsm.New(fsm.Config{Dir: fmt.Sprintf("%s/c%d", dir, n)}, &lc)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Restore(io.NopCloser(bytes.NewReader(snapshotFull(t, a)))); err != nil {
			t.Fatalf("a snapshot of the state does not restore: %v", err)
		}
	})
}
