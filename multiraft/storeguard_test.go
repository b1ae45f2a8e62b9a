package multiraft

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/logging"
)

// flakyStore fails its writes with ENOSPC while full is set.
type flakyStore struct {
	*raft.InmemStore
	full atomic.Bool
}

func (s *flakyStore) Close() error { return nil }

func (s *flakyStore) fail() error {
	if s.full.Load() {
		return syscall.ENOSPC
	}
	return nil
}

func (s *flakyStore) StoreLogs(logs []*raft.Log) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.InmemStore.StoreLogs(logs)
}

func (s *flakyStore) SetUint64(k []byte, v uint64) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.InmemStore.SetUint64(k, v)
}

// A failed write is the group's storage error for a while; a stable
// write (raft's term), which raft cannot survive failing, waits for the
// disk once raft runs, and returns once it has room; one still waiting
// when the group closes ends its goroutine instead of returning to raft.
// Rewriting the value already stored writes nothing.
func TestGuardedStoreWaitsForTheDisk(t *testing.T) {
	fs := &flakyStore{InmemStore: raft.NewInmemStore()}
	stop := make(chan struct{})
	g := &guardedStore{logStore: fs, stop: stop, log: logging.Discard()}
	if err := g.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	fs.full.Store(true)
	if err := g.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatalf("rewriting the stored term on a full disk: %v, want nothing written", err)
	}
	if err := g.SetUint64([]byte("CurrentTerm"), 2); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a stable write before raft runs: %v, want the error", err)
	}
	if err := g.StoreLogs([]*raft.Log{{Index: 1, Term: 1}}); !errors.Is(err, syscall.ENOSPC) || !errors.Is(g.StorageErr(), syscall.ENOSPC) {
		t.Fatalf("StoreLogs on a full disk: %v, StorageErr %v; want ENOSPC for both", err, g.StorageErr())
	}
	g.setRunning()
	stored := make(chan error, 1)
	go func() { stored <- g.SetUint64([]byte("CurrentTerm"), 2) }()
	select {
	case err := <-stored:
		t.Fatalf("a stable write on a full disk returned %v, want it to wait", err)
	case <-time.After(50 * time.Millisecond):
	}
	fs.full.Store(false)
	if err := <-stored; err != nil {
		t.Fatalf("the stable write once the disk has room: %v", err)
	}
	if v, _ := fs.GetUint64([]byte("CurrentTerm")); v != 2 {
		t.Fatalf("stored term %d, want 2", v)
	}
	if err := g.StoreLogs([]*raft.Log{{Index: 1, Term: 1}}); err != nil || g.StorageErr() != nil {
		t.Fatalf("StoreLogs with room: %v, StorageErr %v", err, g.StorageErr())
	}

	fs.full.Store(true)
	returned, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		_ = g.SetUint64([]byte("CurrentTerm"), 3)
		close(returned)
	}()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting stable write did not end when the group closed")
	}
	select {
	case <-returned:
		t.Fatal("the stable write returned to its caller after the group closed")
	default:
	}
}
