package history

import "testing"

// op is an operation of proc at time t that wrote ws (value@offset on a
// partition) and read rs.
func op(proc int, t int64, kind Kind, ws []Write, rs []Read) Op {
	return Op{Process: proc, Kind: kind, Outcome: OK, Invoke: t, Complete: t + 1, Writes: ws, Reads: rs}
}

// Circular information flow is an anomaly: each of two read_committed
// transactions read what the other wrote.
func TestG1cIsAnAnomaly(t *testing.T) {
	bad := []Op{
		readCommitted(op(1, 0, Txn, []Write{{"a", 1, 0}}, []Read{{"b", 0, 2}})),
		readCommitted(op(2, 0, Txn, []Write{{"b", 2, 0}}, []Read{{"a", 0, 1}})),
	}
	if r := Check(bad); r.Counts[G1c] != 1 {
		t.Fatalf("G1c not found: %s %v", r.Summary(0), r.Examples)
	}
	clean := []Op{
		op(1, 0, Txn, []Write{{"a", 1, 0}}, nil),
		readCommitted(op(2, 2, Txn, []Write{{"b", 2, 0}}, []Read{{"a", 0, 1}})),
		op(3, 4, Poll, nil, []Read{{"b", 0, 2}}),
	}
	if r := Check(clean); !r.Valid() || len(r.Permitted) != 0 {
		t.Fatalf("a chain of reads reported: %s %v, permitted %v", r.Summary(0), r.Examples, r.Permitted)
	}
}

// A cycle of reads and a transaction's write order is permitted: T1's
// send to a was appended before T2's, but T1 need not have committed
// first, so T1 may have read T2's b.
func TestG1cThroughTxnWriteOrderIsPermitted(t *testing.T) {
	ops := []Op{
		readCommitted(op(1, 0, Txn, []Write{{"a", 1, 0}}, []Read{{"b", 0, 2}})),
		op(2, 0, Txn, []Write{{"a", 3, 1}, {"b", 2, 0}}, nil),
	}
	if r := Check(ops); !r.Valid() || r.Permitted[G1cTxnSend] != 1 {
		t.Fatalf("%s %v, permitted %v; want no anomaly and %s 1", r.Summary(0), r.Examples, r.Permitted, G1cTxnSend)
	}
}

// Write cycles across partitions are what Kafka's transactions permit:
// counted, not anomalies.
func TestG0IsPermitted(t *testing.T) {
	ops := []Op{
		op(1, 0, Txn, []Write{{"x", 1, 0}, {"y", 2, 1}}, nil),
		op(2, 0, Txn, []Write{{"x", 3, 1}, {"y", 4, 0}}, nil),
	}
	r := Check(ops)
	if !r.Valid() || r.Permitted[G0] != 1 {
		t.Fatalf("a write cycle: %s, permitted %v; want no anomaly and G0 1", r.Summary(0), r.Permitted)
	}
	ops[1].Writes[1].Offset = 2 // y: 2 then 4, as x: 1 then 3
	if r := Check(ops); r.Permitted[G0] != 0 {
		t.Fatalf("writes in one order on both partitions counted as G0: %v", r.Permitted)
	}
}

// A read that saw one partition before a transaction and another after it
// (read skew) is G-single, which Kafka permits.
func TestGSingleIsPermitted(t *testing.T) {
	ops := []Op{
		op(1, 0, Send, []Write{{"x", 1, 0}}, nil),
		op(2, 2, Txn, []Write{{"x", 2, 1}, {"y", 3, 0}}, nil),
		op(3, 4, Poll, nil, []Read{{"x", 0, 1}, {"y", 0, 3}}),
		op(4, 6, Poll, nil, []Read{{"x", 0, 1}, {"x", 1, 2}}),
	}
	r := Check(ops)
	if !r.Valid() || r.Permitted[GSingle] != 1 {
		t.Fatalf("read skew: %s, permitted %v; want no anomaly and G-single 1", r.Summary(0), r.Permitted)
	}
	ops[2].Reads = []Read{{"x", 0, 1}, {"x", 1, 2}, {"y", 0, 3}}
	if r := Check(ops); len(r.Permitted) != 0 {
		t.Fatalf("a read that saw the whole transaction counted: %v", r.Permitted)
	}
}

// Write skew (each of two transactions read what the other was about to
// overwrite) is G2, which Kafka permits.
func TestG2IsPermitted(t *testing.T) {
	ops := []Op{
		op(1, 0, Send, []Write{{"x", 1, 0}}, nil),
		op(1, 2, Send, []Write{{"y", 2, 0}}, nil),
		op(2, 4, Txn, []Write{{"y", 3, 1}}, []Read{{"x", 0, 1}}),
		op(3, 4, Txn, []Write{{"x", 4, 1}}, []Read{{"y", 0, 2}}),
	}
	r := Check(ops)
	if !r.Valid() || r.Permitted[G2] != 1 || r.Permitted[GSingle] != 0 {
		t.Fatalf("write skew: %s, permitted %v; want no anomaly and G2 1", r.Summary(0), r.Permitted)
	}
}

// A cycle through realtime order that a long transaction closes is what
// Kafka permits (a transaction's sends are not one instant): counted, not
// an anomaly. A sends y; after it, B sends x; C, spanning both, wrote y
// before A and x after B.
func TestRealtimeCycleAcrossPartitionsIsPermitted(t *testing.T) {
	ops := []Op{
		op(1, 0, Send, []Write{{"y", 1, 1}}, nil),
		op(2, 2, Send, []Write{{"x", 2, 0}}, nil),
		op(3, 0, Txn, []Write{{"x", 3, 1}, {"y", 4, 0}}, nil),
	}
	ops[2].Complete = 10
	r := Check(ops)
	if !r.Valid() || r.Permitted[G0Realtime] != 1 || r.Permitted[G0] != 0 {
		t.Fatalf("%s, permitted %v; want no anomaly and G0-realtime 1", r.Summary(0), r.Permitted)
	}
	ops[1].Invoke = 0 // B concurrent with A: no realtime order, no cycle
	if r := Check(ops); len(r.Permitted) != 0 {
		t.Fatalf("a cycle without realtime order counted: %v", r.Permitted)
	}
}
