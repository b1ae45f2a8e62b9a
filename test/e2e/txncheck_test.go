package e2e

import (
	"errors"
	"fmt"
	"testing"
)

// eosInput is an input topic of two partitions, three records each.
func eosInput() []PartitionLog {
	var in []PartitionLog
	for p := range int32(2) {
		pl := PartitionLog{Topic: "in", Partition: p, End: 3}
		for o := range int64(3) {
			pl.Records = append(pl.Records, Stored{Offset: o, Value: fmt.Appendf(nil, "v%d-%d", p, o)})
		}
		in = append(in, pl)
	}
	return in
}

// outRec is the output of input p@o written by transaction label, at
// output offset at.
func outRec(at int64, label string, p int32, o int64) Stored {
	return Stored{Offset: at, Value: TransformValue(label, InputRef{p, o}, fmt.Appendf(nil, "v%d-%d", p, o))}
}

// eosCleanRun is a clean copy of eosInput: transaction a (committed)
// copies offsets 0-1 of both partitions, b (aborted on purpose, its
// records in the log but skipped by the reader) copies offset 2, and c
// (committed) copies offset 2 again; markers take offsets between.
func eosCleanRun() ([]PartitionLog, []Txn) {
	txns := []Txn{
		{Label: "a", Outcome: TxnCommitted, Inputs: []InputRef{{0, 0}, {0, 1}, {1, 0}, {1, 1}}},
		{Label: "b", Outcome: TxnAborted, Deliberate: true, Inputs: []InputRef{{0, 2}, {1, 2}}},
		{Label: "c", Outcome: TxnCommitted, Inputs: []InputRef{{0, 2}, {1, 2}}},
	}
	var out []PartitionLog
	for p := range int32(2) {
		out = append(out, PartitionLog{Topic: "out", Partition: p, Records: []Stored{
			outRec(0, "a", p, 0), outRec(1, "a", p, 1), outRec(5, "c", p, 2),
			{Offset: 7, Value: fmt.Appendf(nil, "%s%d", endMarkerPrefix, p)},
		}})
	}
	return out, txns
}

func TestCheckTxnCleanRun(t *testing.T) {
	out, txns := eosCleanRun()
	r := CheckTxn(eosInput(), out, txns)
	if err := r.Err(); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	if r.Inputs != 6 || r.Outputs != 6 || r.Committed != 2 || r.Aborted != 1 || r.Deliberate != 1 || r.AbortedRecords != 2 {
		t.Fatalf("counts %+v", r)
	}
}

// TestCheckTxnFindsEachProblem plants one fault in a clean run each and
// requires exactly that kind reported, count times, and its sentinel.
func TestCheckTxnFindsEachProblem(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(out []PartitionLog, txns []Txn) []Txn
		kind   TxnKind
		count  int
	}{
		{"lost", func(out []PartitionLog, txns []Txn) []Txn {
			// c never wrote in[1]@2, and nobody else did.
			out[1].Records = append(out[1].Records[:2], out[1].Records[3:]...)
			txns[2].Inputs = txns[2].Inputs[:1]
			return txns
		}, TxnLost, 1},
		{"duplicated", func(out []PartitionLog, txns []Txn) []Txn {
			// d, of unknown outcome, copied in[0]@1 again after c.
			txns = append(txns, Txn{Label: "d", Outcome: TxnUnknown, Inputs: []InputRef{{0, 1}}})
			out[0].Records = append(out[0].Records[:3:3], outRec(6, "d", 0, 1))
			return txns
		}, TxnDuplicated, 1},
		{"aborted seen", func(out []PartitionLog, txns []Txn) []Txn {
			// The reader did not skip b's record of in[1]@2 (so in[1]@2
			// is also output twice).
			out[1].Records = []Stored{outRec(0, "a", 1, 0), outRec(1, "a", 1, 1), outRec(2, "b", 1, 2), outRec(5, "c", 1, 2)}
			return txns
		}, TxnAbortedSeen, 1},
		{"out of order", func(out []PartitionLog, txns []Txn) []Txn {
			out[0].Records[0], out[0].Records[1] = outRec(0, "a", 0, 1), outRec(1, "a", 0, 0)
			return txns
		}, TxnOutOfOrder, 1},
		{"committed lost", func(out []PartitionLog, txns []Txn) []Txn {
			// c's copy of in[0]@2 is missing, but b's shows instead.
			out[0].Records[2] = outRec(5, "b", 0, 2)
			txns[1].Outcome = TxnUnknown
			return txns
		}, TxnCommittedLost, 1},
		{"phantom", func(out []PartitionLog, txns []Txn) []Txn {
			out[0].Records[0].Value = []byte("garbage")
			out[1].Records[0] = Stored{Offset: 0, Value: TransformValue("a", InputRef{1, 0}, []byte("other"))}
			return txns
		}, TxnPhantom, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, txns := eosCleanRun()
			txns = tc.mutate(out, txns)
			r := CheckTxn(eosInput(), out, txns)
			if got := r.Count(tc.kind); got != tc.count {
				t.Fatalf("%d %s, want %d: %v", got, tc.kind, tc.count, r.Err())
			}
			if !errors.Is(r.Err(), tc.kind.Err()) {
				t.Fatalf("error %v does not match %v", r.Err(), tc.kind.Err())
			}
		})
	}
}
