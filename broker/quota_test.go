package broker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// clientQuotas is a quota source by client id, shared by the nodes of a
// test cluster, that the test changes while they serve.
type clientQuotas struct {
	mu sync.Mutex
	q  map[string]float64 // clientID + "/" + key
}

func (c *clientQuotas) set(clientID, key string, v float64, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q == nil {
		c.q = map[string]float64{}
	}
	if on {
		c.q[clientID+"/"+key] = v
	} else {
		delete(c.q, clientID+"/"+key)
	}
}

func (c *clientQuotas) ClientQuota(_, clientID, key string) (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.q[clientID+"/"+key]
	return v, ok
}

// throttleHook counts the throttles a client is told of.
type throttleHook struct{ n, maxMs atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
		if ms := d.Milliseconds(); ms > h.maxMs.Load() {
			h.maxMs.Store(ms)
		}
	}
}

// quotaProducer produces 10 kB records to topic as fast as it may until
// ctx ends, counting the bytes acknowledged.
type quotaProducer struct {
	cl    *kgo.Client
	hook  *throttleHook
	acked atomic.Int64
	done  chan struct{}
}

func startQuotaProducer(ctx context.Context, t *testing.T, c *testcluster.Cluster, clientID, topic string) *quotaProducer {
	p := &quotaProducer{hook: &throttleHook{}, done: make(chan struct{})}
	// One record per batch keeps each request near 10 kB, so that one
	// throttle is a small part of the measured span.
	p.cl = c.Client(t, kgo.ClientID(clientID), kgo.WithHooks(p.hook), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // the quota counts bytes on the wire
	value := []byte(strings.Repeat("v", 10_000))
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			p.cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					p.acked.Add(int64(len(r.Value)))
				}
			})
		}
	}()
	return p
}

// rateOver is the producer's acknowledged bytes per second over d.
func (p *quotaProducer) rateOver(d time.Duration) float64 {
	start := p.acked.Load()
	time.Sleep(d)
	return float64(p.acked.Load()-start) / d.Seconds()
}

// quotaWindows is the settling tests' quota_window_num: windows of one
// second, so one span of the sliding window takes quotaSpan (Kafka's 11
// windows would make it 11 s). TestQuotaWindowSettingsCapAFetch shows
// the setting reaches the node.
const (
	quotaWindows = 6
	quotaSpan    = quotaWindows * time.Second
)

func withQuotaWindows(cfg *broker.Config) { cfg.QuotaWindowNum = quotaWindows }

// TestClientQuotaProducerSettles: a franz-go producer whose client id has
// producer_byte_rate=102400 settles within 10% of it on the partition
// leader, told so by throttle_time_ms; another client id producing to the
// same node meanwhile is not throttled and goes faster; once the quota is
// removed the producer is throttled no more and its rate recovers. The
// quota is set and removed with kadm's AlterClientQuotas, through the
// metadata group to every node's enforcement. A
// behaviour check with a tolerance, not a speed benchmark: Kafka's
// sliding window lets a fresh client burst ten windows' worth and then
// makes it oscillate around the quota with the window's period, so the
// rate is measured over two whole spans of the windows after one span of
// warm-up.
func TestClientQuotaProducerSettles(t *testing.T) {
	t.Parallel() // mostly waits on the quota window
	const quota = 102400
	c := testcluster.Start(t, 3, withQuotaWindows)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	setClientQuota(ctx, t, adm, "throttled", "producer_byte_rate", quota, false)
	slow := startQuotaProducer(ctx, t, c, "throttled", "quota")
	defer func() { cancel(); <-slow.done }()
	time.Sleep(quotaSpan) // warm-up: one span of the quota window

	fctx, fcancel := context.WithCancel(ctx)
	fast := startQuotaProducer(fctx, t, c, "free", "quota")
	start, acked := time.Now(), slow.acked.Load()
	fastRate := fast.rateOver(5 * time.Second)
	fcancel()
	<-fast.done
	if n := fast.hook.n.Load(); n != 0 {
		t.Errorf("the producer of another client id was throttled %d times", n)
	}
	if fastRate <= quota {
		t.Errorf("the producer of another client id ran at %.0f B/s, not above the other's quota", fastRate)
	}
	time.Sleep(2*quotaSpan - time.Since(start))
	rate := float64(slow.acked.Load()-acked) / time.Since(start).Seconds()
	if rate < quota*0.9 || rate > quota*1.1 {
		t.Errorf("throttled producer at %.0f B/s, want within 10%% of %d", rate, quota)
	}
	if slow.hook.n.Load() == 0 {
		t.Error("the throttled producer was told of no throttle")
	}
	if leader, _ := c.Leader("quota", 0, 10*time.Second); leader > 0 {
		for _, st := range c.Node(int(leader)).QuotaStats() {
			t.Logf("leader's quota entity %+v", st)
		}
	}
	t.Logf("throttled: %.0f B/s, %d throttles (longest %d ms); other client id: %.0f B/s",
		rate, slow.hook.n.Load(), slow.hook.maxMs.Load(), fastRate)

	setClientQuota(ctx, t, adm, "throttled", "producer_byte_rate", 0, true)
	time.Sleep(2 * time.Second) // the last throttle passes
	before := slow.hook.n.Load()
	if rate := slow.rateOver(5 * time.Second); rate < 1.2*quota {
		t.Errorf("after removing the quota the producer runs at %.0f B/s, not above its old quota", rate)
	}
	if n := slow.hook.n.Load() - before; n != 0 {
		t.Errorf("%d throttles after the quota was removed", n)
	}
}

// setClientQuota sets (or removes) key for clientID with AlterClientQuotas;
// the other nodes apply it from the metadata log within milliseconds, well
// inside the waits that follow each call.
func setClientQuota(ctx context.Context, t *testing.T, adm *kadm.Client, clientID, key string, v float64, remove bool) {
	t.Helper()
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
		Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v, Remove: remove}}}})
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("AlterClientQuotas %s %s: %v", clientID, key, err)
	}
}

// TestClientQuotaConsumerSettles: a franz-go consumer whose client id has
// consumer_byte_rate=102400 is told throttle_time_ms and reads at its
// quota (within 10%, over two window spans after one of warm-up), from a
// partition holding far more than it may read in that time.
func TestClientQuotaConsumerSettles(t *testing.T) {
	t.Parallel() // mostly waits on the quota window
	const quota = 102400
	src := &clientQuotas{}
	src.set("reader", "consumer_byte_rate", quota, true)
	c := testcluster.Start(t, 3, withQuotaWindows, func(cfg *broker.Config) { cfg.ClientQuotas = src })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := kadm.NewClient(c.Client(t)).CreateTopic(ctx, 1, 3, nil, "quota-read"); err != nil {
		t.Fatal(err)
	}
	// 2.5 MB, more than the 1.5 MB the consumer may read in three spans
	// (12 s and a burst of three windows), in batches of one record (a
	// Fetch returns at least one whole batch).
	pr := c.Client(t, kgo.DefaultProduceTopic("quota-read"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10))
	value := []byte(strings.Repeat("r", 10_000))
	for range 250 {
		pr.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	hook := &throttleHook{}
	// Fetches of about one record keep each throttle a small part of the
	// measured span.
	cl := c.Client(t, kgo.ClientID("reader"), kgo.WithHooks(hook), kgo.ConsumeTopics("quota-read"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(16<<10))
	var read atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { read.Add(int64(len(r.Value))) })
		}
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(quotaSpan)
	start, before := time.Now(), read.Load()
	time.Sleep(2 * quotaSpan)
	rate := float64(read.Load()-before) / time.Since(start).Seconds()
	t.Logf("consumer: %.0f B/s, %d throttles (longest %d ms), %d B read in all", rate, hook.n.Load(), hook.maxMs.Load(), read.Load())
	if hook.n.Load() == 0 {
		t.Error("the consumer was told of no throttle")
	}
	if rate < quota*0.9 || rate > quota*1.1 {
		t.Errorf("consumer read %.0f B/s, want within 10%% of %d", rate, quota)
	}
}

// TestClientQuotaTopicMutations: with controller_mutation_rate=0.1 (a
// burst of 1.1 partitions, refilled in 10 s each) kadm's CreateTopics (v7, strict) creates the
// topics that fit and gets THROTTLING_QUOTA_EXCEEDED, with a throttle, for
// the next; a client id without the quota creates freely (KIP-599).
func TestClientQuotaTopicMutations(t *testing.T) {
	t.Parallel()
	src := &clientQuotas{}
	src.set("admin", "controller_mutation_rate", 0.1, true)
	c := testcluster.Start(t, 3, func(cfg *broker.Config) { cfg.ClientQuotas = src })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hook := &throttleHook{}
	adm := kadm.NewClient(c.Client(t, kgo.ClientID("admin"), kgo.WithHooks(hook)))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "m2"); err != nil { // the bucket was not empty yet
		t.Fatal(err)
	}
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "m3")
	if !errors.Is(err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("third topic: %v, want THROTTLING_QUOTA_EXCEEDED", err)
	}
	if hook.n.Load() == 0 {
		t.Error("the refusal carried no throttle")
	}
	other := kadm.NewClient(c.Client(t, kgo.ClientID("other")))
	if _, err := other.CreateTopic(ctx, 3, 1, nil, "m4"); err != nil {
		t.Fatalf("another client id: %v", err)
	}
}

// quota_window_num and quota_window_size_seconds reach the node's quotas:
// a Fetch of a client with consumer_byte_rate=10000 is capped at what the
// quota allows in all but one window, 10000 × (3−1) × 2 s = 40,000 bytes
// with three windows of two seconds (Kafka's getMaxValueInQuotaWindow),
// not the defaults' 100,000, though it asks for a megabyte of a
// partition holding 200 kB.
func TestQuotaWindowSettingsCapAFetch(t *testing.T) {
	t.Parallel()
	src := &clientQuotas{}
	src.set("reader", "consumer_byte_rate", 10000, true)
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.ClientQuotas, cfg.QuotaWindowNum, cfg.QuotaWindowSizeSeconds = src, 3, 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createTopic(t, c.Client(t), "capped", 1, 1)
	pr := c.Client(t, kgo.DefaultProduceTopic("capped"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10))
	value := []byte(strings.Repeat("c", 10_000))
	for range 20 {
		if err := pr.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := fetchFromBroker(ctx, c.Client(t, kgo.ClientID("reader")).Broker(1), "capped", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || len(p.RecordBatches) > 40_000 {
		t.Fatalf("a capped Fetch answered error %d with %d bytes of records, want 1..40000", p.ErrorCode, len(p.RecordBatches))
	}
}
