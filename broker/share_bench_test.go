package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

const (
	shareBenchParts   = 3
	shareBenchDrain   = 100000 // records pre-produced for the drain runs
	shareBenchRate    = 2000   // records/s offered in the paced runs
	shareBenchPerIter = 2000   // records one paced iteration waits for
	shareBenchValue   = 100    // bytes per record value
)

// BenchmarkShareVsClassic compares 2 members of a KIP-932 share group
// (stock kgo.ShareGroup, each record accepted) with 2 members of a
// classic group (kgo.ConsumerGroup, offsets committed) on a 3-node
// cluster and one topic of 3 partitions (replication factor 3) per mode:
//
//   - drain: one op is a new group reading all 100000 pre-produced
//     100-byte records from the start, until every one has been polled
//     and the members' acknowledgements (share) or offset commits
//     (classic) are flushed. ns/op includes joining; join-ms is the
//     time to the first record polled, records/s counts from it to the
//     flush; cpu-ms/op is the whole process's CPU time (nodes and
//     clients) per op, closing included.
//   - paced: a producer offers 2000 records/s throughout; one op is
//     2000 records polled (so about 1 s while the group keeps up).
//     p50-ms and p99-ms are each record's delivery latency: from just
//     before its Produce call (in its value) to the poll that returns
//     it. The group starts at the end of the topic and is warmed up
//     outside the timer: until both members poll records (a classic
//     group has rebalanced to two), then 1000 records.
//
// The figures in docs/performance.md come from
//
//	go test -run '^$' -bench BenchmarkShareVsClassic -benchtime 3x -count 3 ./broker/
func BenchmarkShareVsClassic(b *testing.B) {
	c := testcluster.Start(b, 3, func(cfg *broker.Config) { cfg.ShareGroups.ResetEarliest = true })
	// Uncompressed: the values are mostly zeros, and a classic fetch of
	// compressed batches would move almost nothing.
	cl := c.Client(b, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(b, cl, "drain", shareBenchParts, 3)
	createTopic(b, cl, "paced", shareBenchParts, 3)
	for p := range int32(shareBenchParts) {
		for _, topic := range []string{"drain", "paced"} {
			if leader, _ := c.Leader(topic, p, 30*time.Second); leader < 0 {
				b.Fatalf("%s/%d has no leader", topic, p)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, shareBenchDrain)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "drain", Value: stampedValue()}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	// With -count, each sub-benchmark runs again in this cluster: every
	// run takes new group names.
	run := 0
	for _, kind := range []string{"classic", "share"} {
		b.Run("drain/"+kind, func(b *testing.B) {
			run++
			benchDrain(ctx, b, c, kind, fmt.Sprintf("drain-%s-%d", kind, run))
		})
	}
	for _, kind := range []string{"classic", "share"} {
		b.Run("paced/"+kind, func(b *testing.B) {
			run++
			benchPaced(ctx, b, c, cl, kind, fmt.Sprintf("paced-%s-%d", kind, run))
		})
	}
}

// stampedValue is a record value that starts with the time it is made.
func stampedValue() []byte {
	v := make([]byte, shareBenchValue)
	binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
	return v
}

// benchDrain has a new group of two members read "drain" from the start
// in each op.
func benchDrain(ctx context.Context, b *testing.B, c *testcluster.Cluster, kind, group string) {
	n := 0
	var joining, consuming time.Duration // to each op's first poll, and from it to the flush
	cpu0 := processCPU(b)
	for b.Loop() {
		n++
		start := time.Now()
		sink := newBenchSink(shareBenchDrain)
		ms := startBenchMembers(ctx, b, c, kind, fmt.Sprintf("%s-%d", group, n), "drain", kgo.NewOffset().AtStart(), sink)
		sink.wait(ctx, b)
		flushBenchMembers(ctx, b, kind, ms)
		joining += sink.firstAt().Sub(start)
		consuming += time.Since(sink.firstAt())
		b.StopTimer()
		ms.close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*shareBenchDrain)/consuming.Seconds(), "records/s")
	b.ReportMetric(float64(joining.Milliseconds())/float64(n), "join-ms")
	b.ReportMetric(float64((processCPU(b)-cpu0).Milliseconds())/float64(n), "cpu-ms/op")
}

// processCPU is the CPU time (user and system) this process (the
// cluster's nodes and the clients) has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPaced produces shareBenchRate records/s to "paced" while a group
// of two members reads it; each op waits for shareBenchPerIter records.
func benchPaced(ctx context.Context, b *testing.B, c *testcluster.Cluster, cl *kgo.Client, kind, group string) {
	if kind == "share" { // the share group starts at the end, as the classic one does
		adm := kadm.NewClient(cl)
		ends, err := adm.ListEndOffsets(ctx, "paced")
		if err != nil {
			b.Fatal(err)
		}
		if resp, err := adm.AlterShareGroupOffsets(ctx, group, ends.Offsets()); err != nil || resp.Error() != nil {
			b.Fatalf("AlterShareGroupOffsets: %v %v", err, resp.Error())
		}
	}
	sink := newBenchSink(1000)
	ms := startBenchMembers(ctx, b, c, kind, group, "paced", kgo.NewOffset().AtEnd(), sink)
	defer ms.close()
	pctx, stop := context.WithCancel(ctx)
	var producing sync.WaitGroup
	defer producing.Wait()
	defer stop()
	producing.Go(func() { producePaced(pctx, cl) })
	// Warm-up: both members poll (a classic group has rebalanced to
	// two), then 1000 records more.
	eventually(b, time.Minute, "both members poll records", func() bool { return sink.members() == 2 })
	sink.expect(sink.count() + 1000)
	sink.wait(ctx, b)
	sink.reset()
	start := time.Now()
	got := 0
	for b.Loop() {
		got += shareBenchPerIter
		sink.expect(got)
		sink.wait(ctx, b)
	}
	elapsed := time.Since(start)
	lat := sink.latencies()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// producePaced produces shareBenchRate records/s to "paced", 10 every
// 5 ms, until ctx ends.
func producePaced(ctx context.Context, cl *kgo.Client) {
	const every = 5 * time.Millisecond
	per := shareBenchRate * int(every) / int(time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range per {
			cl.Produce(ctx, &kgo.Record{Topic: "paced", Value: stampedValue()}, nil)
		}
	}
}

// benchSink collects what the members poll: distinct records (a share
// group may deliver one again), each one's delivery latency.
type benchSink struct {
	mu      sync.Mutex // guards the fields below
	seen    map[int32]map[int64]bool
	n       int // distinct records seen
	first   time.Time
	polled  map[int]bool // the members that have polled a record
	lat     []time.Duration
	want    int
	reached chan struct{} // closed once n >= want
}

func newBenchSink(want int) *benchSink {
	return &benchSink{seen: map[int32]map[int64]bool{}, polled: map[int]bool{}, want: want, reached: make(chan struct{})}
}

func (s *benchSink) add(member int, fs kgo.Fetches, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !fs.Empty() {
		s.polled[member] = true
	}
	fs.EachRecord(func(r *kgo.Record) {
		if s.seen[r.Partition] == nil {
			s.seen[r.Partition] = map[int64]bool{}
		}
		if s.seen[r.Partition][r.Offset] {
			return
		}
		s.seen[r.Partition][r.Offset] = true
		if s.n == 0 {
			s.first = at
		}
		s.n++
		s.lat = append(s.lat, at.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(r.Value)))))
	})
	if s.n >= s.want && s.reached != nil {
		close(s.reached)
		s.reached = nil
	}
}

// expect sets the count the next wait waits for.
func (s *benchSink) expect(want int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want, s.reached = want, make(chan struct{})
	if s.n >= want {
		close(s.reached)
		s.reached = nil
	}
}

// wait returns once the count expected has been polled.
func (s *benchSink) wait(ctx context.Context, b *testing.B) {
	s.mu.Lock()
	ch := s.reached
	s.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(2 * time.Minute):
		s.mu.Lock()
		defer s.mu.Unlock()
		b.Fatalf("only %d of %d records polled in 2 minutes", s.n, s.want)
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		b.Fatalf("only %d of %d records polled", s.n, s.want)
	}
}

// reset forgets the latencies and the count (not the records seen).
func (s *benchSink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.lat = 0, nil
}

func (s *benchSink) members() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.polled)
}

func (s *benchSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *benchSink) firstAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

func (s *benchSink) latencies() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lat)
}

// benchMembers are a group's clients and their poll loops.
type benchMembers struct {
	cls   []*kgo.Client
	polls sync.WaitGroup
}

// startBenchMembers starts two members of group reading topic, each
// polling into sink: a classic group's (autocommit) or a share group's
// (each polled record accepted at once).
func startBenchMembers(ctx context.Context, b *testing.B, c *testcluster.Cluster, kind, group, topic string, reset kgo.Offset, sink *benchSink) *benchMembers {
	ms := &benchMembers{}
	for i := range 2 {
		opts := []kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.ConsumeTopics(topic)}
		if kind == "share" {
			opts = append(opts, kgo.ShareGroup(group))
		} else {
			opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(reset))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		ms.cls = append(ms.cls, cl)
		ms.polls.Go(func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				at := time.Now()
				if kind == "share" {
					cl.MarkAcks(kgo.AckAccept) // before add: a flush after the last add sends them
				}
				sink.add(i, fs, at)
			}
		})
	}
	return ms
}

// flushBenchMembers sends the members' acknowledgements or commits
// their offsets, and waits for the answers.
func flushBenchMembers(ctx context.Context, b *testing.B, kind string, ms *benchMembers) {
	for _, cl := range ms.cls {
		var err error
		if kind == "share" {
			err = cl.FlushAcks(ctx)
		} else {
			err = cl.CommitUncommittedOffsets(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func (ms *benchMembers) close() {
	var wg sync.WaitGroup
	for _, cl := range ms.cls {
		wg.Go(cl.Close)
	}
	wg.Wait()
	ms.polls.Wait()
}
