package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minikafka/minikafka-go/record"
)

// TestProducerUnderRandomFaults produces to three partitions while the
// fake answers at random with retriable errors, lost connections (before
// and after writing), errors after writing, leader moves and the odd
// permanent failure. Whatever happens:
//   - every promise is called exactly once;
//   - nothing is written twice;
//   - a record reported written is in the log at its reported offset;
//   - a failed record is not in the log, unless it failed with a delivery
//     timeout (its fate unknown), and none fails as out of order;
//   - per partition, the log keeps produce order;
//   - the sequences of each producer epoch in a partition's log are
//     contiguous.
var chaosSeeds uint64 = 4

func TestProducerUnderRandomFaults(t *testing.T) {
	for seed := uint64(1); seed <= chaosSeeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { chaos(t, seed) })
		})
	}
}

func chaos(t *testing.T, seed uint64) {
	const parts, n = 3, 300
	f := newFake(t, 2, map[string]int{"events": parts})
	rng := rand.New(rand.NewPCG(seed, 99))
	tried := map[string]bool{} // first value of each batch attempted
	f.onProduce = func(a attempt) fault {
		first := !tried[a.values[0]]
		tried[a.values[0]] = true
		switch x := rng.IntN(100); {
		case x < 8:
			return fault{code: ErrNotLeaderOrFollower.Code}
		case x < 12:
			return fault{code: ErrNotEnoughReplicas.Code}
		case x < 15:
			return fault{codeAfter: ErrRequestTimedOut.Code}
		case x < 18:
			return fault{dropBefore: true}
		case x < 21:
			return fault{dropAfter: true}
		case x < 23:
			return fault{moveLeader: true}
		case x < 24:
			return fault{stall: true}
		case x < 25:
			return fault{stallAfter: true}
		case x < 26 && first:
			// Permanent, so only on a first attempt: a broker refuses the
			// same bytes every time, never after having written them.
			return fault{code: ErrInvalidRecord.Code}
		}
		return fault{}
	}
	p := fakeProducer(t, f, BatchSize(3*45), Linger(time.Millisecond), DeliveryTimeout(40*time.Second),
		RequestTimeout(5*time.Second))
	calls := make([]int, n)
	errs := make([]error, n)
	recs := make([]*Record, n)
	for i := range n {
		r := rec("events", "", fmt.Sprintf("%04d", i))
		r.ExplicitPartition, r.Partition = true, int32(i%parts)
		recs[i] = r
		if err := p.Produce(t.Context(), r, func(_ *Record, err error) {
			calls[i]++
			errs[i] = err
		}); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	logged := map[string]int64{} // value -> offset
	for part := int32(0); part < parts; part++ {
		f.mu.Lock()
		batches := append([][]byte(nil), f.topics["events"][part].batches...)
		f.mu.Unlock()
		last := -1
		seqs := map[[2]int64]int32{} // (pid, epoch) -> next sequence
		for _, b := range batches {
			h, err := record.Check(b)
			if err != nil {
				t.Fatal(err)
			}
			key := [2]int64{h.ProducerID, int64(h.ProducerEpoch)}
			if next, ok := seqs[key]; ok && h.BaseSequence != next {
				t.Fatalf("partition %d: pid %d epoch %d sequence %d after %d", part, h.ProducerID, h.ProducerEpoch, h.BaseSequence, next)
			}
			seqs[key] = h.LastSequence() + 1
			rs, _ := record.AppendRecords(nil, b)
			for _, r := range rs {
				v := string(r.Value)
				if _, dup := logged[v]; dup {
					t.Fatalf("value %s written twice", v)
				}
				logged[v] = r.Offset
				i, _ := strconv.Atoi(v)
				if i <= last {
					t.Fatalf("partition %d: %d written after %d", part, i, last)
				}
				last = i
			}
		}
	}
	ok, failed := 0, 0
	for i, r := range recs {
		v := string(r.Value)
		off, inLog := logged[v]
		switch {
		case calls[i] != 1:
			t.Fatalf("record %d: promise called %d times", i, calls[i])
		case errs[i] == nil:
			ok++
			if !inLog || r.Offset != off {
				t.Fatalf("record %d reported at %d, log has %d (present %v)", i, r.Offset, off, inLog)
			}
		default:
			failed++
			// Only a batch that timed out with its fate unknown may be in
			// the log although it failed.
			if !errors.Is(errs[i], ErrDeliveryTimeout) && inLog {
				t.Fatalf("record %d failed with %v but is in the log", i, errs[i])
			}
			// The fake never loses producer state, so the broker saying
			// out of order to the producer's face means the producer
			// numbered wrong.
			var ke *KafkaError
			if errors.As(errs[i], &ke) && ke.Code == ErrOutOfOrderSequence.Code && !errors.Is(errs[i], ErrDeliveryTimeout) {
				t.Fatalf("record %d failed with %v", i, errs[i])
			}
		}
	}
	if ok == 0 || ok+failed != n {
		t.Fatalf("%d delivered, %d failed of %d", ok, failed, n)
	}
	kinds := map[string]int{}
	for _, err := range errs {
		if err != nil {
			kinds[err.Error()]++
		}
	}
	t.Logf("errors: %v", kinds)
	t.Logf("seed %d: %d delivered, %d failed, %d attempts", seed, ok, failed, len(f.snapshotAttempts()))
}
