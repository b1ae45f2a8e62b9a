package producerstate

import "strconv"

// Verdict is what Validate decides about a batch.
type Verdict uint8

// Verdicts. New values only ever go at the end.
const (
	// Append means the batch is in sequence (or not idempotent): append
	// it, then Record it.
	Append Verdict = iota
	// Duplicate means the batch is an exact retry of a retained batch:
	// append nothing and answer with Result.Original.
	Duplicate
	// Fenced means the producer epoch is lower than the recorded one:
	// INVALID_PRODUCER_EPOCH.
	Fenced
	// OutOfOrder means the sequence is neither next nor an exact retry:
	// OUT_OF_ORDER_SEQUENCE_NUMBER.
	OutOfOrder
	// TableFull means the batch is a new producer's and the table holds
	// as many producers as its limit (Table.SetLimit): append nothing.
	TableFull
	// TxnStateInvalid means a batch that is not transactional from a
	// producer whose transaction is open on the partition: append nothing
	// and answer INVALID_TXN_STATE.
	TxnStateInvalid
	// CoordinatorFenced means a transaction marker from a coordinator
	// epoch older than the last recorded for the producer: append nothing
	// and answer TRANSACTION_COORDINATOR_FENCED.
	CoordinatorFenced
)

// String returns the verdict's name.
func (v Verdict) String() string {
	switch v {
	case Append:
		return "Append"
	case Duplicate:
		return "Duplicate"
	case Fenced:
		return "Fenced"
	case OutOfOrder:
		return "OutOfOrder"
	case TableFull:
		return "TableFull"
	case TxnStateInvalid:
		return "TxnStateInvalid"
	case CoordinatorFenced:
		return "CoordinatorFenced"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Result is a Verdict with the facts the caller needs to answer.
type Result struct {
	Verdict Verdict
	// Original is the retained batch that a Duplicate repeats; its
	// BaseOffset is the offset to answer with.
	Original Batch
	// Expected is, for OutOfOrder, the first sequence that would have been
	// accepted (for the error text).
	Expected int32
	// Epoch is, for Fenced, the epoch recorded for the producer, or -1 if
	// the producer is unknown (for the error text).
	Epoch int16
	// CoordinatorEpoch is, for CoordinatorFenced, the coordinator epoch
	// recorded for the producer (for the error text).
	CoordinatorEpoch int32
}
