package history

import (
	"strings"
	"testing"
)

// send is an acknowledged (or failed, or unknown) send of value to p-0.
func send(proc int, t int64, out Outcome, value, offset int64) Op {
	return Op{Process: proc, Kind: Send, Outcome: out, Invoke: t, Complete: t + 1,
		Writes: []Write{{Partition: "p-0", Value: value, Offset: offset}}}
}

// txn is a transaction that sent value to p-0.
func txn(proc int, t int64, out Outcome, value, offset int64) Op {
	op := send(proc, t, out, value, offset)
	op.Kind = Txn
	return op
}

// poll is an assign consumer's poll of p-0 that saw values at offsets from
// first on, in order.
func poll(proc int, t int64, first int64, values ...int64) Op {
	op := Op{Process: proc, Kind: Poll, Outcome: OK, Invoke: t, Complete: t + 1, Assign: true}
	for i, v := range values {
		op.Reads = append(op.Reads, Read{Partition: "p-0", Offset: first + int64(i), Value: v})
	}
	return op
}

func readCommitted(op Op) Op { op.ReadCommitted = true; return op }

func final(op Op) Op { op.Final = true; return op }

// committing is a transaction that asked to commit at commit and
// completed at done.
func committing(op Op, commit, done int64) Op { op.Commit, op.Complete = commit, done; return op }

// at returns op with its reads at the given offsets instead.
func at(op Op, offsets ...int64) Op {
	for i := range op.Reads {
		op.Reads[i].Offset = offsets[i]
	}
	return op
}

// Every rule fires on a history built to contain its anomaly, and stays
// quiet on the clean twin that differs from it in one point.
func TestEachAnomalyAndItsCleanTwin(t *testing.T) {
	for _, c := range []struct {
		name       string
		bad, clean []Op
	}{{
		name:  LostWrite,
		bad:   []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), send(1, 4, OK, 12, 2), poll(2, 6, 0, 10), at(poll(2, 8, 2, 12), 2)},
		clean: []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), send(1, 4, OK, 12, 2), poll(2, 6, 0, 10, 11, 12)},
	}, {
		name:  Duplicate,
		bad:   []Op{send(1, 0, OK, 10, 0), poll(2, 2, 0, 10, 10)},
		clean: []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), poll(2, 4, 0, 10, 11)},
	}, {
		name:  InconsistentOffset,
		bad:   []Op{send(1, 0, OK, 10, 0), poll(2, 2, 0, 11)},
		clean: []Op{send(1, 0, OK, 10, 0), poll(2, 2, 0, 10)},
	}, {
		name:  AbortedRead,
		bad:   []Op{send(1, 0, Fail, 10, -1), poll(2, 2, 0, 10)},
		clean: []Op{send(1, 0, Info, 10, -1), poll(2, 2, 0, 10)}, // an unknown outcome may have taken effect
	}, {
		name:  AbortedRead + " (read_committed)",
		bad:   []Op{txn(1, 0, Fail, 10, -1), readCommitted(poll(2, 2, 0, 10))},
		clean: []Op{txn(1, 0, Fail, 10, -1), poll(2, 2, 0, 10)}, // read_uncommitted sees aborted records
	}, {
		name: PollSkip,
		bad: []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), send(1, 4, OK, 12, 2),
			poll(2, 6, 0, 10), at(poll(2, 8, 0, 12), 2), poll(3, 10, 0, 10, 11, 12)},
		clean: []Op{send(1, 0, OK, 10, 0), txn(1, 2, Fail, 11, -1), send(1, 4, OK, 12, 2),
			poll(2, 6, 0, 10), at(poll(2, 8, 0, 12), 2), poll(3, 10, 0, 10, 11, 12)}, // skipping an aborted value
	}, {
		name:  NonMonotonicPoll,
		bad:   []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), poll(2, 4, 0, 10, 11), poll(2, 6, 0, 10)},
		clean: []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), poll(2, 4, 0, 10, 11), poll(3, 6, 0, 10)},
	}, {
		name:  NonMonotonicSend,
		bad:   []Op{send(1, 0, OK, 10, 1), send(1, 2, OK, 11, 0), poll(2, 4, 0, 11, 10)},
		clean: []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), poll(2, 4, 0, 10, 11)},
	}, {
		name: PollSkip + " (read_committed)",
		bad: []Op{send(1, 0, OK, 10, 0), txn(1, 2, Info, 11, -1), send(1, 4, OK, 12, 2),
			readCommitted(poll(2, 6, 0, 10)), readCommitted(at(poll(2, 8, 0, 12), 2)), readCommitted(poll(3, 10, 0, 10, 11, 12))},
		clean: []Op{send(1, 0, OK, 10, 0), txn(1, 2, Info, 11, -1), send(1, 4, OK, 12, 2), // 11 may have been aborted
			readCommitted(poll(2, 6, 0, 10)), readCommitted(at(poll(2, 8, 0, 12), 2)), poll(3, 10, 0, 10, 11, 12)},
	}, {
		name:  Unseen,
		bad:   []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), final(poll(2, 4, 0, 10))},
		clean: []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), final(poll(2, 4, 0, 10, 11))},
	}, {
		name:  PrecommittedRead,
		bad:   []Op{committing(txn(1, 0, OK, 10, 0), 5, 6), readCommitted(poll(2, 1, 0, 10))},
		clean: []Op{committing(txn(1, 0, OK, 10, 0), 5, 6), readCommitted(poll(2, 6, 0, 10))},
	}, {
		name:  G1cRealtime,
		bad:   []Op{poll(2, 0, 0, 10), send(1, 2, OK, 10, 0)},
		clean: []Op{send(1, 0, OK, 10, 0), poll(2, 2, 0, 10)},
	}, {
		name:  G0Realtime,
		bad:   []Op{send(1, 0, OK, 10, 1), send(2, 2, OK, 11, 0), poll(3, 4, 0, 11, 10)},
		clean: []Op{send(1, 0, OK, 10, 1), send(2, 0, OK, 11, 0), poll(3, 4, 0, 11, 10)}, // concurrent: either order
	}} {
		t.Run(c.name, func(t *testing.T) {
			name, _, _ := strings.Cut(c.name, " ")
			bad := Check(c.bad)
			if bad.Counts[name] == 0 {
				t.Fatalf("%s not found in a history that has it: %s %v", name, bad.Summary(0), bad.Examples)
			}
			if clean := Check(c.clean); !clean.Valid() {
				t.Fatalf("the clean twin reports %s %v", clean.Summary(0), clean.Examples)
			}
		})
	}
}

// A subscribe consumer may go back (a rebalance rewinds it to the committed
// offset); an assign consumer may not.
func TestSubscribeMayRewind(t *testing.T) {
	ops := []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), poll(2, 4, 0, 10, 11), poll(2, 6, 0, 10)}
	ops[2].Assign, ops[3].Assign = false, false
	if r := Check(ops); !r.Valid() {
		t.Fatalf("a subscribe consumer's rewind reported: %s %v", r.Summary(0), r.Examples)
	}
}

// An acknowledged write past every read is not lost: nothing later was seen.
func TestUnreadTailIsNotLost(t *testing.T) {
	ops := []Op{send(1, 0, OK, 10, 0), send(1, 2, OK, 11, 1), poll(2, 4, 0, 10)}
	if r := Check(ops); !r.Valid() {
		t.Fatalf("the unread tail reported: %s %v", r.Summary(0), r.Examples)
	}
}

func TestSummary(t *testing.T) {
	ops := []Op{send(1, 0, OK, 10, 0), {Process: 3, Kind: Txn, Outcome: Fail, Writes: []Write{{"p-0", 20, -1}}},
		poll(2, 2, 0, 10)}
	if got, want := Check(ops).Summary(7), "history: 3 ops (1 sends, 1 polls, 1 txns), 7 faults; anomalies: none"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	ops = append(ops, readCommitted(poll(5, 4, 0, 20)), poll(4, 6, 0, 11))
	got := Check(ops).Summary(0)
	if !strings.HasSuffix(got, "anomalies: aborted-read 1, inconsistent-offsets 2") {
		t.Fatalf("summary %q, want the counts by name", got)
	}
}
