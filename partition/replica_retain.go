package partition

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/partition/compact"
	"github.com/minikafka/minikafka-go/partition/seglog"
)

// Trim moves the partition's log start offset up to offset on every
// replica (retention, DeleteRecords) and returns the start after it. This
// replica must lead. The FSM's error is returned as is: a *fsm.Error with
// OFFSET_OUT_OF_RANGE for an offset past the high watermark. While this
// replica's storage fails (fsm.FSM.StorageErr) nothing is proposed: it
// answers a *fsm.Error with KAFKA_STORAGE_ERROR at once, as Propose does.
func (r *Replica) Trim(ctx context.Context, offset int64) (int64, error) {
	if err := r.storageRefusal(); err != nil {
		return r.fsm.LogStartOffset(), err
	}
	res, err := waitFor[*fsm.TrimResult](r.group.Propose(fsm.EncodeTrim(offset), proposeTimeout(ctx)))
	if err != nil {
		return 0, err
	}
	return res.StartOffset, res.Err
}

// ExpireProducers makes every replica forget the producers whose last
// batch is older than ttl as of this leader's clock now
// (producer.id.expiration.ms). It returns how many went and how many stay.
// While this replica's storage fails it answers KAFKA_STORAGE_ERROR at
// once, as Trim does.
func (r *Replica) ExpireProducers(ctx context.Context, now time.Time, ttl time.Duration) (removed, remaining int, err error) {
	if err := r.storageRefusal(); err != nil {
		return 0, 0, err
	}
	cmd := fsm.EncodeExpireProducers(now.UnixMilli(), ttl.Milliseconds())
	res, err := waitFor[*fsm.ExpireResult](r.group.Propose(cmd, proposeTimeout(ctx)))
	if err != nil {
		return 0, 0, err
	}
	return res.Removed, res.Producers, nil
}

// Clean has every replica clean its log below upTo (cleanup.policy=
// compact) as of this leader's clock now, keeping tombstones for
// deleteRetention; the cleaning itself runs after the apply, off the
// apply path. Its map of keys covers the log from dirtyFrom on (which
// CleanedTo must vouch for) and stops at mapBytes (0: no bound); both 0
// is a cleaning of the whole range, which older builds apply too
// (fsm.EncodeClean). This replica must lead. It reports whether a
// cleaning was queued.
func (r *Replica) Clean(ctx context.Context, upTo int64, now time.Time, deleteRetention time.Duration, dirtyFrom, mapBytes int64) (bool, error) {
	if err := r.storageRefusal(); err != nil {
		return false, err
	}
	cmd := fsm.EncodeClean(upTo, now.UnixMilli(), deleteRetention.Milliseconds(), dirtyFrom, mapBytes)
	res, err := waitFor[*fsm.CleanResult](r.group.Propose(cmd, proposeTimeout(ctx)))
	if err != nil {
		return false, err
	}
	return res.Queued, res.Err
}

// CleanedTo is where this replica's log is clean up to and whether a
// cleaning is pending (fsm.FSM.CleanedTo).
func (r *Replica) CleanedTo() (offset int64, pending bool) { return r.fsm.CleanedTo() }

// Cleanings returns how many cleanings this replica has run and what they
// did.
func (r *Replica) Cleanings() (int, compact.Stats) { return r.fsm.Cleanings() }

// storageRefusal is the *fsm.Error (KAFKA_STORAGE_ERROR) that commands are
// refused with while the FSM waits out a storage failure, or nil.
func (r *Replica) storageRefusal() error {
	if err := r.fsm.StorageErr(); err != nil {
		return &fsm.Error{Code: kerr.KafkaStorageError, Detail: err.Error()}
	}
	return nil
}

// proposeTimeout bounds a proposal's queueing by ctx's deadline, or 10 s.
func proposeTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 10 * time.Second
}

// Segments describes the log's segments (retention decisions).
func (r *Replica) Segments() []seglog.SegmentInfo { return r.log.Segments() }

// SetSegmentLimits applies a topic's segment.bytes and segment.ms.
func (r *Replica) SetSegmentLimits(bytes int64, age time.Duration) {
	r.log.SetSegmentLimits(bytes, age)
}

// snapshotter takes a Raft snapshot after each trim (kicked through
// snapKick by the FSM's Trimmed hook), so that the stored snapshot stops
// referring to deleted segments and a follower that needs one can get it.
// Close stops it before the group closes, so its Snapshot call is always
// answered.
func (r *Replica) snapshotter() {
	defer close(r.snapDone)
	for {
		select {
		case <-r.snapStop:
			return
		case <-r.snapKick:
			if err := r.group.Snapshot(); err != nil {
				r.logger.Warn("snapshot after trim failed", "err", err)
			}
		}
	}
}
