package client

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func rec(topic, key, value string) *Record {
	r := &Record{Topic: topic, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

// P1: a key goes to crc32(key) % n, the same partition every time, and the
// seed's lab: three sends with key "same" on two partitions land on
// partition 0 in one batch, offsets 0-2 (P5, P6).
func TestP1KeyedRecordsShareAPartitionAndABatch(t *testing.T) {
	if got := crc32.ChecksumIEEE([]byte("same")) % 2; got != 0 {
		t.Fatalf("crc32(same) %% 2 = %d; the lab expects 0", got)
	}
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 2})
		p := fakeProducer(t, f, Linger(time.Second))
		var res []result
		for i := range 3 {
			if err := p.Produce(t.Context(), rec("events", "same", fmt.Sprint(i)), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.err != nil || r.r.Partition != 0 || r.r.Offset != int64(i) || string(r.r.Value) != fmt.Sprint(i) {
				t.Fatalf("result %d: partition %d offset %d value %s err %v", i, r.r.Partition, r.r.Offset, r.r.Value, r.err)
			}
		}
		if n := f.batchCount("events", 0); n != 1 {
			t.Fatalf("%d batches on partition 0, want 1", n)
		}
		closeAll(t, p, f)
	})
}

func TestCRC32PartitionerIsStableAndMatchesZlib(t *testing.T) {
	p := CRC32Partitioner()
	for _, key := range []string{"a", "same", "user-42", "ü"} {
		want := int32(crc32.ChecksumIEEE([]byte(key)) % 7)
		for range 3 {
			got, sticky := p.Partition(&Record{Key: []byte(key)}, 7)
			if got != want || sticky {
				t.Fatalf("key %q: partition %d sticky %v, want %d", key, got, sticky, want)
			}
		}
	}
	// zlib.crc32(b"hello") == 907060870 in Python.
	if got, _ := p.Partition(&Record{Key: []byte("hello")}, 1000); got != 907060870%1000 {
		t.Fatalf("hello: %d", got)
	}
}

// Murmur2 vectors from Kafka's UtilsTest.testMurmur2 and the partition a
// Java producer picks (toPositive(murmur2) % n).
func TestMurmur2MatchesTheJavaClient(t *testing.T) {
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc":   479470107,
		"1":     -1993445489,
		"12":    126087238,
		"12345": -1188365604,
	} {
		if got := Murmur2([]byte(key)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", key, got, want)
		}
	}
	p := Murmur2Partitioner()
	got, _ := p.Partition(&Record{Key: []byte("foobar")}, 10)
	if want := int32((-790332482 & 0x7fffffff) % 10); got != want {
		t.Fatalf("murmur2 partition %d, want %d", got, want)
	}
}

// P2: keyless records stick to one partition per partition count, from 0,
// moving to (p+1)%n only when a batch holding them closes.
func TestP2StickyKeylessMovesOnlyWhenABatchCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 3})
		p := fakeProducer(t, f, BatchSize(1), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		var got []int32
		for _, v := range []string{"a", "b", "c"} {
			r := rec("events", "", v)
			if err := p.ProduceSync(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Partition)
		}
		if !slices.Equal(got, []int32{0, 1, 2}) {
			t.Fatalf("sync keyless partitions %v, want [0 1 2]", got)
		}
		// Asynchronous sends: each batch of one closes at once, so the
		// sticky partition moves before the next record.
		var res []result
		for _, v := range []string{"d", "e", "f"} {
			if err := p.Produce(t.Context(), rec("events", "", v), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(res, func(a, b result) int { return int(a.r.Value[0]) - int(b.r.Value[0]) })
		for i, r := range res {
			if r.err != nil || r.r.Partition != int32(i) {
				t.Fatalf("async record %s: partition %d err %v", r.r.Value, r.r.Partition, r.err)
			}
		}
		closeAll(t, p, f)
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 3})
		p := fakeProducer(t, f, Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		a, b := rec("events", "", "a"), rec("events", "", "b")
		for _, r := range []*Record{a, b} {
			if err := p.Produce(t.Context(), r, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The batch is still open: both records share partition 0.
		if a.Partition != 0 || b.Partition != 0 {
			t.Fatalf("open batch: partitions %d %d, want 0 0", a.Partition, b.Partition)
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		c := rec("events", "", "c")
		if err := p.ProduceSync(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if c.Partition != 1 {
			t.Fatalf("after the batch closed: partition %d, want 1", c.Partition)
		}
		if n := f.batchCount("events", 0); n != 1 {
			t.Fatalf("%d batches on partition 0, want 1", n)
		}
		// An explicit partition wins over the partitioner.
		d := rec("events", "same", "d")
		d.ExplicitPartition, d.Partition = true, 2
		if err := p.ProduceSync(t.Context(), d); err != nil || d.Partition != 2 {
			t.Fatalf("explicit: partition %d err %v", d.Partition, err)
		}
		closeAll(t, p, f)
	})
}

// P3: over the buffer limit a send fails at once with ErrBufferFull, and
// what was buffered still delivers.
func TestP3BufferFullFailsTheSendAndKeepsTheBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		// Each record is estimated 39+0+10 = 49 bytes; room for two.
		p := fakeProducer(t, f, BufferLimit(100), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		var res []result
		for i := range 2 {
			if err := p.Produce(t.Context(), rec("events", "", fmt.Sprintf("value-%04d", i)), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		err := p.Produce(t.Context(), rec("events", "", "value-0002"), collector(&res))
		if !errors.Is(err, ErrBufferFull) {
			t.Fatalf("third record: %v, want ErrBufferFull", err)
		}
		if err := p.Produce(t.Context(), rec("events", "", string(make([]byte, 100))), nil); !errors.Is(err, ErrRecordTooLarge) {
			t.Fatalf("oversized record: %v", err)
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].err != nil || res[1].err != nil {
			t.Fatalf("buffered records: %+v", res)
		}
		if got := f.logValues("events", 0); !slices.Equal(got, []string{"value-0000", "value-0001"}) {
			t.Fatalf("log %v", got)
		}
		// With the space released, the same send now succeeds.
		if err := p.ProduceSync(t.Context(), rec("events", "", "value-0002")); err != nil {
			t.Fatal(err)
		}
		closeAll(t, p, f)
	})
}

// P3, blocking mode: a full buffer makes Produce wait, bounded by ctx, and
// room made by a delivery lets it through.
func TestBlockOnBufferFullWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f, BufferLimit(100), Linger(50*time.Millisecond), BlockOnBufferFull())
		for i := range 2 {
			if err := p.Produce(t.Context(), rec("events", "", fmt.Sprintf("value-%04d", i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		err := p.Produce(ctx, rec("events", "", "value-0002"), nil)
		cancel()
		if !errors.Is(err, ErrBufferFull) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("blocked send with short ctx: %v", err)
		}
		start := time.Now()
		if err := p.Produce(t.Context(), rec("events", "", "value-0002"), nil); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 30*time.Millisecond {
			t.Fatalf("Produce returned after %v, before linger freed the buffer", waited)
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := f.logValues("events", 0); len(got) != 3 {
			t.Fatalf("log %v", got)
		}
		closeAll(t, p, f)
	})
}

// P4: a batch closes when its estimated bytes reach BatchSize (sent at
// once), when its oldest record has waited Linger, or on Flush; nothing
// else closes it.
func TestP4WhatClosesABatch(t *testing.T) {
	const v = "0123456789" // 49 estimated bytes per keyless record
	t.Run("size", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t, 1, map[string]int{"events": 1})
			p := fakeProducer(t, f, BatchSize(3*49), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
			warm(t, p)
			for range 2 {
				if err := p.Produce(t.Context(), rec("events", "", v), nil); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(30 * time.Minute)
			synctest.Wait()
			if n := f.producesReceived(); n != 1 { // the warm-up only
				t.Fatalf("%d produce requests below the batch size", n)
			}
			if err := p.Produce(t.Context(), rec("events", "", v), nil); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // no time passes: the size closes the batch
			if n := f.producesReceived(); n != 2 {
				t.Fatalf("%d produce requests after reaching the batch size, want 2", n)
			}
			if n := f.batchCount("events", 0); n != 2 {
				t.Fatalf("%d batches, want 2", n)
			}
			closeAll(t, p, f)
		})
	})
	t.Run("linger", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t, 1, map[string]int{"events": 1})
			p := fakeProducer(t, f, Linger(50*time.Millisecond))
			warm(t, p)
			if err := p.Produce(t.Context(), rec("events", "", v), nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(49 * time.Millisecond)
			synctest.Wait()
			if n := f.producesReceived(); n != 1 {
				t.Fatalf("sent before linger: %d requests", n)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if n := f.producesReceived(); n != 2 {
				t.Fatalf("not sent at linger: %d requests", n)
			}
			closeAll(t, p, f)
		})
	})
	t.Run("flush", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t, 1, map[string]int{"events": 1})
			p := fakeProducer(t, f, Linger(time.Hour), DeliveryTimeout(2*time.Hour))
			warm(t, p)
			if err := p.Produce(t.Context(), rec("events", "", v), nil); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if n := f.producesReceived(); n != 1 {
				t.Fatalf("sent without a reason: %d requests", n)
			}
			start := time.Now()
			if err := p.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if time.Since(start) != 0 || f.producesReceived() != 2 {
				t.Fatalf("flush took %v and made %d requests", time.Since(start), f.producesReceived())
			}
			closeAll(t, p, f)
		})
	})
}

// warm produces one record to learn the metadata and the producer id, so
// that later request counts are only about batching.
func warm(t *testing.T, p *Producer) {
	t.Helper()
	r := rec("events", "", "warm")
	r.ExplicitPartition = true
	if err := p.Produce(t.Context(), r, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// P5/P6: one batch, N promises, consecutive offsets from the batch's base
// offset; with acks=0 the offset is unknown (-1).
func TestP5P6OneBatchConsecutiveOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f, Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		warm(t, p) // offset 0
		var res []result
		for i := range 5 {
			if err := p.Produce(t.Context(), rec("events", "k", fmt.Sprint(i)), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(res) != 5 {
			t.Fatalf("%d results", len(res))
		}
		for i, r := range res {
			if r.err != nil || r.r.Offset != int64(1+i) || r.r.Topic != "events" || r.r.Partition != 0 || string(r.r.Value) != fmt.Sprint(i) {
				t.Fatalf("result %d: %+v err %v", i, r.r, r.err)
			}
		}
		if n := f.batchCount("events", 0); n != 2 {
			t.Fatalf("%d batches, want the warm-up and one more", n)
		}
		closeAll(t, p, f)
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f, Idempotence(false), RequiredAcks(NoAck), Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		var res []result
		for i := range 3 {
			if err := p.Produce(t.Context(), rec("events", "k", fmt.Sprint(i)), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.err != nil || r.r.Offset != -1 {
				t.Fatalf("acks=0 result: offset %d err %v", r.r.Offset, r.err)
			}
		}
		synctest.Wait()
		if got := f.logValues("events", 0); len(got) != 3 {
			t.Fatalf("acks=0 log %v", got)
		}
		closeAll(t, p, f)
	})
}

// P7: a failing batch fails all its records with the same error, and the
// sequence does not advance: the next batch reuses it.
func TestP7FailedBatchFailsAllRecordsAndKeepsTheSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		f.onProduce = func(a attempt) fault {
			if a.values[0] == "bad" {
				return fault{code: ErrMessageTooLarge.Code}
			}
			return fault{}
		}
		p := fakeProducer(t, f, Linger(time.Hour), DeliveryTimeout(2*time.Hour))
		var res []result
		for _, v := range []string{"bad", "x", "y"} {
			if err := p.Produce(t.Context(), rec("events", "k", v), collector(&res)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(res) != 3 {
			t.Fatalf("%d results", len(res))
		}
		for _, r := range res {
			if !errors.Is(r.err, ErrMessageTooLarge) || r.err != res[0].err {
				t.Fatalf("record %s: %v, want the batch's one error", r.r.Value, r.err)
			}
		}
		if err := p.ProduceSync(t.Context(), rec("events", "k", "good")); err != nil {
			t.Fatal(err)
		}
		as := f.snapshotAttempts()
		if len(as) != 2 || as[0].seq != 0 || as[1].seq != 0 || as[0].pid != as[1].pid || as[1].code != 0 {
			t.Fatalf("attempts %+v: want the failed and the next batch both at sequence 0", as)
		}
		closeAll(t, p, f)
	})
}

// P8: idempotence forces acks=all; an explicit conflict is a constructor
// error. Options of the wrong kind are rejected too.
func TestP8IdempotenceRejectsOtherAcks(t *testing.T) {
	for _, acks := range []Acks{NoAck, LeaderAck} {
		_, err := NewProducer(Brokers("x:1"), RequiredAcks(acks))
		var ce *ConfigError
		if !errors.Is(err, ErrIdempotenceNeedsAcksAll) || !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Option != "RequiredAcks" {
			t.Fatalf("acks %v: %v", acks, err)
		}
		p, err := NewProducer(Brokers("x:1"), RequiredAcks(acks), Idempotence(false))
		if err != nil {
			t.Fatalf("acks %v without idempotence: %v", acks, err)
		}
		p.Close(context.Background())
	}
	for name, opts := range map[string][]Opt{
		"no brokers":       {},
		"txn without idem": {Brokers("x:1"), TransactionalName("t"), Idempotence(false)},
		"consumer option":  {Brokers("x:1"), ConsumeTopics("t")},
		"in flight":        {Brokers("x:1"), MaxInFlight(6)},
		"codec":            {Brokers("x:1"), Compression(Codec(9))},
	} {
		if _, err := NewProducer(opts...); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewConsumer(Brokers("x:1"), BatchSize(1)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("producer option on a consumer: %v", err)
	}
}

// The first record of a topic waits for its metadata; a topic that does
// not exist fails the send when ctx ends, with the broker's error.
func TestProduceToUnknownTopicFailsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		p := fakeProducer(t, f)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := p.Produce(ctx, rec("nope", "", "x"), nil)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnknownTopicOrPartition) {
			t.Fatalf("err %v", err)
		}
		if err := p.Produce(t.Context(), &Record{Value: []byte("x")}, nil); !errors.Is(err, ErrNoTopic) {
			t.Fatalf("no topic: %v", err)
		}
		r := rec("events", "", "x")
		r.ExplicitPartition, r.Partition = true, 7
		if err := p.Produce(t.Context(), r, nil); !errors.Is(err, ErrUnknownTopicOrPartition) {
			t.Fatalf("partition 7 of 1: %v", err)
		}
	})
}

// A broker that does not know our ApiVersions version answers with the
// version to use (KIP-511); the connection retries with it.
func TestApiVersionsFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, 1, map[string]int{"events": 1})
		f.apiVersionsMax = 1
		p := fakeProducer(t, f)
		if err := p.ProduceSync(t.Context(), rec("events", "", "x")); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if !slices.Equal(f.apiVersionsSeen[:2], []int16{3, 1}) {
			t.Fatalf("ApiVersions versions tried %v, want 3 then 1", f.apiVersionsSeen)
		}
	})
}
