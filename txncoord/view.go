package txncoord

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// View is the materialised state of one __transaction_state partition:
// the latest metadata of every transactional id, built by applying the
// partition's records in log order. It is deterministic: the same records
// give the same view on every replica, and nothing it returns depends on a
// clock, randomness or map order.
//
// Apply and Reset are called by the partition's state machine, one at a
// time; every other method may be called concurrently with them.
type View struct {
	// mu guards txns. Apply and Reset hold it for writing; readers hold it
	// for reading and return copies.
	mu   sync.RWMutex
	txns map[string]Metadata
}

// NewView returns an empty view.
func NewView() *View { return &View{txns: make(map[string]Metadata)} }

// Reset forgets everything (the log is fed again from its start).
func (v *View) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.txns = make(map[string]Metadata)
}

// Apply applies one record: a transactional id's metadata, or a tombstone
// (nil value) that deletes it. A record it cannot read is an error
// wrapping ErrInvalidRecord, and leaves the view unchanged, so replicas
// that ignore the error stay identical.
func (v *View) Apply(key, value []byte) error {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return &RecordError{Reason: "transaction metadata key", Err: err}
	}
	if k.Version != keyVersion {
		return &RecordError{Reason: fmt.Sprintf("key version %d", k.Version)}
	}
	if value == nil {
		v.mu.Lock()
		delete(v.txns, k.TransactionalID)
		v.mu.Unlock()
		return nil
	}
	m, err := decodeValue(value)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.txns[k.TransactionalID] = m
	v.mu.Unlock()
	return nil
}

// Txn returns a transactional id's metadata.
func (v *View) Txn(id string) (Metadata, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	m, ok := v.txns[id]
	return m.clone(), ok
}

// IDs returns every transactional id the view holds, sorted.
func (v *View) IDs() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return slices.Sorted(maps.Keys(v.txns))
}
