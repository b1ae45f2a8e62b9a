package client_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/client"
)

// Interop against our own cluster: what our producer writes, franz-go's
// consumer reads byte for byte, and what franz-go's idempotent producer
// writes with lz4, our consumer reads byte for byte.

const interopParts = 3

// interopRecord is one record as both clients see it.
type interopRecord struct {
	key, value []byte // nil is null
	headers    [][2][]byte
	ts         time.Time
}

// interopSet is n records with keys and without, null, empty and binary
// values, headers (an empty header value among them), and millisecond
// timestamps.
func interopSet(n int) []interopRecord {
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]interopRecord, n)
	for i := range out {
		r := interopRecord{ts: base.Add(time.Duration(i) * time.Millisecond)}
		if i%4 != 0 {
			r.key = []byte(fmt.Sprintf("key-%d", i%9))
		}
		switch i % 10 {
		case 3:
			r.value = nil
		case 4:
			r.value = []byte{}
		default:
			r.value = bytes.Repeat([]byte{byte(i), 0, 0xff}, 1+i%40)
		}
		if i%5 == 0 {
			r.headers = [][2][]byte{{[]byte("h"), []byte(fmt.Sprint(i))}, {[]byte("empty"), {}}}
		}
		out[i] = r
	}
	return out
}

// sameBytes compares byte slices, null (nil) apart from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func checkInterop(t *testing.T, where string, want interopRecord, key, value []byte, headers [][2][]byte, ts time.Time) {
	t.Helper()
	if !sameBytes(key, want.key) || !sameBytes(value, want.value) || !ts.Equal(want.ts) || len(headers) != len(want.headers) {
		t.Fatalf("%s: got key %q value %q ts %v headers %q; want key %q value %q ts %v headers %q",
			where, key, value, ts, headers, want.key, want.value, want.ts, want.headers)
	}
	for i, h := range headers {
		if string(h[0]) != string(want.headers[i][0]) || !bytes.Equal(h[1], want.headers[i][1]) {
			t.Fatalf("%s: header %d is %q, want %q", where, i, h, want.headers[i])
		}
	}
}

type partOffset struct {
	partition int32
	offset    int64
}

func TestClusterInterop(t *testing.T) {
	c := startCluster(t, map[string]int32{"ours-to-kgo": interopParts, "kgo-to-ours": interopParts})
	seeds := c.Seeds()
	const n = 500

	t.Run("kgo reads what we produce", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		set := interopSet(n)
		p, err := client.NewProducer(client.Brokers(seeds...), client.Compression(client.GzipCompression))
		if err != nil {
			t.Fatal(err)
		}
		recs := make([]*client.Record, n)
		for i, r := range set {
			recs[i] = &client.Record{Topic: "ours-to-kgo", Key: r.key, Value: r.value, Timestamp: r.ts}
			for _, h := range r.headers {
				recs[i].Headers = append(recs[i].Headers, client.RecordHeader{Key: string(h[0]), Value: h[1]})
			}
		}
		if err := p.ProduceSync(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		byPos := map[partOffset]int{}
		for i, r := range recs {
			byPos[partOffset{r.Partition, r.Offset}] = i
		}

		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("ours-to-kgo"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[int]bool{}
		pids := map[int64]bool{}
		for len(seen) < n {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("kgo read %d of %d records: %v", len(seen), n, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Logf("kgo fetch %s[%d]: %v", topic, p, err) })
			fs.EachRecord(func(kr *kgo.Record) {
				where := fmt.Sprintf("%d@%d", kr.Partition, kr.Offset)
				i, ok := byPos[partOffset{kr.Partition, kr.Offset}]
				if !ok || seen[i] {
					t.Fatalf("kgo read %s, which we did not produce there (or read it twice)", where)
				}
				seen[i] = true
				var hs [][2][]byte
				for _, h := range kr.Headers {
					hs = append(hs, [2][]byte{[]byte(h.Key), h.Value})
				}
				checkInterop(t, where, set[i], kr.Key, kr.Value, hs, kr.Timestamp)
				pids[kr.ProducerID] = true
			})
		}
		if len(pids) != 1 || pids[-1] {
			t.Fatalf("producer ids %v: want the one id of our idempotent producer", pids)
		}
	})

	t.Run("we read what kgo produces", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		set := interopSet(n)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
			kgo.RequiredAcks(kgo.AllISRAcks())) // idempotent: kgo's default
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		krs := make([]*kgo.Record, n)
		for i, r := range set {
			krs[i] = &kgo.Record{Topic: "kgo-to-ours", Key: r.key, Value: r.value, Timestamp: r.ts}
			for _, h := range r.headers {
				krs[i].Headers = append(krs[i].Headers, kgo.RecordHeader{Key: string(h[0]), Value: h[1]})
			}
		}
		if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		byPos := map[partOffset]int{}
		ends := map[int32]int64{}
		for i, kr := range krs {
			if kr.ProducerID < 0 {
				t.Fatalf("kgo produced record %d without a producer id: not idempotent", i)
			}
			byPos[partOffset{kr.Partition, kr.Offset}] = i
			ends[kr.Partition] = max(ends[kr.Partition], kr.Offset+1)
		}
		got := consumeRange(t, seeds, "kgo-to-ours", ends)
		seen := 0
		for part, recs := range got {
			next := int64(0)
			for _, r := range recs {
				where := fmt.Sprintf("%d@%d", part, r.Offset)
				if r.Offset != next {
					t.Fatalf("%s: expected offset %d next", where, next)
				}
				next++
				i, ok := byPos[partOffset{part, r.Offset}]
				if !ok {
					t.Fatalf("we read %s, which kgo did not produce", where)
				}
				var hs [][2][]byte
				for _, h := range r.Headers {
					hs = append(hs, [2][]byte{[]byte(h.Key), h.Value})
				}
				checkInterop(t, where, set[i], r.Key, r.Value, hs, r.Timestamp)
				seen++
			}
		}
		if seen != n {
			t.Fatalf("read %d of %d records", seen, n)
		}
	})
}
