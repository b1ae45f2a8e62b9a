// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

// drainLeadershipTransfers answers the leadership transfers no loop will
// take any more, once raft has shut down (a MiniKafka patch: see
// initiateLeadershipTransfer).
func (r *Raft) drainLeadershipTransfers() {
	for {
		select {
		case f := <-r.leadershipTransferCh:
			f.respond(ErrRaftShutdown)
		default:
			return
		}
	}
}
