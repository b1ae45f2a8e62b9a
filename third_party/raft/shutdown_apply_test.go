// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestApplyRacingShutdownIsAnswered: every Apply made while the leader
// shuts down gets an answer. With BatchApplyCh (as MiniKafka runs raft) a
// future can wait in applyCh, or in fsmMutateCh, when the loops return, and
// before the patch its Error never returned (hashicorp/raft#498).
func TestApplyRacingShutdownIsAnswered(t *testing.T) {
	for round := range 10 {
		conf := inmemConfig(t)
		conf.BatchApplyCh = true
		c := MakeClusterCustom(t, &MakeClusterOpts{Peers: 3, Bootstrap: true, Conf: conf,
			LongstopTimeout: 30 * time.Second}) // generous: make test runs it beside other packages
		leader := c.Leader()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var futures []ApplyFuture
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					f := leader.Apply([]byte("x"), 0)
					mu.Lock()
					futures = append(futures, f)
					mu.Unlock()
					if errors.Is(f.Error(), ErrRaftShutdown) {
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round) * time.Millisecond)
		_ = leader.Shutdown().Error()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: an Apply racing the leader's shutdown was not answered within 5s", round)
		}
		for i, f := range futures { // the ones the writers stopped waiting for too
			answered := make(chan struct{})
			go func() { _ = f.Error(); close(answered) }()
			select {
			case <-answered:
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: future %d of %d not answered within 5s of the shutdown", round, i, len(futures))
			}
		}
		c.Close()
	}
}
