// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"errors"
	"testing"
)

// countingStore counts the reads that reach the store under a LogCache.
type countingStore struct {
	*InmemStore
	gets int
}

func (s *countingStore) GetLog(idx uint64, l *Log) error {
	s.gets++
	return s.InmemStore.GetLog(idx, l)
}

// A compaction (DeleteRange of old entries) keeps the newer entries in the
// cache and drops the deleted ones from it.
func TestLogCacheDeleteRangeKeepsNewerEntries(t *testing.T) {
	store := &countingStore{InmemStore: NewInmemStore()}
	c, err := NewLogCache(16, store)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &Log{Index: i, Term: 1, Data: []byte{byte(i)}})
	}
	if err := c.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRange(1, 6); err != nil {
		t.Fatal(err)
	}
	var l Log
	for i := uint64(7); i <= 10; i++ {
		if err := c.GetLog(i, &l); err != nil || l.Index != i || l.Data[0] != byte(i) {
			t.Fatalf("GetLog(%d) = %+v, %v; want the stored entry", i, l, err)
		}
	}
	if store.gets != 0 {
		t.Fatalf("%d reads of entries 7-10 reached the store after deleting 1-6; want 0 (served by the cache)", store.gets)
	}
	for i := uint64(1); i <= 6; i++ {
		if err := c.GetLog(i, &l); !errors.Is(err, ErrLogNotFound) {
			t.Fatalf("GetLog(%d) after its deletion = %+v, %v; want ErrLogNotFound", i, l, err)
		}
	}
	// A conflicting suffix deleted and rewritten is read as rewritten.
	if err := c.DeleteRange(9, 10); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreLogs([]*Log{{Index: 9, Term: 2, Data: []byte{99}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.GetLog(9, &l); err != nil || l.Term != 2 {
		t.Fatalf("GetLog(9) = %+v, %v; want the rewritten entry of term 2", l, err)
	}
	if err := c.GetLog(10, &l); !errors.Is(err, ErrLogNotFound) {
		t.Fatalf("GetLog(10) after its deletion = %+v, %v; want ErrLogNotFound", l, err)
	}
}
