package e2e

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// InputRef names one record of a pipeline's input topic.
type InputRef struct {
	Partition int32
	Offset    int64
}

func (r InputRef) String() string { return fmt.Sprintf("in[%d]@%d", r.Partition, r.Offset) }

// transformPrefix starts every value a Pipeline writes; endMarkerPrefix
// starts the marker records WriteEndMarkers appends after the run.
const (
	transformPrefix = "eos|"
	endMarkerPrefix = "eos-end|"
)

// TransformValue is the output a Pipeline writes for one input record,
// in the transaction named label: "eos|<label>|<partition>|<offset>|"
// followed by the input's value. Labels must not contain '|'.
func TransformValue(label string, in InputRef, value []byte) []byte {
	b := fmt.Appendf(nil, "%s%s|%d|%d|", transformPrefix, label, in.Partition, in.Offset)
	return append(b, value...)
}

// ParseTransform decodes a value written by TransformValue. ok is false
// for any other value.
func ParseTransform(v []byte) (label string, in InputRef, value []byte, ok bool) {
	rest, found := bytes.CutPrefix(v, []byte(transformPrefix))
	if !found {
		return "", InputRef{}, nil, false
	}
	parts := bytes.SplitN(rest, []byte{'|'}, 4)
	if len(parts) != 4 || len(parts[0]) == 0 {
		return "", InputRef{}, nil, false
	}
	p, err := strconv.ParseInt(string(parts[1]), 10, 32)
	if err != nil {
		return "", InputRef{}, nil, false
	}
	o, err := strconv.ParseInt(string(parts[2]), 10, 64)
	if err != nil {
		return "", InputRef{}, nil, false
	}
	return string(parts[0]), InputRef{Partition: int32(p), Offset: o}, parts[3], true
}

// TxnOutcome is what a pipeline learned about one transaction.
type TxnOutcome uint8

const (
	// TxnPending: begun, not ended yet. At the end of a run it means the
	// same as TxnUnknown.
	TxnPending TxnOutcome = iota
	// TxnCommitted: End reported the commit done. Its records must be
	// visible, each once.
	TxnCommitted
	// TxnAborted: End reported an abort without error (asked for, or
	// decided by the session after a rebalance or a failed offset
	// commit). No record of it may be visible to read_committed.
	TxnAborted
	// TxnUnknown: End (or Begin) failed: the transaction may have
	// committed or not.
	TxnUnknown
)

func (o TxnOutcome) String() string {
	switch o {
	case TxnPending:
		return "pending"
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	case TxnUnknown:
		return "unknown"
	}
	return fmt.Sprintf("txnoutcome(%d)", uint8(o))
}

// Txn is one transaction of a pipeline: the input records it transformed
// and how it ended.
type Txn struct {
	Label      string // unique in a run; carried by each output record
	Instance   string // the pipeline instance that ran it
	Inputs     []InputRef
	Deliberate bool // ended with TryAbort on purpose
	Outcome    TxnOutcome
	Err        error
	Begun      time.Time
	Ended      time.Time // zero while pending
}

// TxnHistory records the transactions of pipelines, from many
// goroutines. The zero value is ready to use.
type TxnHistory struct {
	mu   sync.Mutex // guards txns
	txns []Txn
}

// Begin records a pending transaction and returns its handle for End.
func (h *TxnHistory) Begin(label, instance string, inputs []InputRef, deliberate bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.txns = append(h.txns, Txn{Label: label, Instance: instance, Inputs: inputs, Deliberate: deliberate, Begun: time.Now()})
	return len(h.txns) - 1
}

// End records how transaction i ended.
func (h *TxnHistory) End(i int, o TxnOutcome, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := &h.txns[i]
	t.Outcome, t.Err, t.Ended = o, err, time.Now()
}

// Txns returns a copy of every transaction, in the order they began.
func (h *TxnHistory) Txns() []Txn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Txn(nil), h.txns...)
}

// FirstCommitSince returns how long after t0 the first transaction begun
// at or after t0 committed, of instance (empty: any) and holding input of
// partition (-1: any). ok is false if there is none.
func (h *TxnHistory) FirstCommitSince(t0 time.Time, instance string, partition int32) (d time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.txns {
		if t.Outcome != TxnCommitted || t.Begun.Before(t0) || (instance != "" && t.Instance != instance) {
			continue
		}
		if partition >= 0 && !hasPartition(t.Inputs, partition) {
			continue
		}
		if dd := t.Ended.Sub(t0); !ok || dd < d {
			d, ok = dd, true
		}
	}
	return d, ok
}

func hasPartition(refs []InputRef, p int32) bool {
	for _, r := range refs {
		if r.Partition == p {
			return true
		}
	}
	return false
}

// CommittedThrough returns, by input partition, one past the highest
// input offset of a committed transaction: where the group's committed
// offset stands at least.
func (h *TxnHistory) CommittedThrough() map[int32]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int32]int64{}
	for _, t := range h.txns {
		if t.Outcome != TxnCommitted {
			continue
		}
		for _, r := range t.Inputs {
			out[r.Partition] = max(out[r.Partition], r.Offset+1)
		}
	}
	return out
}
