package partition

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// A Sync that starts while another is inside its fsync must not return
// before that fsync is done: the FSM records a log end as durable once
// Sync returns. The first Sync is held in its fsync phase; synctest.Wait
// lets the second run until it blocks or returns, with no timing involved.
func TestConcurrentSyncWaitsForRunningFsync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := smallOpts()
		opts.FlushBytes = -1 // only this test's Syncs run
		inSync, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		opts.beforeFsync = func() {
			if calls.Add(1) == 1 {
				close(inSync)
				<-release
			}
		}
		dir := t.TempDir()
		l := openLog(t, dir, opts)
		h := makeHistory(20, 0, 11)
		appendAll(t, l, h.batches)

		first, second := make(chan error, 1), make(chan error, 1)
		go func() { first <- l.Sync() }()
		<-inSync
		go func() { second <- l.Sync() }()
		synctest.Wait() // the second Sync has returned or is blocked
		select {
		case err := <-second:
			close(release) // let the first finish so the bubble can end
			<-first
			t.Fatalf("second Sync returned (err %v) while the first was still before its fsync", err)
		default:
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		if n := dirtySegments(l); n != 0 {
			t.Fatalf("%d segments dirty after both Syncs", n)
		}
	})
}
