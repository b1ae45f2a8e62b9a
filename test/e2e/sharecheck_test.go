package e2e

import (
	"errors"
	"testing"
	"time"
)

// shareHist builds hand-made share histories.
type shareHist struct {
	events []ShareEvent
	t      time.Time
}

func (h *shareHist) next() time.Time {
	h.t = h.t.Add(time.Millisecond)
	return h.t
}

func (h *shareHist) del(m string, p int32, off int64, count int32) *shareHist {
	h.events = append(h.events, ShareEvent{Kind: ShareDelivered, Member: m, Partition: p, Offset: off,
		ID: ID{Key: "k", Seq: off, Producer: int(p)}, IDOK: true, Count: count, At: h.next()})
	return h
}

func (h *shareHist) ack(m string, p int32, off int64, count int32, a ShareAckType, o AckOutcome) *shareHist {
	h.events = append(h.events, ShareEvent{Kind: ShareAcked, Member: m, Partition: p, Offset: off,
		Count: count, Ack: a, Outcome: o, At: h.next()})
	return h
}

// shareProduced is a producer attempt acknowledged at p/off, with the ID shareHist
// gives the record there.
func shareProduced(p int32, off int64) Attempt {
	return Attempt{ID: ID{Key: "k", Seq: off, Producer: int(p)}, Topic: "t", Partition: p, Outcome: Acked, Offset: off}
}

func TestCheckShareClean(t *testing.T) {
	h := (&shareHist{}).
		del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckOK).
		del("a", 0, 1, 1).ack("a", 0, 1, 1, ShareRelease, AckOK).
		del("b", 0, 1, 2).ack("b", 0, 1, 2, ShareAccept, AckOK).
		// A failover: a's accept failed, b got it again and accepted it.
		del("a", 1, 0, 1).ack("a", 1, 0, 1, ShareAccept, AckFailed).
		del("b", 1, 0, 2).ack("b", 1, 0, 2, ShareAccept, AckOK).
		// A late delivery of a lower count after the accept: acquired before it.
		del("b", 1, 1, 2).ack("b", 1, 1, 2, ShareAccept, AckOK).
		del("a", 1, 1, 1).ack("a", 1, 1, 1, ShareAccept, AckFailed).
		// An accept applied though the client could not tell: the start offset passed it.
		del("a", 1, 2, 1).ack("a", 1, 2, 1, ShareAccept, AckUnknown)
	attempts := []Attempt{shareProduced(0, 0), shareProduced(0, 1), shareProduced(1, 0), shareProduced(1, 1), shareProduced(1, 2)}
	r := CheckShare("t", attempts, h.events, map[int32]int64{0: 2, 1: 3}, 5)
	if err := r.Err(); err != nil {
		t.Fatalf("clean history: %v", err)
	}
	if r.Records != 5 || r.Deliveries != 8 || r.Redeliveries != 3 || r.AfterFault != 2 || r.Accepted != 4 || r.Released != 1 || r.AckFailed != 3 || r.Unconfirmed != 1 {
		t.Fatalf("report %v", r)
	}
}

func TestCheckShareArchivedAtLimit(t *testing.T) {
	h := &shareHist{}
	for c := int32(1); c <= 5; c++ {
		h.del("a", 0, 0, c).ack("a", 0, 0, c, ShareRelease, AckOK)
	}
	r := CheckShare("t", []Attempt{shareProduced(0, 0)}, h.events, map[int32]int64{0: 1}, 5)
	if r.Err() != nil || r.ArchivedAtLimit != 1 {
		t.Fatalf("report %v: %v", r, r.Err())
	}
}

// TestCheckShareFinds: each history breaks one rule and must be reported
// with its kind.
func TestCheckShareFinds(t *testing.T) {
	start := map[int32]int64{0: 5}
	cases := []struct {
		name     string
		h        *shareHist
		attempts []Attempt
		want     error
	}{
		{"never delivered", (&shareHist{}).del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckOK),
			[]Attempt{shareProduced(0, 0), shareProduced(0, 1)}, ErrShareLost},
		{"failed accept not redelivered, start offset not past", (&shareHist{}).
			del("a", 0, 7, 1).ack("a", 0, 7, 1, ShareAccept, AckFailed), []Attempt{shareProduced(0, 7)}, ErrShareLost},
		{"released and never redelivered", (&shareHist{}).
			del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareRelease, AckOK), []Attempt{shareProduced(0, 0)}, ErrShareLost},
		{"delivered record never acknowledged", (&shareHist{}).
			del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckFailed).del("b", 0, 0, 2), nil, ErrShareLost},
		{"accepted twice", (&shareHist{}).
			del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckOK).
			del("b", 0, 0, 2).ack("b", 0, 0, 2, ShareAccept, AckOK), []Attempt{shareProduced(0, 0)}, ErrAcceptedTwice},
		{"delivered after a successful accept", (&shareHist{}).
			del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckOK).
			del("b", 0, 0, 2).ack("b", 0, 0, 2, ShareAccept, AckFailed), []Attempt{shareProduced(0, 0)}, ErrDeliveredAfterAccept},
		{"count repeated", (&shareHist{}).
			del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckFailed).
			del("b", 0, 0, 1).ack("b", 0, 0, 1, ShareAccept, AckOK), []Attempt{shareProduced(0, 0)}, ErrCountRepeated},
		{"count down for a member", (&shareHist{}).
			del("a", 0, 0, 3).ack("a", 0, 0, 3, ShareAccept, AckFailed).
			del("a", 0, 0, 2).ack("a", 0, 0, 2, ShareAccept, AckOK), []Attempt{shareProduced(0, 0)}, ErrCountDown},
		{"acknowledgement of no delivery", (&shareHist{}).
			del("a", 0, 0, 1).ack("b", 0, 0, 1, ShareAccept, AckOK), []Attempt{shareProduced(0, 0)}, ErrBadShareHistory},
		{"value not the producer's", (&shareHist{}).
			del("a", 0, 0, 1).ack("a", 0, 0, 1, ShareAccept, AckOK),
			[]Attempt{{ID: ID{Key: "k", Seq: 0}, Topic: "t", Partition: 0, Outcome: Acked, Offset: 3}}, ErrBadShareHistory},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CheckShare("t", c.attempts, c.h.events, start, 5)
			if !errors.Is(r.Err(), c.want) {
				t.Fatalf("got %v (report %v), want %v", r.Err(), r, c.want)
			}
		})
	}
}

func TestShareHistoryFirstAcceptAfter(t *testing.T) {
	t0 := time.Unix(100, 0)
	h := &ShareHistory{}
	h.Add(ShareEvent{Kind: ShareDelivered, Partition: 0, Offset: 1, At: t0.Add(-time.Second)},
		ShareEvent{Kind: ShareAcked, Ack: ShareAccept, Partition: 0, Offset: 1, At: t0.Add(time.Second)},
		ShareEvent{Kind: ShareDelivered, Partition: 1, Offset: 2, At: t0.Add(2 * time.Second)},
		ShareEvent{Kind: ShareAcked, Ack: ShareAccept, Outcome: AckFailed, Partition: 1, Offset: 2, At: t0.Add(3 * time.Second)},
		ShareEvent{Kind: ShareDelivered, Partition: 1, Offset: 2, At: t0.Add(4 * time.Second)},
		ShareEvent{Kind: ShareAcked, Ack: ShareAccept, Partition: 1, Offset: 2, At: t0.Add(5 * time.Second)})
	if d, ok := h.FirstAcceptAfter(nil, t0); !ok || d != 5*time.Second {
		t.Fatalf("FirstAcceptAfter = %v, %v; want 5s", d, ok)
	}
	if h.AcceptedOn([]int32{0, 1}, t0) {
		t.Fatal("partition 0 has no accept of a record delivered after t0")
	}
}
