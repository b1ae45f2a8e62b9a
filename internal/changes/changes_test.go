package changes

import (
	"testing"
)

func TestFireClosesChannel(t *testing.T) {
	var s Signal
	ch := s.C()
	if s.C() != ch {
		t.Fatal("C changed without a Fire")
	}
	s.Fire()
	select {
	case <-ch:
	default:
		t.Fatal("Fire did not close the channel")
	}
	if s.C() == ch {
		t.Fatal("C returns the closed channel after Fire")
	}
}

func TestWatchCallsWakeOnceAtFire(t *testing.T) {
	var s Signal
	calls := 0
	s.Watch(s.C(), func() { calls++ })
	if calls != 0 || s.Watchers() != 1 {
		t.Fatalf("before Fire: %d calls, %d watchers", calls, s.Watchers())
	}
	s.Fire()
	s.Fire()
	if calls != 1 || s.Watchers() != 0 {
		t.Fatalf("after two Fires: %d calls, %d watchers; want 1 call", calls, s.Watchers())
	}
}

// A change between taking the channel and registering is not missed.
func TestWatchAfterChangeWakesAtOnce(t *testing.T) {
	var s Signal
	seen := s.C()
	s.Fire()
	calls := 0
	stop := s.Watch(seen, func() { calls++ })
	if calls != 1 || s.Watchers() != 0 {
		t.Fatalf("%d calls, %d watchers; want a call at once", calls, s.Watchers())
	}
	stop()
}

func TestStopCancelsWake(t *testing.T) {
	var s Signal
	var a, b int
	stopA := s.Watch(s.C(), func() { a++ })
	s.Watch(s.C(), func() { b++ })
	stopA()
	stopA()
	if s.Watchers() != 1 {
		t.Fatalf("%d watchers after a stop, want 1", s.Watchers())
	}
	s.Fire()
	if a != 0 || b != 1 {
		t.Fatalf("stopped wake called %d times, the other %d", a, b)
	}
	stopA() // after Fire: harmless
}

// Wake-ups left registered by waiters that stopped do not pile up.
func TestStoppedWatchesDoNotAccumulate(t *testing.T) {
	var s Signal
	for range 1000 {
		stop := s.Watch(s.C(), func() {})
		stop()
	}
	if n := s.Watchers(); n != 0 {
		t.Fatalf("%d watchers left", n)
	}
}

func TestConcurrentFireAndWatch(t *testing.T) {
	var s Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			s.Fire()
		}
	}()
	for range 1000 {
		woke := make(chan struct{}, 1)
		seen := s.C()
		stop := s.Watch(seen, func() {
			select {
			case woke <- struct{}{}:
			default:
			}
		})
		stop()
	}
	<-done
	// Whatever the interleaving, a registered watcher is woken by the
	// next Fire.
	woke := make(chan struct{}, 1)
	s.Watch(s.C(), func() { woke <- struct{}{} })
	s.Fire()
	<-woke
}
