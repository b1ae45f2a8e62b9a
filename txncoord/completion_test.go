package txncoord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// event is one write of a history: an Append of records, or the markers
// of one transaction.
type event struct {
	appends []Metadata // the records of one Append, in order
	ids     []string
	marker  *Marker
}

// historyLog applies like memLog and records every Append and every
// marker write, in the order they happen.
type historyLog struct {
	memLog
	mu     sync.Mutex // guards events
	events []event
}

func (h *historyLog) Append(ctx context.Context, recs []Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ev event
	for _, r := range recs {
		var k kmsg.TxnMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return err
		}
		m, err := decodeValue(r.Value)
		if err != nil {
			return err
		}
		ev.appends, ev.ids = append(ev.appends, m), append(ev.ids, k.TransactionalID)
	}
	h.events = append(h.events, ev)
	return h.memLog.Append(ctx, recs)
}

func (h *historyLog) WriteMarkers(_ context.Context, mk Marker, _ []TopicPartition) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, event{marker: &mk})
	return nil
}

// TestNextTxnWritesTheCompleteState: AddPartitionsToTxn of the next
// transaction, waiting for the previous one's markers, writes that
// transaction's Complete state and its own Ongoing state in one Append,
// after the markers; the completion then writes nothing more.
func TestNextTxnWritesTheCompleteState(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	h := &historyLog{memLog: memLog{view}}
	mk := &gatedMarkers{release: make(chan struct{})}
	c := newCoordinatorWith(t, view, h, mk, Config{CompletionWait: 10 * time.Second})
	parts := []TopicPartition{{"a", 0}}
	pid, epoch := endedTxn(t, c, "t", parts, true)
	before := len(h.events)
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(mk.release)
	}()
	if err := c.AddPartitions(ctx, "t", pid, epoch, parts); err != nil {
		t.Fatalf("the next transaction: %v", err)
	}
	c.Close() // the completion has ended: it would write nothing more
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.events[before:]
	if len(got) != 1 || len(got[0].appends) != 2 || got[0].appends[0].State != CompleteCommit || got[0].appends[1].State != Ongoing {
		t.Fatalf("writes after EndTxn: %+v", got)
	}
	if m, _ := view.Txn("t"); m.State != Ongoing || mk.count() != 1 {
		t.Fatalf("after: %+v, %d markers", m, mk.count())
	}
}

// TestFencedWaiterLeavesTheCompleteState: a waiting request that fails
// its own check writes nothing; the completion writes the Complete state.
func TestFencedWaiterLeavesTheCompleteState(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	mk := &gatedMarkers{release: make(chan struct{})}
	c := newCoordinatorWith(t, view, memLog{view}, mk, Config{CompletionWait: 10 * time.Second})
	parts := []TopicPartition{{"a", 0}}
	pid, epoch := endedTxn(t, c, "t", parts, false)
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(mk.release)
	}()
	if err := c.AddPartitions(ctx, "t", pid, epoch+1, parts); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("another epoch: %v", err)
	}
	waitState(t, view, "t", CompleteAbort)
}

// TestBackToBackTransactionsHistory runs many producers' transactions
// back to back, commits and aborts mixed, v1 and v2, and checks the
// history: each id's states follow Ongoing, Prepare, Complete; a Complete
// state is written only after its transaction's markers; each
// transaction gets one marker per attempt and ends as its EndTxn asked.
func TestBackToBackTransactionsHistory(t *testing.T) {
	ctx := context.Background()
	view := NewView()
	h := &historyLog{memLog: memLog{view}}
	c := newCoordinatorWith(t, view, h, h, Config{CompletionWait: 10 * time.Second})
	const producers, txns = 8, 30
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() { errs <- runProducer(ctx, c, fmt.Sprintf("p%d", p), p%2 == 0, txns) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for p := range producers {
		waitState(t, view, fmt.Sprintf("p%d", p), CompleteAbort) // the last transaction aborts
	}
	c.Close()
	checkHistory(t, h.events, producers*txns)
}

// runProducer runs n transactions of id one after another, the i-th
// committed when i is even; v2 ends them with EndTxnV2.
func runProducer(ctx context.Context, c *Coordinator, id string, v2 bool, n int) error {
	pid, epoch, err := c.InitProducerID(ctx, id, time.Minute, -1, -1)
	if err != nil {
		return err
	}
	for i := range n {
		commit := i%2 == 0 && i != n-1
		if err := c.AddPartitions(ctx, id, pid, epoch, []TopicPartition{{"a", int32(i % 3)}}); err != nil {
			return fmt.Errorf("%s: transaction %d: AddPartitions: %w", id, i, err)
		}
		if !v2 {
			if err := c.EndTxn(ctx, id, pid, epoch, commit); err != nil {
				return fmt.Errorf("%s: transaction %d: EndTxn: %w", id, i, err)
			}
			continue
		}
		if pid, epoch, err = c.EndTxnV2(ctx, id, pid, epoch, commit); err != nil {
			return fmt.Errorf("%s: transaction %d: EndTxnV2: %w", id, i, err)
		}
	}
	return nil
}

// checkHistory checks the order of states and markers of every id.
func checkHistory(t *testing.T, events []event, want int) {
	t.Helper()
	last := map[string]Metadata{}
	marked := map[int64]int{} // markers written per producer id, not yet followed by a Complete state
	completes := 0
	for _, ev := range events {
		if ev.marker != nil {
			marked[ev.marker.ProducerID]++
			continue
		}
		for i, m := range ev.appends {
			id, prev := ev.ids[i], last[ev.ids[i]]
			switch m.State {
			case Ongoing:
				if prev.State != Ongoing && prev.State != Empty && prev.State != CompleteCommit && prev.State != CompleteAbort {
					t.Fatalf("%s: Ongoing after %v", id, prev.State)
				}
			case PrepareCommit, PrepareAbort:
				if prev.State != Ongoing {
					t.Fatalf("%s: %v after %v", id, m.State, prev.State)
				}
			case CompleteCommit, CompleteAbort:
				if (m.State == CompleteCommit) != (prev.State == PrepareCommit) || marked[prev.ProducerID] != 1 {
					t.Fatalf("%s: %v after %v with %d markers", id, m.State, prev.State, marked[prev.ProducerID])
				}
				marked[prev.ProducerID] = 0
				completes++
			}
			last[id] = m
		}
	}
	if completes != want {
		t.Fatalf("%d transactions completed, want %d", completes, want)
	}
}
