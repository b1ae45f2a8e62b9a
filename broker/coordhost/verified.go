package coordhost

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/kafkaapi"
)

// Verified is a partition leader's memory of the transactions whose
// coordinator confirmed that they hold the partition (KIP-890), so that a
// producer's transaction is verified once per partition rather than for
// every batch; Kafka keeps the same per producer (VerificationGuard).
//
// An entry is made when a batch of the producer finds none (with a fresh
// guard), becomes verified when a batch is proposed under that guard, and
// is forgotten when a marker for the producer is proposed or the leader
// epoch changes. A batch whose verification began before such an event is
// refused, so no batch of an ended transaction opens a new one that its
// coordinator does not know of.
type Verified struct {
	// mu guards the fields below. It is held across the proposal of a
	// verified batch and of a marker, so that a marker cannot slip between
	// a batch's check and its proposal.
	mu sync.Mutex
	// epoch is the leader epoch the entries were made in.
	epoch int32
	// next is the last guard handed out; guards are never reused, so
	// those up to epochStart (next when epoch last changed) were handed
	// out by an earlier leadership.
	next, epochStart uint64
	// producers holds an entry per producer id with a transaction seen
	// since its last marker.
	producers map[int64]*verifyEntry
	// pruneAt is the size at which Check prunes next: it doubles after a
	// prune that left the map large, so pruning costs amortised O(1).
	pruneAt int
}

// verifyEntry is one producer's verification on the partition.
type verifyEntry struct {
	epoch    int16 // the producer epoch verified or being verified
	guard    kafkaapi.TxnGuard
	verified bool
	made     time.Time
	// written is a number from next, new at each batch proposed under
	// guard: the stamp of the producer's last write.
	written uint64
}

// Entries not verified after verifyAbandoned were abandoned (a
// verification waits at most the request timeout); they are dropped once
// the map holds more than verifyPruneAt entries. Unverified entries are
// what a client can make: past verifyMaxEntries they are all dropped,
// whatever their age, so a flood of made-up producer ids costs bounded
// memory (their verifications then fail their guard: INVALID_TXN_STATE).
const (
	verifyAbandoned  = 2 * time.Minute
	verifyPruneAt    = 1024
	verifyMaxEntries = 16 * verifyPruneAt
)

// sync forgets every entry when the leader epoch has changed: another
// leader may have written markers meanwhile. Call with mu held.
func (v *Verified) sync(epoch int32) {
	if v.producers == nil || v.epoch != epoch {
		v.epoch, v.epochStart = epoch, v.next
		v.producers = make(map[int64]*verifyEntry)
	}
}

// Check reports whether producer pid's transaction at epoch is verified
// on the partition, and the guard under which to produce its batch.
func (v *Verified) Check(leaderEpoch int32, pid int64, epoch int16) (bool, kafkaapi.TxnGuard) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sync(leaderEpoch)
	if e := v.producers[pid]; e != nil && e.epoch == epoch {
		return e.verified, e.guard
	}
	if len(v.producers) >= max(v.pruneAt, verifyPruneAt) {
		v.prune(time.Now())
		v.pruneAt = 2 * len(v.producers)
	}
	v.next++
	v.producers[pid] = &verifyEntry{epoch: epoch, guard: kafkaapi.TxnGuard(v.next), made: time.Now()}
	return false, kafkaapi.TxnGuard(v.next)
}

// prune drops the entries that were never verified and are too old to be
// waited on. Call with mu held.
func (v *Verified) prune(now time.Time) {
	for pid, e := range v.producers {
		if !e.verified && now.Sub(e.made) > verifyAbandoned {
			delete(v.producers, pid)
		}
	}
	if len(v.producers) < verifyMaxEntries {
		return
	}
	for pid, e := range v.producers {
		if !e.verified {
			delete(v.producers, pid)
		}
	}
}

// Produce marks producer pid's transaction at epoch verified and calls
// propose, if guard is still the producer's; else it proposes nothing and
// returns why. A guard of an earlier leadership is NOT_LEADER_OR_FOLLOWER,
// which clients retry (verifying anew with the partition's leader), as
// Kafka answers a batch whose leader moved; otherwise a marker for the
// producer came after guard (its transaction ended), or the guard was
// dropped with the abandoned entries: INVALID_TXN_STATE.
func (v *Verified) Produce(leaderEpoch int32, pid int64, epoch int16, guard kafkaapi.TxnGuard, propose func()) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sync(leaderEpoch)
	e := v.producers[pid]
	switch {
	case uint64(guard) <= v.epochStart:
		return fmt.Errorf("%w: the leader changed while the partition was being verified", kerr.NotLeaderForPartition)
	case e == nil || e.guard != guard || e.epoch != epoch:
		return fmt.Errorf("%w: the transaction ended while the partition was being verified", kerr.InvalidTxnState)
	}
	e.verified = true
	v.next++
	e.written = v.next
	propose()
	return nil
}

// Marker forgets producer pid's verification and calls propose, which
// proposes its marker of producer epoch epoch. A marker of transactions
// v2 (v2) ends the transaction of the epoch before its own: a
// verification at its epoch or later is of the producer's next
// transaction, which its coordinator only took once this transaction's
// markers were written, and is kept.
func (v *Verified) Marker(pid int64, epoch int16, v2 bool, propose func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e := v.producers[pid]; e != nil && (!v2 || e.epoch < epoch) {
		delete(v.producers, pid)
	}
	propose()
}

// txnStamp is what the partition's leader knew of a producer's
// transactional writes at one moment: it changes with each verification
// begun, batch proposed and marker proposed for the producer, and with
// the leader epoch.
type txnStamp struct {
	leaderEpoch int32
	guard       kafkaapi.TxnGuard // 0: no entry
	written     uint64
}

// stamp returns producer pid's stamp now.
func (v *Verified) stamp(leaderEpoch int32, pid int64) txnStamp {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sync(leaderEpoch)
	return v.stampLocked(pid)
}

func (v *Verified) stampLocked(pid int64) txnStamp {
	st := txnStamp{leaderEpoch: v.epoch}
	if e := v.producers[pid]; e != nil {
		st.guard, st.written = e.guard, e.written
	}
	return st
}

// abortUnchanged calls propose, which proposes an ABORT marker for
// producer pid, and forgets the producer's verification, if its stamp is
// still st; else it returns false and proposes nothing. Everything the
// producer proposes after is ordered after the marker; anything it
// proposed since st would have changed the stamp.
func (v *Verified) abortUnchanged(leaderEpoch int32, pid int64, st txnStamp, propose func()) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sync(leaderEpoch)
	if v.stampLocked(pid) != st {
		return false
	}
	delete(v.producers, pid)
	propose()
	return true
}
