package interop

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// readCompacted reads partition 0 of topic from the start until a poll
// of a second finds nothing more (the topic is quiet), and returns each
// key's last value ("" for a tombstone), how many records it read and
// whether their offsets rose.
func readCompacted(t *testing.T, c *testcluster.Cluster, topic string) (map[string]string, int, bool) {
	t.Helper()
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	latest, n, last, rising := map[string]string{}, 0, int64(-1), true
	for empty := 0; empty < 2; {
		ctx, cancel := context.WithTimeout(testContext(t), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			rising = rising && r.Offset > last
			last = r.Offset
			latest[string(r.Key)] = string(r.Value)
			n++
			got++
		})
		if got == 0 {
			empty++
		}
	}
	return latest, n, rising
}

// The acceptance case of issue 30 on a 3-node cluster: 200 keys of 10
// versions each and tombstones for 20 keys in a compacted topic. Within a
// minute a from-beginning read by franz-go returns exactly the latest
// version of each live key, and no tombstone once delete.retention.ms has
// passed; offsets rise, the log start and end stay; the idempotent
// producer goes on producing across the cleanings; a record without a key
// is refused with INVALID_RECORD. kcat (librdkafka) reads the same.
func TestCompactedTopic(t *testing.T) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.CleanerBackoff = 300 * time.Millisecond })
	adm := kadm.NewClient(c.Client(t))
	cfgs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "delete.retention.ms": kadm.StringPtr("2000")}
	if resp, err := adm.CreateTopic(testContext(t), 1, 3, cfgs, "table"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	c.Leader("table", 0, timeout)
	// gzip: the one codec every client reads without a plugin (kafkajs).
	p := c.Client(t, kgo.DefaultProduceTopic("table"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.GzipCompression()))
	produceAll := func(recs []*kgo.Record) {
		t.Helper()
		if err := p.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for v := range 10 {
		var recs []*kgo.Record
		for k := range 200 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%03d", k)), Value: []byte(fmt.Sprintf("v%d", v))})
		}
		produceAll(recs)
	}
	var tombs []*kgo.Record
	for k := range 20 {
		tombs = append(tombs, &kgo.Record{Key: []byte(fmt.Sprintf("k%03d", k*10))})
	}
	produceAll(tombs)
	const end = 2020
	if ends, err := adm.ListEndOffsets(testContext(t), "table"); err != nil {
		t.Fatal(err)
	} else if e, _ := ends.Lookup("table", 0); e.Offset != end {
		t.Fatalf("high watermark %d, want %d", e.Offset, end)
	}
	err := p.ProduceSync(testContext(t), &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a record without a key: %v, want INVALID_RECORD", err)
	}

	deadline := time.Now().Add(time.Minute)
	for {
		latest, n, rising := readCompacted(t, c, "table")
		live, tombstones := 0, 0
		for _, v := range latest {
			if v == "" {
				tombstones++
			} else if v == "v9" {
				live++
			}
		}
		if !rising {
			t.Fatal("offsets did not rise")
		}
		if n == 180 && live == 180 && tombstones == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d records read, %d live keys at v9, %d tombstones; want 180, 180, 0", n, live, tombstones)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The idempotent producer that wrote before the cleanings goes on.
	produceAll([]*kgo.Record{{Key: []byte("k199"), Value: []byte("v10")}})
	starts, err := adm.ListStartOffsets(testContext(t), "table")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("table", 0); s.Offset != 0 {
		t.Fatalf("log start %d after cleaning, want 0", s.Offset)
	}
	if _, err := exec.LookPath("kcat"); err == nil {
		out := kcat(t, c, "", "-C", "-e", "-q", "-t", "table", "-o", "beginning", "-c", "180", "-f", `%k=%s\n`)
		if got := strings.Count(out, "=v9\n"); got != 180 {
			t.Fatalf("kcat read %d records at v9 of the first 180, want 180:\n%s", got, out)
		}
	}
	readByEveryClient(t, c.Seeds(), "table", end)
}

// readByEveryClient has each client of the group suite but franz-go read
// partition 0 of a cleaned topic from the start, as a group member, and
// checks that it reads what franz-go reads, through to the record at
// offset last: a cleaned log has offset gaps and batches that lost every
// record, which a client must step over.
func readByEveryClient(t *testing.T, seeds []string, topic string, last int64) {
	t.Helper()
	want := readRecords(t, seeds, topic, last)
	for _, cl := range []groupClient{saramaClient(), kafkaGoClient(), confluentClient(), kafkajsClient()} {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			m := cl.join(t, seeds, "read-"+cl.name, topic)
			defer m.close()
			await(t, cl.name+" reads the cleaned log to its end", groupWait, func() error {
				_, got, _ := m.log.snapshot()
				if len(got) == 0 || got[len(got)-1].Offset < last {
					return fmt.Errorf("read %d records", len(got))
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("%w: read %d records %v, franz-go read %d %v", errFatal, len(got), got, len(want), want)
				}
				return nil
			}, m)
		})
	}
}

// readRecords is franz-go's read of partition 0 of topic from the start
// through offset last.
func readRecords(t *testing.T, seeds []string, topic string, last int64) []record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []record
	for len(out) == 0 || out[len(out)-1].Offset < last {
		fs := cl.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatalf("franz-go read of %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, record{r.Partition, r.Offset, string(r.Value)}) })
	}
	return out
}

// A transactional producer on a compacted topic (issue 30): after the
// cleanings, a read_uncommitted read no longer holds the aborted
// transaction's records (the cleaner removed them), the committed ones
// stay, and the producer goes on committing across the cleanings.
func TestCompactedTransactions(t *testing.T) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.CleanerBackoff = 300 * time.Millisecond })
	adm := kadm.NewClient(c.Client(t))
	cfgs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "delete.retention.ms": kadm.StringPtr("1000")}
	if resp, err := adm.CreateTopic(testContext(t), 1, 3, cfgs, "txtable"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	p := c.Client(t, kgo.TransactionalID("compacted-tx"), kgo.DefaultProduceTopic("txtable"))
	txn := func(commit bool, value string, keys ...string) {
		t.Helper()
		ctx := testContext(t)
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			p.Produce(ctx, &kgo.Record{Key: []byte(k), Value: []byte(value)}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	keys := func(prefix string) []string {
		var out []string
		for i := range 10 {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	for round := range 3 {
		txn(true, fmt.Sprintf("committed-%d", round), keys("c")...)
		txn(false, "aborted", keys("a")...)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		latest, n, _ := readCompacted(t, c, "txtable")
		aborted := 0
		for k, v := range latest {
			if v == "aborted" || strings.HasPrefix(k, "a") {
				aborted++
			}
		}
		if n == 10 && aborted == 0 && latest["c0"] == "committed-2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute read_uncommitted reads %d records, %d of aborted keys; want the 10 committed-2 records only", n, aborted)
		}
		time.Sleep(500 * time.Millisecond)
	}
	txn(true, "committed-3", "c0") // the producer goes on after the cleanings
	if latest, _, _ := readCompacted(t, c, "txtable"); latest["c0"] != "committed-3" {
		t.Fatalf("after a commit across cleanings c0 = %q, want committed-3", latest["c0"])
	}
}
