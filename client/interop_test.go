package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests run against franz-go's kfake, over real TCP and real time:
// franz-go's client (kgo) must read what we write and we must read what it
// writes, idempotent and with every codec, byte for byte.

func newKfake(t testing.TB, brokers int, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func timeoutCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// interopRecords are records with keys, null and empty values, and headers.
func interopRecords(topic string, n int) []*Record {
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]*Record, n)
	for i := range out {
		r := &Record{
			Topic:     topic,
			Key:       []byte(fmt.Sprintf("key-%d", i%7)),
			Value:     bytes.Repeat([]byte{byte(i)}, i%50),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		if i%5 == 0 {
			r.Headers = []RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}, {Key: "empty", Value: []byte{}}}
		}
		out[i] = r
	}
	return out
}

type position struct {
	partition int32
	offset    int64
}

func sameRecord(t *testing.T, what string, want *Record, key, value []byte, headers []RecordHeader, ts time.Time) {
	t.Helper()
	if !bytes.Equal(key, want.Key) || !bytes.Equal(value, want.Value) || !ts.Equal(want.Timestamp) || len(headers) != len(want.Headers) {
		t.Fatalf("%s: got key %q value %q ts %v headers %v, want %+v", what, key, value, ts, headers, want)
	}
	for i, h := range headers {
		if h.Key != want.Headers[i].Key || !bytes.Equal(h.Value, want.Headers[i].Value) {
			t.Fatalf("%s: header %d %+v, want %+v", what, i, h, want.Headers[i])
		}
	}
}

var interopCodecs = []struct {
	name string
	ours Codec
	kgo  kgo.CompressionCodec
}{
	{"none", NoCompression, kgo.NoCompression()},
	{"gzip", GzipCompression, kgo.GzipCompression()},
	{"snappy", SnappyCompression, kgo.SnappyCompression()},
	{"lz4", LZ4Compression, kgo.Lz4Compression()},
	{"zstd", ZstdCompression, kgo.ZstdCompression()},
}

func TestInteropKgoReadsWhatWeProduce(t *testing.T) {
	for _, codec := range interopCodecs {
		t.Run(codec.name, func(t *testing.T) { kgoReadsWhatWeProduce(t, codec.ours) })
	}
}

func kgoReadsWhatWeProduce(t *testing.T, codec Codec) {
	kc := newKfake(t, 3, 3, "interop")
	ctx := timeoutCtx(t)
	p, err := NewProducer(Brokers(kc.ListenAddrs()...), Compression(codec), WithPartitioner(Murmur2Partitioner()))
	if err != nil {
		t.Fatal(err)
	}
	recs := interopRecords("interop", 300)
	if err := p.ProduceSync(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	byPos := map[position]*Record{}
	for _, r := range recs {
		byPos[position{r.Partition, r.Offset}] = r
		// Murmur2Partitioner places keys where the Java client (and kgo's
		// default) would.
		if want := int32((Murmur2(r.Key) & 0x7fffffff) % 3); r.Partition != want {
			t.Fatalf("key %s on partition %d, want %d", r.Key, r.Partition, want)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics("interop"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := 0
	pids := map[int64]bool{}
	for seen < len(recs) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(kr *kgo.Record) {
			want := byPos[position{kr.Partition, kr.Offset}]
			if want == nil {
				t.Fatalf("kgo read %d@%d, which we did not produce", kr.Partition, kr.Offset)
			}
			var hs []RecordHeader
			for _, h := range kr.Headers {
				hs = append(hs, RecordHeader{Key: h.Key, Value: h.Value})
			}
			sameRecord(t, fmt.Sprintf("%d@%d", kr.Partition, kr.Offset), want, kr.Key, kr.Value, hs, kr.Timestamp)
			pids[kr.ProducerID] = true
			seen++
		})
	}
	if len(pids) != 1 || pids[-1] {
		t.Fatalf("producer ids seen %v: want one idempotent producer", pids)
	}
}

func TestInteropWeReadWhatKgoProduces(t *testing.T) {
	for _, codec := range interopCodecs {
		t.Run(codec.name, func(t *testing.T) { weReadWhatKgoProduces(t, codec.kgo) })
	}
}

func weReadWhatKgoProduces(t *testing.T, codec kgo.CompressionCodec) {
	kc := newKfake(t, 3, 3, "interop")
	ctx := timeoutCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ProducerBatchCompression(codec),
		kgo.DefaultProduceTopic("interop"))
	if err != nil {
		t.Fatal(err)
	}
	want := interopRecords("interop", 300)
	krs := make([]*kgo.Record, len(want))
	for i, r := range want {
		kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs[i] = kr
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	byPos := map[position]*Record{}
	for i, kr := range krs {
		if kr.ProducerID < 0 {
			t.Fatal("kgo did not produce idempotently")
		}
		byPos[position{kr.Partition, kr.Offset}] = want[i]
	}

	c, err := NewConsumer(Brokers(kc.ListenAddrs()...), ConsumeTopics("interop"), FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next := map[int32]int64{}
	for seen := 0; seen < len(want); {
		rs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition]++
			w := byPos[position{r.Partition, r.Offset}]
			if w == nil || r.Topic != "interop" {
				t.Fatalf("read %s %d@%d, which kgo did not produce", r.Topic, r.Partition, r.Offset)
			}
			sameRecord(t, fmt.Sprintf("%d@%d", r.Partition, r.Offset), w, r.Key, r.Value, r.Headers, r.Timestamp)
			seen++
		}
	}
}

// Start offsets: At skips records below it, AtEnd sees only new records;
// and the consumer follows a partition to its new leader.
func TestConsumerStartOffsetsAndLeaderMoves(t *testing.T) {
	kc := newKfake(t, 3, 1, "events")
	ctx := timeoutCtx(t)
	p, err := NewProducer(Brokers(kc.ListenAddrs()...), Linger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	produce := func(vals ...string) {
		t.Helper()
		var rs []*Record
		for _, v := range vals {
			rs = append(rs, &Record{Topic: "events", Value: []byte(v)})
		}
		if err := p.ProduceSync(ctx, rs...); err != nil {
			t.Fatal(err)
		}
	}
	produce("a", "b", "c", "d", "e") // one batch: At(3) must skip inside it
	poll := func(c *Consumer, n int) []*Record {
		t.Helper()
		var out []*Record
		for len(out) < n {
			rs, err := c.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rs...)
		}
		return out
	}
	at, err := NewConsumer(Brokers(kc.ListenAddrs()...), ConsumePartitions(map[string]map[int32]Offset{"events": {0: At(3)}}), FetchMaxWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	if got := values(poll(at, 2)); got != "d,e" {
		t.Fatalf("At(3): %s", got)
	}
	end, err := NewConsumer(Brokers(kc.ListenAddrs()...), ConsumePartitions(map[string]map[int32]Offset{"events": {0: AtEnd()}}), FetchMaxWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	short, cancel := context.WithTimeout(ctx, time.Second)
	if rs, err := end.Poll(short); !errors.Is(err, context.DeadlineExceeded) || len(rs) != 0 {
		t.Fatalf("AtEnd on an idle partition: %v %v", values(rs), err)
	}
	cancel()
	if pos, ok := end.Position("events", 0); !ok || pos != 5 {
		t.Fatalf("AtEnd position %d %v", pos, ok)
	}

	old := kc.LeaderFor("events", 0)
	if err := kc.MoveTopicPartition("events", 0, (old+1)%3); err != nil {
		t.Fatal(err)
	}
	produce("f", "g")
	if got := values(poll(end, 2)); got != "f,g" {
		t.Fatalf("after the leader moved: %s", got)
	}
	if got := values(poll(at, 2)); got != "f,g" {
		t.Fatalf("At consumer after the move: %s", got)
	}
}

func TestAdminTopicsAndCluster(t *testing.T) {
	kc := newKfake(t, 3, 2, "existing")
	ctx := timeoutCtx(t)
	a, err := NewAdmin(Brokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.CreateTopic(ctx, "fresh", 4, 1, map[string]string{"retention.ms": "60000"}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateTopic(ctx, "fresh", 4, 1, nil); !errors.Is(err, ErrTopicAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	names, err := a.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "fresh") || !slices.Contains(names, "existing") || !slices.IsSorted(names) {
		t.Fatalf("topics %v", names)
	}
	ds, err := a.DescribeTopics(ctx, "fresh", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].Name != "fresh" || ds[0].Err != nil || len(ds[0].Partitions) != 4 || !errors.Is(ds[1].Err, ErrUnknownTopicOrPartition) {
		t.Fatalf("describe %+v", ds)
	}
	for i, p := range ds[0].Partitions {
		if p.Partition != int32(i) || p.Leader < 0 || len(p.Replicas) == 0 || len(p.ISR) == 0 || p.Err != nil {
			t.Fatalf("partition %+v", p)
		}
	}
	cd, err := a.DescribeCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cd.Brokers) != 3 || cd.Controller < 0 || len(cd.Topics) < 2 {
		t.Fatalf("cluster %+v", cd)
	}
	var existing *TopicDetail
	for i := range cd.Topics {
		if cd.Topics[i].Name == "existing" {
			existing = &cd.Topics[i]
		}
	}
	if existing == nil || len(existing.Partitions) != 2 || existing.Partitions[1].Leader != kc.LeaderFor("existing", 1) {
		t.Fatalf("existing topic %+v", existing)
	}
}

// Control batches (transaction markers) are skipped, and the position
// moves past them.
func TestConsumerSkipsControlBatches(t *testing.T) {
	kc := newKfake(t, 1, 1, "txn")
	ctx := timeoutCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("txn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	c, err := NewConsumer(Brokers(kc.ListenAddrs()...), ConsumeTopics("txn"), FetchMaxWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []*Record
	for len(got) < 3 {
		rs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
	}
	if values(got) != "a,b,c" || got[2].Offset != 2 {
		t.Fatalf("records %s, last offset %d", values(got), got[2].Offset)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if rs, err := c.Poll(short); len(rs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the commit marker: %s %v", values(rs), err)
	}
	if pos, _ := c.Position("txn", 0); pos != 4 {
		t.Fatalf("position %d, want 4 (past the commit marker)", pos)
	}
}
