package multiraft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestProposalsRacingCloseAreAnswered: every proposal made while the
// leader's group closes ends, with the outcome or one of this package's
// errors. A proposal raft still held in its apply queue at the shutdown
// was never answered (hashicorp/raft#498, patched in third_party/raft):
// a node whose metadata controller waited for one never finished stopping.
func TestProposalsRacingCloseAreAnswered(t *testing.T) {
	net := newTestNet(t, nil)
	net.startWatched()
	for round := range 5 {
		name := fmt.Sprintf("g%d", round)
		var gs []*Group
		for id := int32(1); id <= 3; id++ {
			g, _ := net.open(id, name, []int32{1, 2, 3}, fastTiming(), false)
			gs = append(gs, g)
		}
		leader := gs[leaderOf(t, gs)]
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 500 {
					_, _, err := leader.Propose(binary.BigEndian.AppendUint64(nil, uint64(w*1000+i)), 0).Wait()
					if errors.Is(err, ErrGroupClosed) || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrMaybeCommitted) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round*2) * time.Millisecond)
		if err := leader.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: a proposal racing its group's Close was not answered within 10s", round)
		}
		close(errs)
		for err := range errs {
			t.Errorf("round %d: a proposal racing Close ended with %v, want the outcome or one of this package's errors", round, err)
		}
	}
}
