package history

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// simulate runs a correct Kafka in memory: processes send, run
// transactions over several partitions (some aborted) and poll with assign
// from their own positions, read_committed or not, in a seeded random
// order. Its history has no anomaly by construction.
func simulate(seed uint64, steps int) []Op {
	rng := rand.New(rand.NewPCG(seed, 1))
	type rec struct {
		value   int64
		aborted bool
	}
	logs := map[string][]rec{}
	parts := []string{"p-0", "p-1", "p-2"}
	pos := map[string]int{} // "proc/partition" → next offset to read
	var ops []Op
	var next int64
	for t := range int64(steps) {
		proc := rng.IntN(4)
		switch rng.IntN(3) {
		case 0: // a send
			p := parts[rng.IntN(len(parts))]
			next++
			ops = append(ops, Op{Process: proc, Kind: Send, Outcome: OK, Invoke: 2 * t, Complete: 2*t + 1,
				Writes: []Write{{p, next, int64(len(logs[p]))}}})
			logs[p] = append(logs[p], rec{value: next})
		case 1: // a transaction over two partitions, one in four aborted
			op := Op{Process: proc, Kind: Txn, Outcome: OK, Invoke: 2 * t, Complete: 2*t + 1}
			abort := rng.IntN(4) == 0
			for _, p := range []string{parts[rng.IntN(2)], "p-2"} {
				next++
				w := Write{p, next, int64(len(logs[p]))}
				logs[p] = append(logs[p], rec{value: next, aborted: abort})
				if abort {
					w.Offset = -1
				}
				op.Writes = append(op.Writes, w)
			}
			if abort {
				op.Outcome = Fail
			}
			ops = append(ops, op)
		default: // an assign poll of one partition
			p := parts[rng.IntN(len(parts))]
			committed := proc%2 == 0 // a process keeps its isolation level
			op := Op{Process: proc, Kind: Poll, Outcome: OK, Invoke: 2 * t, Complete: 2*t + 1, Assign: true, ReadCommitted: committed}
			key := fmt.Sprint(proc, "/", p)
			for n := rng.IntN(4); n > 0 && pos[key] < len(logs[p]); n-- {
				off := pos[key]
				pos[key]++
				if r := logs[p][off]; !(committed && r.aborted) {
					op.Reads = append(op.Reads, Read{p, int64(off), r.value})
				}
			}
			ops = append(ops, op)
		}
	}
	return ops
}

// Histories of a correct Kafka are valid: no rule fires on what Kafka
// allows (aborted records seen at read_uncommitted, skipped at
// read_committed, unread tails, gaps of aborted offsets).
func TestCorrectHistoriesAreValid(t *testing.T) {
	for seed := range uint64(200) {
		ops := simulate(seed, 300)
		if r := Check(ops); !r.Valid() {
			t.Fatalf("seed %d: %s %v", seed, r.Summary(0), r.Examples)
		}
	}
}

// Breaking one read of a correct history is found: a poll that reports a
// value at the wrong offset, or misses one that a later read of its own
// shows was there.
func TestBrokenReadsAreFound(t *testing.T) {
	found := 0
	for seed := range uint64(200) {
		ops := simulate(seed, 300)
		for i := range ops {
			if len(ops[i].Reads) < 2 {
				continue
			}
			rd := ops[i].Reads
			rd[0].Offset, rd[1].Offset = rd[1].Offset, rd[0].Offset // two values swap places
			if r := Check(ops); r.Valid() {
				t.Fatalf("seed %d: op %d's reads swapped (%v) and nothing found", seed, i, rd[:2])
			}
			found++
			break
		}
	}
	if found < 100 {
		t.Fatalf("only %d of 200 histories had a poll of two records to break", found)
	}
}
