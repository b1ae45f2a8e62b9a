package broker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// kgoDelivery is one record that a stock kgo share member's poll
// returned, with what the test then did with it.
type kgoDelivery struct {
	member string
	p      int32
	off    int64
	count  int32     // the broker's delivery count (Record.DeliveryCount)
	polled time.Time // when the poll returned it (after the broker acquired it)
	ack    kgo.AckStatus
	acked  time.Time // taken just before r.Ack: before the broker can know
}

// shareRecKey is a record of a topic: partition and offset.
type shareRecKey struct {
	p   int32
	off int64
}

// deliveryLog records the deliveries of every member of a test.
type deliveryLog struct {
	mu sync.Mutex // guards ds
	ds []kgoDelivery
}

func (l *deliveryLog) add(d kgoDelivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ds = append(l.ds, d)
}

// snapshot returns the deliveries so far, in the order they were polled.
func (l *deliveryLog) snapshot() []kgoDelivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ds)
}

// byRecord groups deliveries per record, each record's in poll order.
func byRecord(ds []kgoDelivery) map[shareRecKey][]kgoDelivery {
	out := map[shareRecKey][]kgoDelivery{}
	for _, d := range ds {
		k := shareRecKey{d.p, d.off}
		out[k] = append(out[k], d)
	}
	for _, v := range out {
		slices.SortStableFunc(v, func(a, b kgoDelivery) int { return a.polled.Compare(b.polled) })
	}
	return out
}

// done counts the records with a delivery the test accepted or rejected.
func (l *deliveryLog) done() int {
	n := 0
	for _, v := range byRecord(l.snapshot()) {
		if slices.ContainsFunc(v, func(d kgoDelivery) bool { return d.ack == kgo.AckAccept || d.ack == kgo.AckReject }) {
			n++
		}
	}
	return n
}

// kgoShareMember is a stock kgo share consumer whose poll loop runs
// until stop: each record it polls is logged and acknowledged with
// decide's status (0: left unacknowledged).
type kgoShareMember struct {
	id     string
	cl     *kgo.Client
	hold   time.Duration // how long a poll's records are held before they are acknowledged
	flush  bool          // send a poll's acknowledgements at once (FlushAcks), not within kgo's second
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newKgoShareMember makes member id of group, consuming topic; it does
// not poll until run. Acknowledgements the broker refused or kgo could
// not deliver are logged: a record accepted by the test can then come
// back, and the log says why.
func newKgoShareMember(t *testing.T, c *testcluster.Cluster, id, group, topic string, opts ...kgo.Opt) *kgoShareMember {
	t.Helper()
	logAcks := kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
		for _, r := range rs {
			if r.Err != nil {
				t.Logf("%s: acknowledgements of %s/%d at %v: %v", id, r.Topic, r.Partition, time.Now().Format("15:04:05.000"), r.Err)
			}
		}
	})
	opts = append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(id), logAcks}, opts...)
	return &kgoShareMember{id: id, cl: c.Client(t, opts...)}
}

// poll polls once and logs and acknowledges what it returned.
func (m *kgoShareMember) poll(ctx context.Context, t *testing.T, log *deliveryLog, decide func(*kgo.Record) kgo.AckStatus) int {
	fs := m.cl.PollFetches(ctx)
	polled := time.Now()
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("%s: fetch error on %s/%d: %v", m.id, topic, p, err)
		}
	})
	if fs.NumRecords() > 0 && m.hold > 0 {
		time.Sleep(m.hold)
	}
	n := 0
	fs.EachRecord(func(r *kgo.Record) {
		d := kgoDelivery{member: m.id, p: r.Partition, off: r.Offset, count: r.DeliveryCount(), polled: polled}
		if d.ack = decide(r); d.ack != 0 {
			d.acked = time.Now()
			r.Ack(d.ack)
		}
		log.add(d)
		n++
	})
	if n > 0 && m.flush {
		if err := m.cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			t.Logf("%s: FlushAcks: %v", m.id, err)
		}
	}
	return n
}

// run starts m's poll loop, which stop ends.
func (m *kgoShareMember) run(t *testing.T, log *deliveryLog, decide func(*kgo.Record) kgo.AckStatus) {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for ctx.Err() == nil {
			m.poll(ctx, t, log, decide)
		}
	}()
	t.Cleanup(m.stop)
}

// stop ends m's poll loop and waits for it.
func (m *kgoShareMember) stop() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
}

// acceptAll accepts every record.
func acceptAll(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }

// shareStartOffsets reads group's persisted share-partition start
// offsets of topic's partitions (DescribeShareGroupOffsets); false if
// the answer is not complete yet.
func shareStartOffsets(ctx context.Context, adm *kadm.Client, group, topic string, parts int32) (map[int32]int64, bool) {
	desc, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil || desc[group].Err != nil {
		return nil, false
	}
	out := map[int32]int64{}
	for p := range parts {
		o, ok := desc[group].Offsets.Lookup(topic, p)
		if !ok || o.Err != nil {
			return nil, false
		}
		out[p] = o.StartOffset
	}
	return out, true
}

// waitStartOffsets waits until every partition of topic has the share
// start offset want (each record acknowledged or archived).
func waitStartOffsets(t *testing.T, c *testcluster.Cluster, group, topic string, want map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got map[int32]int64
	eventually(t, time.Minute, "the share start offsets reach the end", func() bool {
		var ok bool
		got, ok = shareStartOffsets(ctx, adm, group, topic, int32(len(want)))
		for p, w := range want {
			if !ok || got[p] != w {
				return false
			}
		}
		return true
	})
}

// checkHandOvers checks each record's deliveries in poll order: a
// record comes back only after the test released it (its next poll is
// later than the release), or, if it was left unacknowledged, after its
// lock expired (expired says whether that is possible by then); never
// after an accept or a reject; and each delivery counts more than the
// one before.
func checkHandOvers(t *testing.T, ds []kgoDelivery, expired func(prev, next kgoDelivery) bool) {
	t.Helper()
	for k, v := range byRecord(ds) {
		for i := 1; i < len(v); i++ {
			prev, next := v[i-1], v[i]
			switch {
			case next.count <= prev.count:
				t.Fatalf("p%d offset %d: delivery %d to %s after delivery %d to %s", k.p, k.off, next.count, next.member, prev.count, prev.member)
			case prev.ack == kgo.AckRelease && !next.polled.After(prev.acked):
				t.Fatalf("p%d offset %d: redelivered to %s before %s released it", k.p, k.off, next.member, prev.member)
			case prev.ack == 0 && !expired(prev, next):
				t.Fatalf("p%d offset %d: redelivered to %s at %v while %s's lock (polled %v) held", k.p, k.off, next.member, next.polled, prev.member, prev.polled)
			case prev.ack != 0 && prev.ack != kgo.AckRelease:
				t.Fatalf("p%d offset %d: redelivered to %s (count %d, polled %s) after %s's %v at %s", k.p, k.off, next.member, next.count,
					next.polled.Format("15:04:05.000"), prev.member, prev.ack, prev.acked.Format("15:04:05.000"))
			}
		}
	}
}

// neverExpired is for tests whose locks (30 s) do not expire.
func neverExpired(kgoDelivery, kgoDelivery) bool { return false }

// quietly has the members keep polling for d, so that a record that
// should not come back has the time to; the members then stop.
func quietly(d time.Duration, ms ...*kgoShareMember) {
	time.Sleep(d)
	for _, m := range ms {
		m.stop()
	}
}
