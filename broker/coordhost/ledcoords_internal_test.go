package coordhost

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

type fakeCoord struct{ id int }

func (*fakeCoord) Close() {}

// loadingSlot returns coordinators of a topic whose partition 0 this node
// leads in term 1 and is still loading; requests wait for it up to wait.
func loadingSlot(wait time.Duration) *ledCoords[*fakeCoord] {
	h := &Host{cfg: Config{Tuning: Tuning{LoadWait: wait}}}
	lc := newLedCoords[*fakeCoord](h, "__consumer_offsets", "group coordinator", nil)
	lc.slots[0] = &ledSlot[*fakeCoord]{term: 1, loaded: make(chan struct{})}
	return &lc
}

// A request that comes while its coordinator loads waits for the load
// rather than answering COORDINATOR_LOAD_IN_PROGRESS at once, which
// kafkajs's consumer does not retry on its first join.
func TestCoordinatorRequestWaitsForTheLoad(t *testing.T) {
	lc := loadingSlot(10 * time.Second)
	want := &fakeCoord{id: 1}
	go func() {
		time.Sleep(50 * time.Millisecond)
		if !lc.install(0, 1, want) {
			t.Error("install refused the current slot")
		}
	}()
	c, err := lc.get(context.Background(), 0)
	if err != nil || c != want {
		t.Fatalf("get = %v, %v; want the loaded coordinator", c, err)
	}
}

func TestCoordinatorLoadWaitEnds(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		lc := loadingSlot(20 * time.Millisecond)
		if _, err := lc.get(context.Background(), 0); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			t.Fatalf("get after the bound: %v; want COORDINATOR_LOAD_IN_PROGRESS", err)
		}
		lc.h.cfg.Tuning.LoadWait = 0
		if _, err := lc.get(context.Background(), 0); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			t.Fatalf("get with no wait: %v; want COORDINATOR_LOAD_IN_PROGRESS", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		lc := loadingSlot(time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := lc.get(ctx, 0); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			t.Fatalf("get with an ended context: %v; want COORDINATOR_LOAD_IN_PROGRESS", err)
		}
	})
	t.Run("leadership lost", func(t *testing.T) {
		lc := loadingSlot(time.Hour)
		getEndsNotCoordinator(t, lc, func() { lc.leadership(new(Replica), false, 1) })
	})
	t.Run("closed", func(t *testing.T) {
		lc := loadingSlot(time.Hour)
		getEndsNotCoordinator(t, lc, lc.closeAll)
		if lc.install(0, 1, &fakeCoord{}) {
			t.Fatal("install succeeded after closeAll")
		}
	})
}

// getEndsNotCoordinator checks that a get waiting on lc's loading slot
// returns NOT_COORDINATOR soon after drop, not at the end of its wait.
func getEndsNotCoordinator(t *testing.T, lc *ledCoords[*fakeCoord], drop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := lc.get(context.Background(), 0)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	drop()
	select {
	case err := <-done:
		if !errors.Is(err, kerr.NotCoordinator) {
			t.Fatalf("get after the slot went: %v; want NOT_COORDINATOR", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("get still waits after the slot went")
	}
}
