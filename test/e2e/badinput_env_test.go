package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/record"
)

// The topics of the bad-input suite, each one partition with RF 3.
const (
	topicKnown   = "known"   // known records; the target of most cases
	topicLimited = "limited" // max.message.bytes=1048576, known records
	topicEmpty   = "empty"   // never written
	topicScratch = "scratch" // written by the checks that the node still serves
)

// limitedMaxMessageBytes is topicLimited's max.message.bytes.
const limitedMaxMessageBytes = 1 << 20

// memoryBound is the most a node may hold resident during any case.
const memoryBound = 1 << 30

// connMargin is how many connections max_connections leaves above the
// idle ones the suite opens: for the harness's and the checks' own.
const connMargin = 64

// badEnv is the cluster of the bad-input suite and what it stored before
// the first case.
type badEnv struct {
	c        *Cluster
	idle     int                  // idle connections the connection case opens
	maxConns int                  // the nodes' max_connections
	stored   map[string]storedLog // topic -> its log after the known records
	scratch  int                  // records produced to topicScratch so far
}

// storedLog is a partition's log as the leader serves it.
type storedLog struct {
	hw      int64  // high watermark
	batches []byte // every batch, as fetched from offset 0
}

// writeBadConfigs writes node1..3.yaml for the suite into dir: the
// shipped configs' settings, quiet logs, no auto-creation,
// max_connections for the idle connections, and message_max_bytes (the
// topics' default max.message.bytes) of 8 MiB, so that only
// topicLimited's own max.message.bytes can refuse a 2 MiB record.
func writeBadConfigs(dir string, maxConns int) error {
	for id := 1; id <= NodeCount; id++ {
		cfg := fmt.Sprintf(`# The bad-input suite's node %d (test/e2e/badinput_test.go).
node_id: %d
data_dir: ./data/node%d
kafka_addr: 127.0.0.1:0
raft_addr: 127.0.0.1:0
gossip_addr: 127.0.0.1:0
bootstrap_expect: 3
default_partitions: 1
default_replication_factor: 3
auto_create_topics: false
log_level: warn
max_connections: %d
max_connections_per_ip: %d
message_max_bytes: 8388608
# The known records carry fixed 2023 timestamps (the same bytes every run):
# time-based retention would delete them at its first check, which the
# long run reaches.
log_retention_ms: -1
`, id, id, id, maxConns, maxConns)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.yaml", id)), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// idleConnections raises this process's RLIMIT_NOFILE soft limit to the
// hard limit (the nodes inherit it) and returns how many idle connections
// the connection case can open: 10,000, or fewer if the limit is too low.
func idleConnections(t *testing.T) int {
	t.Helper()
	const want = 10_000
	var lim syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	lim.Cur = lim.Max
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	// This process holds one descriptor per connection, the node the
	// other end; both need room for their own files and sockets.
	const reserve = 2*connMargin + 1000
	n := want
	if lim.Max < want+reserve {
		n = max(int(lim.Max)-reserve, 100)
		t.Logf("RLIMIT_NOFILE hard limit is %d: the idle-connection case opens %d connections, not %d", lim.Max, n, want)
	}
	return n
}

// startBadEnv starts the suite's cluster from its config files, creates
// its topics and stores the known records.
func startBadEnv(ctx context.Context, t *testing.T) *badEnv {
	t.Helper()
	e := &badEnv{idle: idleConnections(t), stored: map[string]storedLog{}}
	e.maxConns = e.idle + connMargin
	dir := t.TempDir()
	must(t, writeBadConfigs(dir, e.maxConns))
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := Start(sctx, t, Options{Binary: nodeBinary, ConfigDir: dir})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	e.c = c
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...), client.RequestTimeout(10*time.Second))
	must(t, err)
	defer adm.Close()
	topics := map[string]map[string]string{
		topicKnown:   nil,
		topicLimited: {"max.message.bytes": fmt.Sprint(limitedMaxMessageBytes)},
		topicEmpty:   nil,
		topicScratch: nil,
	}
	for name, configs := range topics {
		if err := adm.CreateTopic(ctx, name, 1, 3, configs); err != nil {
			t.Fatalf("create topic %s: %v", name, err)
		}
	}
	must(t, c.WaitReady(ctx, topicKnown, topicLimited, topicEmpty, topicScratch))
	for _, topic := range []string{topicKnown, topicLimited} {
		for i := range 3 {
			produceKnown(ctx, t, c, topic, i)
		}
		e.stored[topic] = readStored(ctx, t, c, topic)
		checkKnown(t, topic, e.stored[topic])
	}
	return e
}

// knownRecords are the records of batch i of topic's known records.
func knownRecords(topic string, i int) []record.Record {
	recs := make([]record.Record, 4)
	for j := range recs {
		recs[j] = record.Record{
			Timestamp: 1_700_000_000_000 + int64(4*i+j),
			Key:       fmt.Appendf(nil, "%s-%d-%d", topic, i, j),
			Value:     bytes.Repeat(fmt.Appendf(nil, "value %s %d %d;", topic, i, j), 100),
		}
	}
	return recs
}

// produceRequest is a Produce request (v9, acks=all) of one batch to
// topic's partition 0.
func produceRequest(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceBatch sends batch to topic[0]'s leader and returns the
// partition's answer.
func produceBatch(ctx context.Context, t *testing.T, c *Cluster, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	l, err := c.Leader(ctx, topic, 0)
	must(t, err)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := Request(rctx, c.Node(l.Node).KafkaAddr, produceRequest(topic, batch))
	if err != nil {
		t.Fatalf("produce to %s on node %d: %v", topic, l.Node, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce to %s: malformed answer %+v", topic, pr)
	}
	return pr.Topics[0].Partitions[0]
}

// produceKnown stores batch i of topic's known records.
func produceKnown(ctx context.Context, t *testing.T, c *Cluster, topic string, i int) {
	t.Helper()
	batch, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone), knownRecords(topic, i))
	must(t, err)
	if p := produceBatch(ctx, t, c, topic, batch); p.ErrorCode != 0 {
		t.Fatalf("produce known batch %d to %s: %v", i, topic, kerr.ErrorForCode(p.ErrorCode))
	}
}

// fetchRequest asks for topic[0] from offset, with the given bounds.
func fetchRequest(topic string, offset int64, maxWait, maxBytes, partitionMaxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWait
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.CurrentLeaderEpoch = -1
	fp.LastFetchedEpoch = -1
	fp.LogStartOffset = -1
	fp.PartitionMaxBytes = partitionMaxBytes
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// fetchPartition checks a Fetch answer of one partition and returns it.
func fetchPartition(resp kmsg.Response) (kmsg.FetchResponseTopicPartition, error) {
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return kmsg.FetchResponseTopicPartition{}, kerr.ErrorForCode(fr.ErrorCode)
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("e2e: malformed fetch answer %+v", fr)
	}
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return p, kerr.ErrorForCode(p.ErrorCode)
	}
	return p, nil
}

// readStored fetches topic[0]'s whole log (up to 8 MiB) from its leader.
func readStored(ctx context.Context, t *testing.T, c *Cluster, topic string) storedLog {
	t.Helper()
	l, err := c.Leader(ctx, topic, 0)
	must(t, err)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := Request(rctx, c.Node(l.Node).KafkaAddr, fetchRequest(topic, 0, 0, 8<<20, 8<<20))
	if err != nil {
		t.Fatalf("fetch %s from node %d: %v", topic, l.Node, err)
	}
	p, err := fetchPartition(resp)
	if err != nil {
		t.Fatalf("fetch %s from node %d: %v", topic, l.Node, err)
	}
	return storedLog{hw: p.HighWatermark, batches: p.RecordBatches}
}

// checkKnown checks that a stored log holds exactly topic's three known
// batches, record by record.
func checkKnown(t *testing.T, topic string, s storedLog) {
	t.Helper()
	var got []record.Record
	for b := s.batches; len(b) > 0; {
		batch, rest, _, err := record.Next(b)
		must(t, err)
		if got, err = record.AppendRecords(got, batch); err != nil {
			t.Fatalf("%s: stored batch: %v", topic, err)
		}
		b = rest
	}
	var want []record.Record
	for i := range 3 {
		want = append(want, knownRecords(topic, i)...)
	}
	if s.hw != int64(len(want)) || len(got) != len(want) {
		t.Fatalf("%s: high watermark %d and %d records stored, want %d", topic, s.hw, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != int64(i) || g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) {
			t.Fatalf("%s: record %d stored as offset %d key %q, want offset %d key %q and its value", topic, i, g.Offset, g.Key, i, w.Key)
		}
	}
}

// checkUnchanged fails the test if a topic's stored log is not,
// byte for byte, what it was before the first case, or if its high
// watermark moved.
func (e *badEnv) checkUnchanged(ctx context.Context, t *testing.T) {
	t.Helper()
	for topic, before := range e.stored {
		now := readStored(ctx, t, e.c, topic)
		if now.hw != before.hw {
			t.Errorf("%s: high watermark moved from %d to %d", topic, before.hw, now.hw)
		}
		if !bytes.Equal(now.batches, before.batches) {
			t.Errorf("%s: the stored log changed (%d bytes, was %d)", topic, len(now.batches), len(before.batches))
		}
	}
}

// serves produces one record to topicScratch on its leader and reads it
// back: the node still serves.
func (e *badEnv) serves(ctx context.Context, t *testing.T) {
	t.Helper()
	v := fmt.Appendf(nil, "scratch %d", e.scratch)
	batch, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
		[]record.Record{{Timestamp: time.Now().UnixMilli(), Value: v}})
	must(t, err)
	p := produceBatch(ctx, t, e.c, topicScratch, batch)
	if p.ErrorCode != 0 || p.BaseOffset != int64(e.scratch) {
		t.Fatalf("produce to %s: offset %d, error %v; want offset %d", topicScratch, p.BaseOffset, kerr.ErrorForCode(p.ErrorCode), e.scratch)
	}
	s := readStored(ctx, t, e.c, topicScratch)
	recs, err := record.AppendRecords(nil, lastBatch(t, s.batches))
	must(t, err)
	if s.hw != int64(e.scratch+1) || len(recs) != 1 || !bytes.Equal(recs[0].Value, v) {
		t.Fatalf("%s: high watermark %d, last batch %+v; want %d and value %q", topicScratch, s.hw, recs, e.scratch+1, v)
	}
	e.scratch++
}

// lastBatch returns the last batch of a fetched record set.
func lastBatch(t *testing.T, b []byte) []byte {
	t.Helper()
	var last []byte
	for len(b) > 0 {
		batch, rest, _, err := record.Next(b)
		must(t, err)
		last, b = batch, rest
	}
	return last
}

// closedByPeer reports whether err is the peer closing or resetting the
// connection.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// topicNames lists the cluster's topics as node id reports them.
func (e *badEnv) topicNames(ctx context.Context, t *testing.T, id int) []string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = nil // every topic
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := Request(rctx, e.c.Node(id).KafkaAddr, req)
	must(t, err)
	var names []string
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		if tp.Topic != nil {
			names = append(names, *tp.Topic)
		}
	}
	return names
}

// memoryTable is the peak resident memory of every node during each case.
type memoryTable struct {
	rows []memoryRow
}

type memoryRow struct {
	name  string
	peaks [NodeCount]int64 // bytes; -1 if unread
	note  string
}

// resetPeaks resets every node's peak resident memory.
func (e *badEnv) resetPeaks(t *testing.T) {
	t.Helper()
	for id := 1; id <= NodeCount; id++ {
		pid, err := e.c.Pid(id)
		must(t, err)
		if err := ResetPeak(pid); err != nil {
			t.Logf("node %d: cannot reset its peak memory (%v): peaks are since start", id, err)
		}
	}
}

// recordPeaks adds every node's peak resident memory since resetPeaks to
// the table, logs it, and fails the test past memoryBound.
func (e *badEnv) recordPeaks(t *testing.T, tab *memoryTable, name, note string) {
	t.Helper()
	row := memoryRow{name: name, note: note}
	var parts []string
	for id := 1; id <= NodeCount; id++ {
		row.peaks[id-1] = -1
		pid, err := e.c.Pid(id)
		if err != nil {
			t.Errorf("%s: node %d: %v", name, id, err)
			continue
		}
		m, err := ReadMemory(pid)
		if err != nil {
			t.Errorf("%s: node %d: %v", name, id, err)
			continue
		}
		row.peaks[id-1] = m.Peak
		parts = append(parts, fmt.Sprintf("node %d %s", id, mib(m.Peak)))
		if m.Peak > memoryBound {
			t.Errorf("%s: node %d peaked at %s resident, over the %s bound", name, id, mib(m.Peak), mib(memoryBound))
		}
	}
	t.Logf("%s: peak RSS (VmHWM) %s", name, strings.Join(parts, ", "))
	tab.rows = append(tab.rows, row)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// String renders the table.
func (tab *memoryTable) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-40s %8s %8s %8s  %s\n", "case", "node1", "node2", "node3", "note")
	for _, r := range tab.rows {
		fmt.Fprintf(&sb, "%-40s", r.name)
		for _, p := range r.peaks {
			if p < 0 {
				fmt.Fprintf(&sb, " %8s", "-")
			} else {
				fmt.Fprintf(&sb, " %8s", fmt.Sprintf("%.1f", float64(p)/(1<<20)))
			}
		}
		fmt.Fprintf(&sb, "  %s\n", r.note)
	}
	return sb.String()
}
