package txncoord

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memLog applies appended records to a view at once.
type memLog struct{ view *View }

func (l memLog) Append(_ context.Context, recs []Record) error {
	for _, r := range recs {
		if err := l.view.Apply(r.Key, r.Value); err != nil {
			return err
		}
	}
	return nil
}

// memMarkers records the markers written; fail makes the next n calls fail.
type memMarkers struct {
	mu      sync.Mutex // guards written and fail
	written []Marker
	fail    int
}

func (m *memMarkers) WriteMarkers(_ context.Context, mk Marker, parts []TopicPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail > 0 {
		m.fail--
		return errors.New("leader unreachable")
	}
	for range parts {
		m.written = append(m.written, mk)
	}
	return nil
}

func (m *memMarkers) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.written)
}

func newTestCoordinator(t *testing.T, view *View, mk *memMarkers, cfg Config) *Coordinator {
	t.Helper()
	return newCoordinatorWith(t, view, memLog{view}, mk, cfg)
}

// newCoordinatorWith is newTestCoordinator with any log and markers.
func newCoordinatorWith(t *testing.T, view *View, log Log, mk Markers, cfg Config) *Coordinator {
	t.Helper()
	next := int64(1000)
	var mu sync.Mutex
	cfg.NewProducerID = func(context.Context) (int64, error) { mu.Lock(); defer mu.Unlock(); next++; return next, nil }
	cfg.TopicExists = func(topic string, _ int32) bool { return topic != "nope" }
	cfg.OffsetsPartition = func(context.Context, string) (TopicPartition, bool) {
		return TopicPartition{"__consumer_offsets", 3}, true
	}
	if cfg.MarkerRetry == 0 {
		cfg.MarkerRetry = time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(cfg, log, view, mk, 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitState waits until id's state is s.
func waitState(t *testing.T, v *View, id string, s State) Metadata {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if m, _ := v.Txn(id); m.State == s {
			return m
		}
	}
	m, _ := v.Txn(id)
	t.Fatalf("%s: state %v, want %v", id, m.State, s)
	return m
}

func TestCoordinatorCommitAbortAndFencing(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{fail: 2}
	c := newTestCoordinator(t, view, mk, Config{})
	pid, epoch, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil || pid != 1001 || epoch != 0 {
		t.Fatalf("first init: %d/%d %v", pid, epoch, err)
	}
	if err := c.EndTxn(ctx, "t", pid, epoch, true); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("EndTxn without a transaction: %v", err)
	}
	parts := []TopicPartition{{"a", 0}, {"b", 1}}
	if err := c.AddPartitions(ctx, "t", pid, epoch, parts); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, "t", pid+1, epoch, parts); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("another producer id: %v", err)
	}
	if err := c.EndTxn(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	waitState(t, view, "t", CompleteCommit)
	if mk.count() != 2 || !mk.written[0].Commit || mk.written[0].CoordinatorEpoch != 7 {
		t.Fatalf("markers %+v", mk.written)
	}
	if err := c.EndTxn(ctx, "t", pid, epoch, true); err != nil {
		t.Fatalf("a retried commit: %v", err)
	}
	// An ongoing transaction is aborted by the next InitProducerId, which
	// fences the old epoch twice over.
	if err := c.AddPartitions(ctx, "t", pid, epoch, parts[:1]); err != nil {
		t.Fatal(err)
	}
	pid2, epoch2, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil || pid2 != pid || epoch2 != 2 {
		t.Fatalf("second init: %d/%d %v", pid2, epoch2, err)
	}
	if m, _ := view.Txn("t"); m.State != Empty || mk.count() != 3 || mk.written[2].Commit || mk.written[2].ProducerEpoch != 1 {
		t.Fatalf("after init: %+v, markers %+v", m, mk.written)
	}
	if err := c.AddPartitions(ctx, "t", pid, epoch, parts); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("zombie: %v", err)
	}
	if _, _, err := c.InitProducerID(ctx, "t", time.Minute, pid, epoch); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("KIP-360 with an old epoch: %v", err)
	}
	if _, e, err := c.InitProducerID(ctx, "t", time.Minute, pid, epoch2); err != nil || e != 3 {
		t.Fatalf("KIP-360 bump: %d %v", e, err)
	}
	if _, _, err := c.InitProducerID(ctx, "t", DefaultMaxTimeout+time.Millisecond, -1, -1); !errors.Is(err, kerr.InvalidTransactionTimeout) {
		t.Fatalf("timeout over the max: %v", err)
	}
}

func TestCoordinatorAbortsTimedOutAndResumesPrepared(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	now := time.UnixMilli(1_000_000)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	c := newTestCoordinator(t, view, mk, Config{AbortInterval: time.Millisecond, Now: clock})
	pid, epoch, _ := c.InitProducerID(ctx, "t", time.Second, -1, -1)
	if err := c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatal(err)
	}
	clockMu.Lock()
	now = now.Add(2 * time.Second)
	clockMu.Unlock()
	m := waitState(t, view, "t", CompleteAbort)
	if m.ProducerEpoch != epoch+1 || mk.count() != 1 || mk.written[0].Commit {
		t.Fatalf("timed out: %+v, markers %+v", m, mk.written)
	}
	c.Close()

	// A new coordinator finds a PrepareCommit and completes it.
	m.State, m.Partitions = PrepareCommit, []TopicPartition{{"a", 0}, {"c", 2}}
	apply(t, view, MetadataRecord("t", m))
	mk2 := &memMarkers{}
	newTestCoordinator(t, view, mk2, Config{})
	waitState(t, view, "t", CompleteCommit)
	if mk2.count() != 2 || !mk2.written[0].Commit {
		t.Fatalf("resumed markers %+v", mk2.written)
	}
}

// Old request versions get INVALID_PRODUCER_EPOCH for PRODUCER_FENCED.
func TestCodeBeforeKIP588(t *testing.T) {
	if got := Code(kerr.ProducerFenced, true); got != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old version: %d", got)
	}
	if got := Code(kerr.ProducerFenced, false); got != kerr.ProducerFenced.Code {
		t.Fatalf("new version: %d", got)
	}
	if Code(nil, true) != 0 || Code(errors.New("x"), false) != kerr.UnknownServerError.Code {
		t.Fatal("nil or a non-Kafka error")
	}
}

// flakyLog fails the Append of a Complete state n times, as a commit that
// times out under load does, then applies like memLog.
type flakyLog struct {
	memLog
	mu   sync.Mutex // guards fail
	fail int
}

func (l *flakyLog) Append(ctx context.Context, recs []Record) error {
	l.mu.Lock()
	for _, r := range recs {
		if m, err := decodeValue(r.Value); err == nil && l.fail > 0 && (m.State == CompleteCommit || m.State == CompleteAbort) {
			l.fail--
			l.mu.Unlock()
			return errors.New("commit timed out")
		}
	}
	l.mu.Unlock()
	return l.memLog.Append(ctx, recs)
}

// TestCompleteStateWriteIsRetried: the markers are written but the
// Complete state's first writes fail; the coordinator retries it rather
// than leaving the transaction in PrepareCommit, where every later
// request of its producer would be CONCURRENT_TRANSACTIONS until the
// coordinator moved.
func TestCompleteStateWriteIsRetried(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	c := newCoordinatorWith(t, view, &flakyLog{memLog: memLog{view}, fail: 3}, mk, Config{})
	pid, epoch := endedTxn(t, c, "t", []TopicPartition{{"a", 0}}, true)
	waitState(t, view, "t", CompleteCommit)
	if err := c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}}); err != nil {
		t.Fatalf("the next transaction: %v", err)
	}
}

// TestStalledPrepareIsResumedByRequests: a transaction found in a
// Prepare state with no completion running (one that gave up) is
// resumed by the next AddPartitionsToTxn or EndTxn of its producer, not
// only by a new coordinator or InitProducerId.
func TestStalledPrepareIsResumedByRequests(t *testing.T) {
	ctx := context.Background()
	view, mk := NewView(), &memMarkers{}
	c := newTestCoordinator(t, view, mk, Config{})
	pid, epoch, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := view.Txn("t")
	m.State, m.Partitions = PrepareCommit, []TopicPartition{{"a", 0}}
	apply(t, view, MetadataRecord("t", m)) // as if written by a completion that then gave up
	if err := c.AddPartitions(ctx, "t", pid, epoch, []TopicPartition{{"a", 0}}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("AddPartitions during the commit: %v", err)
	}
	waitState(t, view, "t", CompleteCommit)
	m, _ = view.Txn("t")
	m.State, m.Partitions = PrepareAbort, []TopicPartition{{"a", 0}}
	apply(t, view, MetadataRecord("t", m))
	if err := c.EndTxn(ctx, "t", pid, epoch, false); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("EndTxn during the abort: %v", err)
	}
	waitState(t, view, "t", CompleteAbort)
	if mk.count() != 2 {
		t.Fatalf("markers %+v", mk.written)
	}
}

// gatedMarkers writes markers only once release is closed.
type gatedMarkers struct {
	memMarkers
	release chan struct{}
}

func (g *gatedMarkers) WriteMarkers(ctx context.Context, mk Marker, parts []TopicPartition) error {
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.memMarkers.WriteMarkers(ctx, mk, parts)
}

// TestAddPartitionsWaitsForMarkers: the next transaction's
// AddPartitionsToTxn, sent right after EndTxn, waits for the previous
// transaction's markers and succeeds, rather than answering
// CONCURRENT_TRANSACTIONS, after which clients back off 20 ms or more;
// markers that outlast the wait (here the request's deadline) still get
// CONCURRENT_TRANSACTIONS.
func TestAddPartitionsWaitsForMarkers(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	mk := &gatedMarkers{release: make(chan struct{})}
	c := newCoordinatorWith(t, view, memLog{view}, mk, Config{CompletionWait: 10 * time.Second})
	pid, epoch, err := c.InitProducerID(ctx, "t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	parts := []TopicPartition{{"a", 0}}
	if err := c.AddPartitions(ctx, "t", pid, epoch, parts); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx, "t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond) // the request's own deadline ends the wait too
	defer cancel()
	if err := c.AddPartitions(short, "t", pid, epoch, parts); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("AddPartitions while the markers are held: %v", err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(mk.release)
	}()
	if err := c.AddPartitions(ctx, "t", pid, epoch, parts); err != nil {
		t.Fatalf("AddPartitions while the markers are written: %v", err)
	}
	if m, _ := view.Txn("t"); m.State != Ongoing || mk.count() != 1 {
		t.Fatalf("after the wait: %+v, %d markers", m, mk.count())
	}
}

// pairLog applies an Append only once another Append is in flight with
// it (or after a second), so that two writes that could be concurrent
// commit together.
type pairLog struct {
	memLog
	arrived chan struct{}
}

func (l pairLog) Append(ctx context.Context, recs []Record) error {
	select {
	case l.arrived <- struct{}{}: // the other one is waiting
	case <-l.arrived: // wait for the other one
	case <-time.After(time.Second):
		return errors.New("no concurrent append")
	}
	return l.memLog.Append(ctx, recs)
}

// TestIDsWriteConcurrently: two transactional ids' requests do not wait
// for each other's writes (one lock per id, not per coordinator), so
// their records can share a Raft commit.
func TestIDsWriteConcurrently(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	c := newTestCoordinator(t, view, &memMarkers{}, Config{})
	ids := []string{"a", "b"}
	pids := make([]int64, 2)
	for i, id := range ids {
		var err error
		if pids[i], _, err = c.InitProducerID(ctx, id, time.Minute, -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	c.log = pairLog{memLog{view}, make(chan struct{})}
	errs := make(chan error, 2)
	for i, id := range ids {
		go func() { errs <- c.AddPartitions(ctx, id, pids[i], 0, []TopicPartition{{"t", 0}}) }()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Fatalf("AddPartitions: %v", err)
		}
	}
}

// TestInitProducerIDEndsWhenTheCoordinatorCloses: an InitProducerID that
// waits for a Prepare state's markers gets NOT_COORDINATOR when the
// coordinator closes (a node shutting down; the client finds the new
// coordinator); it spun on the Prepare state, holding the node's shutdown.
func TestInitProducerIDEndsWhenTheCoordinatorCloses(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	mk := &gatedMarkers{release: make(chan struct{})} // never released
	c := newCoordinatorWith(t, view, memLog{view}, mk, Config{})
	pid, epoch := endedTxn(t, c, "t", []TopicPartition{{"a", 0}}, true)
	done := make(chan error, 1)
	go func() {
		_, _, err := c.InitProducerID(ctx, "t", time.Minute, pid, epoch)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // it waits for the markers
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, kerr.NotCoordinator) {
			t.Fatalf("InitProducerID after Close: %v, want NOT_COORDINATOR", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("InitProducerID still running 5s after the coordinator closed")
	}
}

// endedTxn runs one transaction of id over parts up to its EndTxn (commit
// or abort) and returns its producer id and epoch.
func endedTxn(t *testing.T, c *Coordinator, id string, parts []TopicPartition, commit bool) (int64, int16) {
	t.Helper()
	ctx := context.Background()
	pid, epoch, err := c.InitProducerID(ctx, id, time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, id, pid, epoch, parts); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx, id, pid, epoch, commit); err != nil {
		t.Fatal(err)
	}
	return pid, epoch
}
