// Package changes broadcasts that something changed (a partition's high
// watermark moved). A waiter either takes a channel that the next change
// closes, or registers a wake-up that the next change calls: one waiter of
// many broadcasts (a Fetch of thousands of partitions) then needs no
// goroutine and no select case per broadcast, only one wake-up of its own.
package changes

import (
	"container/list"
	"sync"
)

// Signal is one broadcast. The zero value is ready to use; a Signal must
// not be copied after first use.
type Signal struct {
	mu sync.Mutex // guards ch and wakes
	// ch is closed by the next Fire and then replaced; nil until first
	// needed.
	ch chan struct{}
	// wakes are the wake-ups (func()) the next Fire calls; Fire drops
	// the list, so a later stop only unlinks its element from a list no
	// one reads. nil when empty.
	wakes *list.List
}

// C returns a channel that the next Fire closes. Take it before reading
// the state it guards, and take a new one after it is closed.
func (s *Signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chLocked()
}

func (s *Signal) chLocked() chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Watch calls wake once, at the Fire that closes seen (a channel C
// returned), or at once if seen is already closed (or is not C's current
// channel). wake runs with the Signal's lock held: it must be quick and
// must not block or call back into the Signal. stop cancels the call if
// it has not been made; it is safe to call more than once, and after the
// call.
func (s *Signal) Watch(seen <-chan struct{}, wake func()) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen != s.chLocked() {
		wake()
		return func() {}
	}
	if s.wakes == nil {
		s.wakes = list.New()
	}
	l := s.wakes
	e := l.PushBack(wake)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		l.Remove(e) // harmless once Fire dropped l, or after an earlier stop
	}
}

// Fire closes the current channel and calls every registered wake-up,
// each once, in the order they were registered.
func (s *Signal) Fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	l := s.wakes
	if l == nil || l.Len() == 0 {
		return
	}
	s.wakes = nil
	for e := l.Front(); e != nil; e = e.Next() {
		e.Value.(func())()
	}
}

// Watchers is how many wake-ups wait for the next Fire.
func (s *Signal) Watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wakes == nil {
		return 0
	}
	return s.wakes.Len()
}
