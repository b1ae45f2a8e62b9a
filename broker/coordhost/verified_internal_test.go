package coordhost

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A verification is remembered per producer until its marker or a new
// leader epoch, and a batch verified under a guard from before either is
// not proposed.
func TestTxnVerifiedRemembersUntilMarker(t *testing.T) {
	var v Verified
	proposed := 0
	propose := func() { proposed++ }

	ok, g := v.Check(5, 7, 0)
	if ok {
		t.Fatal("a new producer is verified")
	}
	if again, g2 := v.Check(5, 7, 0); again || g2 != g {
		t.Fatalf("a second batch before the answer: %v, guard %d vs %d", again, g2, g)
	}
	if v.Produce(5, 7, 0, g, propose) != nil || proposed != 1 {
		t.Fatal("the verified batch was not proposed")
	}
	if ok, g2 := v.Check(5, 7, 0); !ok || g2 != g {
		t.Fatalf("after a verified batch: %v", ok)
	}
	if ok, _ := v.Check(5, 8, 0); ok {
		t.Fatal("another producer is verified")
	}

	// A marker for producer 7 arrives while a batch is being verified:
	// that batch is refused, and the next transaction is verified anew.
	v.Marker(7, 0, false, propose)
	if err := v.Produce(5, 7, 0, g, propose); !errors.Is(err, kerr.InvalidTxnState) || proposed != 2 {
		t.Fatalf("a batch verified before the marker: %v, want INVALID_TXN_STATE and nothing proposed", err)
	}
	ok, g3 := v.Check(5, 7, 0)
	if ok || g3 == g {
		t.Fatalf("after the marker: verified %v, guard %d (old %d)", ok, g3, g)
	}

	// A new leader epoch forgets everything.
	if v.Produce(5, 7, 0, g3, propose) != nil {
		t.Fatal("verified batch refused")
	}
	if ok, _ := v.Check(6, 7, 0); ok {
		t.Fatal("verified across leader epochs")
	}
	// A batch verified under the previous leadership is retried by the
	// client (with the new leader), not failed: a franz-go transaction
	// committed without such a record (make e2e, output-leader-pause).
	if err := v.Produce(6, 7, 0, g3, propose); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("a guard from the previous leader epoch: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	// A new producer epoch is a new verification.
	if ok, g4 := v.Check(6, 7, 1); ok || g4 == g3 {
		t.Fatal("a new producer epoch counts as verified")
	}
}

// Entries never verified are dropped once old and many.
func TestTxnVerifiedPrunesAbandoned(t *testing.T) {
	var v Verified
	for pid := range int64(verifyPruneAt) {
		v.Check(1, pid, 0)
	}
	for _, e := range v.producers {
		e.made = e.made.Add(-verifyAbandoned - time.Second)
	}
	_, g := v.Check(1, 1, 0) // still there: no new entry, no pruning
	if v.Produce(1, 1, 0, g, func() {}) != nil {
		t.Fatal("producer 1 refused")
	}
	v.Check(1, -5, 0) // a new entry prunes the abandoned ones
	if n := len(v.producers); n != 2 {
		t.Fatalf("%d entries after pruning, want 2 (the verified one and the new one)", n)
	}
}

// A flood of made-up producer ids, none ever verified, keeps the map
// bounded however fast it comes.
func TestTxnVerifiedBoundsAFlood(t *testing.T) {
	var v Verified
	_, g := v.Check(1, -1, 0)
	if v.Produce(1, -1, 0, g, func() {}) != nil {
		t.Fatal("producer -1 refused")
	}
	for pid := range int64(10 * verifyMaxEntries) {
		v.Check(1, pid, 0)
		if n := len(v.producers); n > verifyMaxEntries+1 {
			t.Fatalf("%d entries after %d made-up producers; want at most %d", n, pid+1, verifyMaxEntries+1)
		}
	}
	if e := v.producers[-1]; e == nil || !e.verified {
		t.Fatal("the flood dropped a verified producer's entry")
	}
}

// An abort of a producer's pending commits is proposed only if nothing of
// the producer was verified, written or ended on the partition since the
// stamp it was decided on, in the same leader epoch; it forgets the
// producer's verification, so its next batch is verified anew.
func TestTxnVerifiedAbortOnlyUnchanged(t *testing.T) {
	var v Verified
	proposed := 0
	propose := func() { proposed++ }

	st := v.stamp(5, 7)
	if !v.abortUnchanged(5, 7, st, propose) || proposed != 1 {
		t.Fatal("the abort of an idle producer was not proposed")
	}

	st = v.stamp(5, 7)
	_, g := v.Check(5, 7, 0) // a verification begins
	if v.abortUnchanged(5, 7, st, propose) || proposed != 1 {
		t.Fatal("aborted while the producer's next transaction was being verified")
	}
	st = v.stamp(5, 7)
	v.Produce(5, 7, 0, g, propose) // a batch is written
	if v.abortUnchanged(5, 7, st, propose) || proposed != 2 {
		t.Fatal("aborted over a batch written since the stamp")
	}
	st = v.stamp(5, 7)
	v.Produce(5, 7, 0, g, propose) // a second batch of the verified transaction
	if v.abortUnchanged(5, 7, st, propose) || proposed != 3 {
		t.Fatal("aborted over a second batch written since the stamp")
	}
	st = v.stamp(5, 7)
	v.Marker(7, 0, false, propose)
	if v.abortUnchanged(5, 7, st, propose) || proposed != 4 {
		t.Fatal("aborted after a marker since the stamp")
	}
	st = v.stamp(5, 7)
	if v.abortUnchanged(6, 7, st, propose) || proposed != 4 {
		t.Fatal("aborted in another leader epoch than the stamp's")
	}

	_, g = v.Check(6, 7, 0)
	v.Produce(6, 7, 0, g, propose)
	st = v.stamp(6, 7)
	if !v.abortUnchanged(6, 7, st, propose) || proposed != 6 {
		t.Fatal("the abort of a verified producer idle since the stamp was not proposed")
	}
	if ok, g2 := v.Check(6, 7, 0); ok || g2 == g {
		t.Fatal("the producer stays verified after the abort")
	}
	if v.Produce(6, 7, 0, g, propose) == nil {
		t.Fatal("a batch verified before the abort was proposed after it")
	}
}
