package sharepart

import (
	"cmp"
	"maps"
	"slices"
	"sync"
)

// View is the materialised state of one __share_group_state partition:
// the latest Snapshot of every share partition whose key hashes to it,
// built by applying the partition's records in log order. The same
// records give the same view on every replica.
//
// Apply and Reset are called by the partition's state machine, one at a
// time; the other methods may be called concurrently with them.
type View struct {
	// mu guards states. Apply and Reset hold it for writing; readers
	// hold it for reading and return copies.
	mu     sync.RWMutex
	states map[Key]Snapshot
}

// NewView returns an empty view.
func NewView() *View { return &View{states: make(map[Key]Snapshot)} }

// Reset forgets everything (the log is fed again from its start).
func (v *View) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.states = make(map[Key]Snapshot)
}

// Apply applies one record: a share partition's snapshot, or a tombstone
// (nil value) that deletes it. A record it cannot read is an error
// wrapping ErrCorrupt and leaves the view unchanged.
func (v *View) Apply(key, value []byte) error {
	k, err := DecodeKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		v.mu.Lock()
		delete(v.states, k)
		v.mu.Unlock()
		return nil
	}
	s, err := DecodeValue(value)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.states[k] = s
	v.mu.Unlock()
	return nil
}

// Get returns the snapshot of k.
func (v *View) Get(k Key) (Snapshot, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	s, ok := v.states[k]
	s.Batches = slices.Clone(s.Batches)
	return s, ok
}

// Keys returns the share partitions the view holds, of group (or of
// every group for ""), in order.
func (v *View) Keys(group string) []Key {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []Key
	for k := range maps.Keys(v.states) {
		if group == "" || k.Group == group {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), slices.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
