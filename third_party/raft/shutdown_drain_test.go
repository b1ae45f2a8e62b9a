// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"testing"
	"time"
)

// A leadership transfer asked for while raft shuts down is answered, never
// left waiting for ever.
func TestLeadershipTransferRacingShutdownIsAnswered(t *testing.T) {
	for round := range 20 {
		c := MakeClusterCustom(t, &MakeClusterOpts{Peers: 3, Bootstrap: true, Conf: inmemConfig(t),
			LongstopTimeout: 30 * time.Second}) // generous: make test runs it beside other packages
		leader := c.Leader()
		done := make(chan error, 1)
		go func() { done <- leader.LeadershipTransfer().Error() }()
		_ = leader.Shutdown().Error()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: a leadership transfer asked for during shutdown was not answered within 5s", round)
		}
		c.Close()
	}
}
