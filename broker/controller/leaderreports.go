package controller

import (
	"context"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/metadata"
)

// A Leadership is a local replica whose leadership is to be reported. Its
// dynamic type must be comparable (a pointer): reports are keyed by it.
type Leadership interface {
	// TopicPartition names the replica's partition.
	TopicPartition() (topic string, partition int32)
	// Opened is closed once the replica has finished opening.
	Opened() <-chan struct{}
	// LeadsIn reports whether the replica leads in term; it is asked only
	// once Opened is closed.
	LeadsIn(term uint64) bool
}

// leaderReports sends this node's new partition leaderships to the
// metadata group, so that every node's Metadata answers name them: many at
// once in a SetPartitionLeaders, as many as arrived while the last one was
// on its way (a node that wins thousands of elections after a fail-over
// sent thousands of entries, and every node copied the topic's partitions
// for each). A report goes once applied, or once its leadership is gone
// (its successor reports for itself).
type leaderReports struct {
	c *Controller
	// mu guards pending: the term each replica's report is for.
	mu      sync.Mutex
	pending map[Leadership]uint64
	kick    chan struct{} // capacity 1: pending has something new
}

func newLeaderReports(c *Controller) *leaderReports {
	return &leaderReports{c: c, pending: map[Leadership]uint64{}, kick: make(chan struct{}, 1)}
}

// ReportLeader asks for l's leadership in term to be reported to the
// metadata group.
func (c *Controller) ReportLeader(l Leadership, term uint64) { c.reports.add(l, term) }

func (r *leaderReports) add(l Leadership, term uint64) {
	r.mu.Lock()
	r.pending[l] = term
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// loop sends the pending reports until the Controller stops. It is owned
// by the Controller (c.wg).
func (r *leaderReports) loop() {
	defer r.c.wg.Done()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-r.c.ctx.Done(): // the node stops
			return
		case <-r.kick: // a new report
		case <-retry.C: // the last batch failed, or a replica was still opening
		}
		if !r.sendAll() {
			retry.Reset(r.c.cfg.Tuning.LeaderReportRetry)
		}
	}
}

// sendAll sends batches until nothing is pending; it returns false when a
// batch failed or a replica was not ready, so a retry is due.
func (r *leaderReports) sendAll() bool {
	c := r.c
	for c.ctx.Err() == nil {
		batch, waiting := r.take(metadata.MaxLeaderReports)
		if len(batch) == 0 {
			return !waiting
		}
		cmd := metadata.SetPartitionLeaders{Reports: make([]metadata.SetPartitionLeader, 0, len(batch))}
		for l, term := range batch {
			topic, p := l.TopicPartition()
			cmd.Reports = append(cmd.Reports, metadata.SetPartitionLeader{Topic: topic,
				Partition: p, Leader: c.cfg.NodeID, Epoch: int32(term)})
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Tuning.LeaderReport)
		_, err := c.Propose(ctx, cmd)
		cancel()
		if err != nil {
			c.logger.Debug("leader reports not applied yet", "count", len(batch), "err", err)
			r.putBack(batch)
			return false
		}
	}
	return true
}

// take removes up to max pending reports that are still due (their
// replica leads in that term) and ready to send; waiting says that some
// replica is still opening (its leadership came before it finished
// opening).
func (r *leaderReports) take(max int) (batch map[Leadership]uint64, waiting bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	batch = map[Leadership]uint64{}
	for l, term := range r.pending {
		if len(batch) == max {
			break
		}
		select {
		case <-l.Opened():
		default:
			waiting = true
			continue
		}
		delete(r.pending, l)
		if l.LeadsIn(term) {
			batch[l] = term
		}
	}
	return batch, waiting
}

// putBack returns a failed batch to pending, unless a newer report of the
// same replica arrived meanwhile.
func (r *leaderReports) putBack(batch map[Leadership]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for l, term := range batch {
		if _, newer := r.pending[l]; !newer {
			r.pending[l] = term
		}
	}
}
