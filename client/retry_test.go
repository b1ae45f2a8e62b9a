package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// pipeline produces n one-record batches to events[0] while the fake holds
// produce requests, checks that all n are in flight at once, and then
// releases them. It returns the promise results in call order.
func pipeline(t *testing.T, f *fake, p *Producer, n int) []result {
	t.Helper()
	warm(t, p)
	f.hold()
	var res []result
	for i := range n {
		r := rec("events", "", fmt.Sprint(i))
		r.ExplicitPartition = true
		if err := p.Produce(t.Context(), r, collector(&res)); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Wait()
	if got := f.producesReceived(); got != 1+n {
		t.Fatalf("%d produce requests reached the broker, want %d in flight", got-1, n)
	}
	f.release()
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	return res
}

// checkInOrder checks results and the log: every record once, in send
// order, offsets matching.
func checkInOrder(t *testing.T, f *fake, res []result, n int) {
	t.Helper()
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for i, r := range res {
		if r.err != nil || string(r.r.Value) != fmt.Sprint(i) || r.r.Offset != int64(1+i) {
			t.Fatalf("result %d: value %s offset %d err %v", i, r.r.Value, r.r.Offset, r.err)
		}
	}
	want := []string{"warm"}
	for i := range n {
		want = append(want, fmt.Sprint(i))
	}
	if got := f.logValues("events", 0); !slices.Equal(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
}

// sameSequences checks that every attempt of a value carried the same
// producer id, epoch and sequence: retries reuse their numbers.
func sameSequences(t *testing.T, as []attempt) map[string]int {
	t.Helper()
	first := map[string]attempt{}
	count := map[string]int{}
	for _, a := range as {
		v := a.values[0]
		count[v]++
		if f, ok := first[v]; ok {
			if f.pid != a.pid || f.epoch != a.epoch || f.seq != a.seq {
				t.Fatalf("value %s retried as pid %d epoch %d seq %d, first sent as %d/%d/%d", v, a.pid, a.epoch, a.seq, f.pid, f.epoch, f.seq)
			}
		} else {
			first[v] = a
		}
	}
	return count
}

// With 5 requests in flight, a retriable failure of the second keeps the
// order: the broker refuses the later ones as out of order, and the
// producer resends the second and everything after it, in order, with the
// same sequences.
func TestRetriesKeepOrderWithFiveInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		failed := false
		f.onProduce = func(a attempt) fault {
			if a.values[0] == "1" && !failed {
				failed = true
				return fault{code: ErrNotEnoughReplicas.Code}
			}
			return fault{}
		}
		p := fakeProducer(t, f, BatchSize(1), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		res := pipeline(t, f, p, 5)
		checkInOrder(t, f, res, 5)
		count := sameSequences(t, f.snapshotAttempts())
		for _, v := range []string{"0", "1", "2", "3", "4"} {
			want := 2 // refused (or failed) once, then accepted
			if v == "0" {
				want = 1
			}
			if count[v] != want {
				t.Fatalf("value %s sent %d times, want %d (attempts %v)", v, count[v], want, count)
			}
		}
		var codes []int16
		for _, a := range f.snapshotAttempts()[1:6] {
			codes = append(codes, a.code)
		}
		if !slices.Equal(codes, []int16{0, ErrNotEnoughReplicas.Code, ErrOutOfOrderSequence.Code, ErrOutOfOrderSequence.Code, ErrOutOfOrderSequence.Code}) {
			t.Fatalf("first round answers %v", codes)
		}
	})
}

// A response lost after the broker appended: the retry is a duplicate,
// which the broker answers with the original offset, and nothing is
// written twice.
func TestLostResponseRetryIsDeduplicated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		dropped := false
		f.onProduce = func(a attempt) fault {
			if a.values[0] == "1" && !dropped {
				dropped = true
				return fault{dropAfter: true}
			}
			return fault{}
		}
		p := fakeProducer(t, f, BatchSize(1), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		res := pipeline(t, f, p, 5)
		checkInOrder(t, f, res, 5)
		count := sameSequences(t, f.snapshotAttempts())
		if count["1"] != 2 {
			t.Fatalf("value 1 sent %d times, want 2", count["1"])
		}
	})
}

// A leader change: NOT_LEADER_OR_FOLLOWER makes the producer refresh its
// metadata and send to the new leader.
func TestNotLeaderRefreshesMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 2, map[string]int{"events": 1})
		p := fakeProducer(t, f)
		warm(t, p)
		f.moveLeader("events", 0, 2)
		r := rec("events", "", "moved")
		if err := p.ProduceSync(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		as := f.snapshotAttempts()
		last := as[len(as)-1]
		if last.node != 2 || last.code != 0 || r.Offset != 1 {
			t.Fatalf("last attempt %+v, offset %d", last, r.Offset)
		}
		if as[len(as)-2].code != ErrNotLeaderOrFollower.Code || as[len(as)-2].node != 1 {
			t.Fatalf("the old leader should have refused first: %+v", as)
		}
	})
}

// A connection lost before anything is written: retried, and delivered.
func TestConnectionLossIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		drops := 0
		f.onProduce = func(a attempt) fault {
			if drops < 2 {
				drops++
				return fault{dropBefore: true}
			}
			return fault{}
		}
		p := fakeProducer(t, f)
		if err := p.ProduceSync(t.Context(), rec("events", "", "x")); err != nil {
			t.Fatal(err)
		}
		if got := f.logValues("events", 0); !slices.Equal(got, []string{"x"}) {
			t.Fatalf("log %v", got)
		}
	})
}

// A batch that cannot be delivered fails after DeliveryTimeout with the
// last error wrapped.
func TestDeliveryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		f.onProduce = func(attempt) fault { return fault{code: ErrNotEnoughReplicas.Code} }
		p := fakeProducer(t, f, DeliveryTimeout(time.Minute))
		start := time.Now()
		err := p.ProduceSync(t.Context(), rec("events", "", "x"))
		var de *DeliveryTimeoutError
		if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, ErrNotEnoughReplicas) || !errors.As(err, &de) || de.Topic != "events" {
			t.Fatalf("err %v", err)
		}
		if took := time.Since(start); took < time.Minute || took > time.Minute+2*time.Second {
			t.Fatalf("failed after %v, want about the delivery timeout", took)
		}
	})
}

// A batch whose outcome stays unknown until its delivery timeout fails,
// and the producer moves to a new epoch before numbering anything else, so
// that the ambiguous sequence can never be reused.
func TestAmbiguousFailureBumpsTheEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		f.onProduce = func(a attempt) fault {
			if a.values[0] == "lost" {
				return fault{code: ErrRequestTimedOut.Code} // may have been written
			}
			return fault{}
		}
		p := fakeProducer(t, f, DeliveryTimeout(time.Minute))
		warm(t, p)
		err := p.ProduceSync(t.Context(), rec("events", "", "lost"))
		if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, ErrRequestTimedOut) {
			t.Fatalf("err %v", err)
		}
		if err := p.ProduceSync(t.Context(), rec("events", "", "after")); err != nil {
			t.Fatal(err)
		}
		as := f.snapshotAttempts()
		first, last := as[0], as[len(as)-1]
		if last.values[0] != "after" || last.pid != first.pid || last.epoch != first.epoch+1 || last.seq != 0 {
			t.Fatalf("after the ambiguous failure: %+v (first %+v)", last, first)
		}
	})
}

// A second producer with the same TransactionalName gets the same id and a
// higher epoch; the first is fenced and fails every record from then on
// with a FencedError.
func TestTransactionalNameFencesTheOlderProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		a := fakeProducer(t, f, TransactionalName("orders"))
		if err := a.ProduceSync(t.Context(), rec("events", "", "a1")); err != nil {
			t.Fatal(err)
		}
		b := fakeProducer(t, f, TransactionalName("orders"))
		if err := b.ProduceSync(t.Context(), rec("events", "", "b1")); err != nil {
			t.Fatal(err)
		}
		as := f.snapshotAttempts()
		if as[0].pid != as[1].pid || as[1].epoch != as[0].epoch+1 {
			t.Fatalf("identities %+v %+v: want the same id, epoch+1", as[0], as[1])
		}
		err := a.ProduceSync(t.Context(), rec("events", "", "a2"))
		var fe *FencedError
		if !errors.Is(err, ErrProducerFenced) || !errors.As(err, &fe) || fe.ProducerID != as[0].pid || !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("fenced producer: %v", err)
		}
		if err := a.Produce(t.Context(), rec("events", "", "a3"), nil); !errors.Is(err, ErrProducerFenced) {
			t.Fatalf("produce after fencing: %v", err)
		}
		if got := f.logValues("events", 0); !slices.Equal(got, []string{"a1", "b1"}) {
			t.Fatalf("log %v", got)
		}
	})
}

// Close flushes what is buffered and then refuses records.
func TestCloseFlushesThenRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f, Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		var res []result
		if err := p.Produce(t.Context(), rec("events", "", "x"), collector(&res)); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].err != nil || res[0].r.Offset != 0 {
			t.Fatalf("results %+v", res)
		}
		if err := p.Produce(t.Context(), rec("events", "", "y"), nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	})
}

// A batch that fails for good in the middle of the pipeline frees its
// sequences: the batches behind it, refused as out of order, are
// renumbered to follow the last written batch and then succeed, in order.
func TestDefinitiveFailureMidPipelineRenumbersLaterBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		f.onProduce = func(a attempt) fault {
			if a.values[0] == "1" {
				return fault{code: ErrMessageTooLarge.Code}
			}
			return fault{}
		}
		p := fakeProducer(t, f, BatchSize(1), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		res := pipeline(t, f, p, 5)
		for i, r := range res {
			if (i == 1) != (r.err != nil) || (i == 1 && !errors.Is(r.err, ErrMessageTooLarge)) {
				t.Fatalf("result %d: %v", i, r.err)
			}
		}
		if got := f.logValues("events", 0); !slices.Equal(got, []string{"warm", "0", "2", "3", "4"}) {
			t.Fatalf("log %v", got)
		}
		seqOf := map[string]int32{}
		for _, a := range f.snapshotAttempts() {
			if a.code == 0 {
				seqOf[a.values[0]] = a.seq
			}
		}
		if seqOf["0"] != 1 || seqOf["2"] != 2 || seqOf["3"] != 3 || seqOf["4"] != 4 {
			t.Fatalf("written sequences %v: want 2, 3, 4 renumbered into the freed range", seqOf)
		}
	})
}

// After a batch fails, nothing more of its partition is sent (no retry, no
// new batch) until every batch in flight behind it has come back, however
// long that takes; then everything is resent in order.
func TestFailedRoundWaitsForInFlightBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		failed := false
		f.onProduce = func(a attempt) fault {
			if a.values[0] == "1" && !failed {
				failed = true
				f.gate = make(chan struct{}) // hold the rest (f.mu is held here)
				return fault{code: ErrNotEnoughReplicas.Code}
			}
			return fault{}
		}
		p := fakeProducer(t, f, BatchSize(1), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		warm(t, p)
		f.hold()
		var res []result
		produce := func(v string) {
			r := rec("events", "", v)
			r.ExplicitPartition = true
			if err := p.Produce(t.Context(), r, collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			produce(fmt.Sprint(i))
		}
		synctest.Wait()
		f.release() // 0 is written, 1 fails, 2 and 3 wait at the new gate
		synctest.Wait()
		produce("4")
		time.Sleep(10 * time.Second) // far past the retry backoff
		synctest.Wait()
		if got := f.producesReceived(); got != 5 {
			t.Fatalf("%d produce requests: something was sent while 2 and 3 were in flight", got)
		}
		f.release()
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		checkInOrder(t, f, res, 5)
	})
}
