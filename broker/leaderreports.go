package broker

import (
	"context"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/metadata"
)

// leaderReports sends this node's new partition leaderships to the
// metadata group, so that every node's Metadata answers name them: many at
// once in a SetPartitionLeaders, as many as arrived while the last one was
// on its way (a node that wins thousands of elections after a fail-over
// sent thousands of entries, and every node copied the topic's partitions
// for each). A report goes once applied, or once its leadership is gone
// (its successor reports for itself).
type leaderReports struct {
	n *Node
	// mu guards pending: the term each replica's report is for.
	mu      sync.Mutex
	pending map[*localReplica]uint64
	kick    chan struct{} // capacity 1: pending has something new
}

func newLeaderReports(n *Node) *leaderReports {
	return &leaderReports{n: n, pending: map[*localReplica]uint64{}, kick: make(chan struct{}, 1)}
}

// add asks for lr's leadership in term to be reported.
func (r *leaderReports) add(lr *localReplica, term uint64) {
	r.mu.Lock()
	r.pending[lr] = term
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// loop sends the pending reports until the node stops. It is owned by the
// Node.
func (r *leaderReports) loop() {
	defer r.n.wg.Done()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-r.n.ctx.Done():
			return
		case <-r.kick:
		case <-retry.C:
		}
		if !r.sendAll() {
			retry.Reset(r.n.cfg.Tuning.LeaderReportRetry)
		}
	}
}

// sendAll sends batches until nothing is pending; it returns false when a
// batch failed or a replica was not ready, so a retry is due.
func (r *leaderReports) sendAll() bool {
	for r.n.ctx.Err() == nil {
		batch, waiting := r.take(metadata.MaxLeaderReports)
		if len(batch) == 0 {
			return !waiting
		}
		cmd := metadata.SetPartitionLeaders{Reports: make([]metadata.SetPartitionLeader, 0, len(batch))}
		for lr, term := range batch {
			cmd.Reports = append(cmd.Reports, metadata.SetPartitionLeader{Topic: lr.info.Topic,
				Partition: lr.info.Partition, Leader: r.n.cfg.NodeID, Epoch: int32(term)})
		}
		ctx, cancel := context.WithTimeout(r.n.ctx, r.n.cfg.Tuning.LeaderReport)
		_, err := r.n.proposeMeta(ctx, cmd)
		cancel()
		if err != nil {
			r.n.logger.Debug("leader reports not applied yet", "count", len(batch), "err", err)
			r.putBack(batch)
			return false
		}
	}
	return true
}

// take removes up to max pending reports that are still due (their
// replica leads in that term) and ready to send; waiting says that some
// replica is still opening (its leadership came before OpenReplica
// returned).
func (r *leaderReports) take(max int) (batch map[*localReplica]uint64, waiting bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	batch = map[*localReplica]uint64{}
	for lr, term := range r.pending {
		if len(batch) == max {
			break
		}
		select {
		case <-lr.ready:
		default:
			waiting = true
			continue
		}
		delete(r.pending, lr)
		if lr.rep.IsLeader() && uint64(lr.rep.LeaderEpoch()) == term {
			batch[lr] = term
		}
	}
	return batch, waiting
}

// putBack returns a failed batch to pending, unless a newer report of the
// same replica arrived meanwhile.
func (r *leaderReports) putBack(batch map[*localReplica]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for lr, term := range batch {
		if _, newer := r.pending[lr]; !newer {
			r.pending[lr] = term
		}
	}
}
