package e2e

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// TxnKind is a kind of problem CheckTxn reports.
type TxnKind uint8

// The kinds of exactly-once problem, each with the sentinel error
// TxnCheckError wraps.
const (
	// TxnLost: an input record has no output.
	TxnLost TxnKind = iota
	// TxnDuplicated: an input record has more than one output.
	TxnDuplicated
	// TxnAbortedSeen: an output record of an aborted transaction is
	// visible.
	TxnAbortedSeen
	// TxnOutOfOrder: an output partition holds the outputs of its input
	// partition out of input offset order, or the output of another
	// input partition.
	TxnOutOfOrder
	// TxnCommittedLost: a transaction's commit was acknowledged, but an
	// output it wrote is not visible (even if another transaction's copy
	// of the same input is).
	TxnCommittedLost
	// TxnPhantom: an output record that is no transform of an input
	// record (unknown input, different value, transaction never begun,
	// unparsable value).
	TxnPhantom
	numTxnKinds
)

// Errors that a TxnCheckError wraps, one per TxnKind.
var (
	ErrTxnLost          = errors.New("e2e: input record without output")
	ErrTxnDuplicated    = errors.New("e2e: input record output more than once")
	ErrTxnAbortedSeen   = errors.New("e2e: record of an aborted transaction visible")
	ErrTxnOutOfOrder    = errors.New("e2e: outputs out of input order")
	ErrTxnCommittedLost = errors.New("e2e: record of a committed transaction not visible")
	ErrTxnPhantom       = errors.New("e2e: output that no input explains")
)

var txnKindErrs = [numTxnKinds]error{ErrTxnLost, ErrTxnDuplicated, ErrTxnAbortedSeen, ErrTxnOutOfOrder, ErrTxnCommittedLost, ErrTxnPhantom}
var txnKindNames = [numTxnKinds]string{"lost", "duplicated", "aborted-seen", "out-of-order", "committed-lost", "phantom"}

func (k TxnKind) String() string {
	if k < numTxnKinds {
		return txnKindNames[k]
	}
	return fmt.Sprintf("txnkind(%d)", uint8(k))
}

// Err is the sentinel error of k.
func (k TxnKind) Err() error {
	if k < numTxnKinds {
		return txnKindErrs[k]
	}
	return nil
}

// TxnProblem is one finding of CheckTxn.
type TxnProblem struct {
	Kind      TxnKind
	Partition int32    // the output partition (-1 for TxnLost and TxnCommittedLost)
	Offset    int64    // the output offset (-1 for TxnLost and TxnCommittedLost)
	Input     InputRef // the input record concerned
	Label     string   // the transaction that wrote the output, if known
	Detail    string
}

func (p TxnProblem) String() string {
	return fmt.Sprintf("%s out[%d]@%d %v %s: %s", p.Kind, p.Partition, p.Offset, p.Input, p.Label, p.Detail)
}

// TxnReport is CheckTxn's verdict.
type TxnReport struct {
	Problems []TxnProblem // by kind, output partition and offset, input

	Inputs     int // input records
	Outputs    int // output records read (end markers excluded)
	Committed  int // transactions acknowledged committed
	Aborted    int // transactions acknowledged aborted (Deliberate of them on purpose)
	Deliberate int
	Unknown    int // transactions of unknown outcome (or pending)
	// AbortedRecords is the records written in aborted transactions: the
	// ones a read_committed reader must not see.
	AbortedRecords int
}

// Count returns the number of problems of kind k.
func (r *TxnReport) Count(k TxnKind) int {
	n := 0
	for _, p := range r.Problems {
		if p.Kind == k {
			n++
		}
	}
	return n
}

// Err returns nil if the report found no problem, else a *TxnCheckError.
func (r *TxnReport) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return &TxnCheckError{Report: r}
}

// String is the report's one-line summary.
func (r *TxnReport) String() string {
	return fmt.Sprintf("inputs %d, outputs read %d; transactions committed %d, aborted %d (%d on purpose, %d records), unknown %d; lost %d, duplicated %d, aborted seen %d, out of order %d, committed lost %d, phantom %d",
		r.Inputs, r.Outputs, r.Committed, r.Aborted, r.Deliberate, r.AbortedRecords, r.Unknown,
		r.Count(TxnLost), r.Count(TxnDuplicated), r.Count(TxnAbortedSeen), r.Count(TxnOutOfOrder),
		r.Count(TxnCommittedLost), r.Count(TxnPhantom))
}

// TxnCheckError is a failed exactly-once check. errors.Is matches the
// sentinel of every kind of problem it holds.
type TxnCheckError struct {
	Report *TxnReport
}

func (e *TxnCheckError) Error() string {
	return reportText("e2e: exactly-once check failed:", numTxnKinds, e.Report.Count, e.Report.Problems)
}

// Unwrap gives the sentinel of each kind present.
func (e *TxnCheckError) Unwrap() []error { return reportErrs(numTxnKinds, e.Report.Count) }

// outputAt is where an output record was read, and who wrote it.
type outputAt struct {
	partition int32
	offset    int64
	label     string
}

// CheckTxn proves, from the input topic's records, the output topic's
// records as a reader read them, and the pipelines' transactions, that:
// every input record has exactly one output; no output of a transaction
// acknowledged aborted is visible; each output partition holds the outputs
// of the same input partition in input offset order; every output of a
// transaction acknowledged committed is visible; and every output is the
// transform of an input record by a transaction that was begun. Records
// starting with the end marker prefix are skipped. CheckTxn is pure.
func CheckTxn(in, out []PartitionLog, txns []Txn) *TxnReport {
	r := &TxnReport{}
	add := func(p TxnProblem) { r.Problems = append(r.Problems, p) }
	inputs := map[InputRef][]byte{}
	for _, pl := range in {
		for _, s := range pl.Records {
			inputs[InputRef{pl.Partition, s.Offset}] = s.Value
		}
	}
	r.Inputs = len(inputs)
	byLabel := countTxns(r, txns)
	found := scanOutputs(r, out, inputs, byLabel, add)
	for _, ref := range slices.SortedFunc(maps.Keys(inputs), compareRefs) {
		switch locs := found[ref]; {
		case len(locs) == 0:
			add(TxnProblem{Kind: TxnLost, Partition: -1, Offset: -1, Input: ref, Detail: "no output"})
		case len(locs) > 1:
			add(TxnProblem{Kind: TxnDuplicated, Partition: locs[1].partition, Offset: locs[1].offset, Input: ref,
				Label: locs[1].label, Detail: fmt.Sprintf("%d outputs: %s", len(locs), describeOutputs(locs))})
		}
	}
	for _, t := range txns {
		if t.Outcome != TxnCommitted {
			continue
		}
		for _, ref := range t.Inputs {
			if !slices.ContainsFunc(found[ref], func(o outputAt) bool { return o.label == t.Label }) {
				add(TxnProblem{Kind: TxnCommittedLost, Partition: -1, Offset: -1, Input: ref, Label: t.Label,
					Detail: fmt.Sprintf("committed; visible outputs: %s", describeOutputs(found[ref]))})
			}
		}
	}
	slices.SortStableFunc(r.Problems, func(a, b TxnProblem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset),
			compareRefs(a.Input, b.Input), cmp.Compare(a.Label, b.Label))
	})
	return r
}

// countTxns counts the transactions by outcome and indexes them by label.
func countTxns(r *TxnReport, txns []Txn) map[string]*Txn {
	byLabel := make(map[string]*Txn, len(txns))
	for i := range txns {
		t := &txns[i]
		byLabel[t.Label] = t
		switch t.Outcome {
		case TxnCommitted:
			r.Committed++
		case TxnAborted:
			r.Aborted++
			r.AbortedRecords += len(t.Inputs)
			if t.Deliberate {
				r.Deliberate++
			}
		default:
			r.Unknown++
		}
	}
	return byLabel
}

// scanOutputs reads the output partitions in offset order: it reports
// phantoms, outputs of aborted transactions and order violations, and
// returns where each input's outputs are.
func scanOutputs(r *TxnReport, out []PartitionLog, inputs map[InputRef][]byte, byLabel map[string]*Txn, add func(TxnProblem)) map[InputRef][]outputAt {
	found := map[InputRef][]outputAt{}
	for _, pl := range out {
		last := int64(-1)
		for _, s := range pl.Records {
			if bytes.HasPrefix(s.Value, []byte(endMarkerPrefix)) {
				continue
			}
			r.Outputs++
			label, ref, value, ok := ParseTransform(s.Value)
			at := TxnProblem{Partition: pl.Partition, Offset: s.Offset, Input: ref, Label: label}
			want, known := inputs[ref]
			t := byLabel[label]
			switch {
			case !ok:
				at.Kind, at.Detail = TxnPhantom, fmt.Sprintf("not a transform: %.40q", s.Value)
			case !known:
				at.Kind, at.Detail = TxnPhantom, "no such input record"
			case !bytes.Equal(value, want):
				at.Kind, at.Detail = TxnPhantom, fmt.Sprintf("value %.40q, input's %.40q", value, want)
			case t == nil:
				at.Kind, at.Detail = TxnPhantom, "no such transaction"
			}
			if at.Detail != "" {
				add(at)
				continue
			}
			found[ref] = append(found[ref], outputAt{pl.Partition, s.Offset, label})
			if t.Outcome == TxnAborted {
				at.Kind, at.Detail = TxnAbortedSeen, fmt.Sprintf("transaction aborted (on purpose: %v)", t.Deliberate)
				add(at)
			}
			switch {
			case ref.Partition != pl.Partition:
				at.Kind, at.Detail = TxnOutOfOrder, "output of another input partition"
				add(at)
			case ref.Offset < last:
				at.Kind, at.Detail = TxnOutOfOrder, fmt.Sprintf("after the output of input offset %d", last)
				add(at)
			default:
				last = ref.Offset
			}
		}
	}
	return found
}

func compareRefs(a, b InputRef) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

func describeOutputs(locs []outputAt) string {
	if len(locs) == 0 {
		return "none"
	}
	var b bytes.Buffer
	for i, o := range locs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "out[%d]@%d by %s", o.partition, o.offset, o.label)
	}
	return b.String()
}
