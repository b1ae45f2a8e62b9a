package seglog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// OnFsync is told of every file fsync the log makes, and of nothing when
// there is nothing to sync.
func TestOnFsyncObservesEachFsync(t *testing.T) {
	opts := smallOpts()
	opts.FlushBytes = -1 // only this test's Syncs run
	var fsyncs, observed atomic.Int64
	opts.FS = syncHookFS{vfs.OS, func(f vfs.File) error {
		fsyncs.Add(1)
		return f.Sync()
	}}
	opts.OnFsync = func(d time.Duration) {
		if d < 0 {
			t.Errorf("negative fsync duration %v", d)
		}
		observed.Add(1)
	}
	l := openLog(t, t.TempDir(), opts)
	appendAll(t, l, makeHistory(10, 0, 3).batches)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if fsyncs.Load() == 0 || observed.Load() != fsyncs.Load() {
		t.Fatalf("%d fsyncs, %d observed", fsyncs.Load(), observed.Load())
	}
	before := observed.Load()
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if observed.Load() != before {
		t.Fatalf("a Sync with nothing dirty observed %d fsyncs", observed.Load()-before)
	}
}
