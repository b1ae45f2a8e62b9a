// Package history checks a recorded history of Kafka client operations for
// the anomalies Jepsen's Kafka workload looks for (issue 29).
//
// The caller records every operation a client process invoked: its kind
// (Send, Txn, Poll), its outcome (OK, Fail, or Info when unknown), the
// values it wrote with the offsets acknowledged for them, and for polls
// every (partition, offset, value) it saw, in the order seen. Check then
// derives each partition's version order (its values by offset, from the
// acknowledgements and every read) and reports each anomaly with
// examples. Values must be unique across the history: they identify writes.
//
// It checks what each partition's order determines (lost writes,
// duplicates, inconsistent offsets, aborted reads, polls that skip or go
// back for assign consumers, a producer's sends out of order, unseen
// writes), the dependency cycles between operations (cycles.go) and
// realtime order (realtime.go).
package history

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is what an operation did.
type Kind uint8

const (
	Send Kind = iota + 1 // one idempotent produce
	Txn                  // a transaction: sends, and in consume-transform-produce mode a poll
	Poll                 // a consumer's poll
)

// Outcome is what the client learnt of an operation.
type Outcome uint8

const (
	OK   Outcome = iota + 1 // it took effect
	Fail                    // it certainly did not (an aborted transaction, a refused send)
	Info                    // unknown: a timeout, a lost connection
)

// Write is one value an operation sent to a partition; Offset is the
// acknowledged offset, -1 when none was (Fail, Info).
type Write struct {
	Partition string
	Value     int64
	Offset    int64
}

// Read is one record a poll saw.
type Read struct {
	Partition string
	Offset    int64
	Value     int64
}

// Op is one recorded client operation. Invoke and Complete are times from
// one clock (nanoseconds, or any increasing count).
type Op struct {
	Process          int
	Kind             Kind
	Outcome          Outcome
	Invoke, Complete int64
	Writes           []Write
	Reads            []Read
	// Assign is true for a poll by a consumer that assigned its partitions
	// itself (false: subscribed through a group, which may rewind).
	Assign bool
	// ReadCommitted is true for a poll at isolation level read_committed.
	ReadCommitted bool
	// Final is true for the reads after the run, which read every
	// partition to its end (see Unseen).
	Final bool
	// Commit is, for a transaction, when its commit was asked for (the
	// clock of Invoke); 0 when not recorded. No read_committed poll that
	// completed before it may have seen its writes.
	Commit int64
}

// Names of the anomalies, as Jepsen spells them.
const (
	LostWrite          = "lost-write"
	Duplicate          = "duplicate"
	InconsistentOffset = "inconsistent-offsets"
	AbortedRead        = "aborted-read"
	PollSkip           = "poll-skip"
	NonMonotonicPoll   = "nonmonotonic-poll"
	NonMonotonicSend   = "nonmonotonic-send"
	Unseen             = "unseen"
	PrecommittedRead   = "precommitted-read"
)

// maxExamples bounds the examples kept per anomaly.
const maxExamples = 8

// Result is what Check found.
type Result struct {
	Ops, Sends, Polls, Txns int
	// Counts is each anomaly's count; Examples up to maxExamples of each.
	Counts   map[string]int
	Examples map[string][]string
	// Permitted counts the cycles Kafka's transactions allow (G0,
	// G-single, G2): reported, not anomalies.
	Permitted map[string]int
}

func (r *Result) add(name, format string, args ...any) {
	r.Counts[name]++
	if len(r.Examples[name]) < maxExamples {
		r.Examples[name] = append(r.Examples[name], fmt.Sprintf(format, args...))
	}
}

// Valid reports whether no anomaly was found.
func (r *Result) Valid() bool { return len(r.Counts) == 0 }

// Summary is the one-line summary tools read, faults being the faults the
// nemesis injected: "history: N ops (S sends, P polls, T txns), F faults;
// anomalies: none" or the counts by name.
func (r *Result) Summary(faults int) string {
	found := "none"
	if !r.Valid() {
		names := make([]string, 0, len(r.Counts))
		for n := range r.Counts {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			names[i] = fmt.Sprintf("%s %d", n, r.Counts[n])
		}
		found = strings.Join(names, ", ")
	}
	return fmt.Sprintf("history: %d ops (%d sends, %d polls, %d txns), %d faults; anomalies: %s",
		r.Ops, r.Sends, r.Polls, r.Txns, faults, found)
}

// Check checks ops, in any order.
func Check(ops []Op) *Result {
	r := &Result{Ops: len(ops), Counts: map[string]int{}, Examples: map[string][]string{}, Permitted: map[string]int{}}
	for _, op := range ops {
		switch op.Kind {
		case Send:
			r.Sends++
		case Poll:
			r.Polls++
		case Txn:
			r.Txns++
		}
	}
	parts := order(ops, r)
	failed := failedValues(ops)
	checkWrites(ops, parts, failed, r)
	checkPolls(ops, parts, failed, r)
	checkSendOrder(ops, r)
	checkCycles(ops, parts, r)
	checkRealtime(ops, parts, r)
	return r
}
