package e2e

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ShareKind is a kind of problem CheckShare reports.
type ShareKind uint8

// The kinds of share problem, each with the sentinel error its
// ShareProblem wraps.
const (
	// ShareLost: a record that was acknowledged to its producer, or
	// delivered, was never accepted successfully, and is not waiting to be
	// delivered again either: the share partition's start offset passed it
	// without an accept that could have been applied.
	ShareLost ShareKind = iota
	// AcceptedTwice: two accepts of one record both succeeded.
	AcceptedTwice
	// DeliveredAfterAccept: a record was delivered with a higher delivery
	// count than the delivery whose accept succeeded: it was acquired again
	// after its acknowledgement, which was lost.
	DeliveredAfterAccept
	// CountRepeated: two deliveries of a record carried the same delivery
	// count: an acquisition was not counted (its state was lost).
	CountRepeated
	// CountDown: a member was delivered a record with a delivery count not
	// above one it had been delivered before.
	CountDown
	// BadShareHistory: the history is not one the members could produce
	// (an acknowledgement of a delivery not recorded, a delivery count
	// below 1, a record's value not the one its producer placed there).
	BadShareHistory
	numShareKinds
)

// Errors a ShareProblem wraps, one per ShareKind.
var (
	ErrShareLost            = errors.New("e2e: share record never accepted")
	ErrAcceptedTwice        = errors.New("e2e: share record accepted twice")
	ErrDeliveredAfterAccept = errors.New("e2e: share record delivered again after its accept succeeded")
	ErrCountRepeated        = errors.New("e2e: share record delivered twice with one delivery count")
	ErrCountDown            = errors.New("e2e: share record's delivery count went down")
	ErrBadShareHistory      = errors.New("e2e: inconsistent share history")
)

var shareKindErrs = [numShareKinds]error{ErrShareLost, ErrAcceptedTwice, ErrDeliveredAfterAccept, ErrCountRepeated, ErrCountDown, ErrBadShareHistory}
var shareKindNames = [numShareKinds]string{"lost", "accepted-twice", "delivered-after-accept", "count-repeated", "count-down", "bad-history"}

func (k ShareKind) String() string {
	if k < numShareKinds {
		return shareKindNames[k]
	}
	return fmt.Sprintf("sharekind(%d)", uint8(k))
}

// Err is the sentinel error of k.
func (k ShareKind) Err() error {
	if k < numShareKinds {
		return shareKindErrs[k]
	}
	return ErrBadShareHistory
}

// ShareProblem is one problem of one record.
type ShareProblem struct {
	Kind      ShareKind
	Partition int32
	Offset    int64
	Detail    string
}

func (p ShareProblem) String() string {
	return fmt.Sprintf("%v [%d]@%d: %s", p.Kind, p.Partition, p.Offset, p.Detail)
}

// Error wraps the kind's sentinel.
func (p ShareProblem) Error() string { return p.String() }

// Unwrap is the kind's sentinel.
func (p ShareProblem) Unwrap() error { return p.Kind.Err() }

// ShareReport is CheckShare's result.
type ShareReport struct {
	Records      int // records that had to be accepted: acknowledged to a producer, or delivered
	Deliveries   int
	Redeliveries int // deliveries with a delivery count above 1
	// AfterFault counts the redeliveries that no successful release of
	// the delivery before explains: after a failed acknowledgement, an
	// expired lock, a closed session or a leader failover.
	AfterFault int
	Accepted   int // accepts that succeeded
	Released   int // releases that succeeded
	AckFailed  int // acknowledgements reported failed or without a result
	// Unconfirmed counts records whose last accept was reported failed or
	// unknown, never delivered again, and passed by the start offset: the
	// accept was applied though the client could not tell.
	Unconfirmed int
	// ArchivedAtLimit counts records released on their last allowed
	// delivery, which the broker archives.
	ArchivedAtLimit int
	// UnconfirmedSample lists the first maxListed unconfirmed records'
	// last acknowledgements.
	UnconfirmedSample []string
	Problems          []ShareProblem
}

// Count returns the number of problems of kind k.
func (r *ShareReport) Count(k ShareKind) int {
	n := 0
	for _, p := range r.Problems {
		if p.Kind == k {
			n++
		}
	}
	return n
}

// Err is nil without problems, else the first maxListed problems joined.
func (r *ShareReport) Err() error {
	var errs []error
	for i, p := range r.Problems {
		if i == maxListed {
			errs = append(errs, fmt.Errorf("and %d more", len(r.Problems)-maxListed))
			break
		}
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

func (r *ShareReport) String() string {
	var kinds []string
	for k := range numShareKinds {
		kinds = append(kinds, fmt.Sprintf("%v=%d", k, r.Count(k)))
	}
	return fmt.Sprintf("%d records, %d deliveries (%d redeliveries, %d of them after a fault), %d accepted, %d released, %d acknowledgements failed or unknown, %d accepted unconfirmed, %d archived at the limit; problems: %s",
		r.Records, r.Deliveries, r.Redeliveries, r.AfterFault, r.Accepted, r.Released, r.AckFailed, r.Unconfirmed, r.ArchivedAtLimit, strings.Join(kinds, " "))
}

// shareRec is one record of the topic, by place.
type shareRec struct {
	p   int32
	off int64
}

// shareRecEvents are one record's deliveries and acknowledgements, in
// history order.
type shareRecEvents struct {
	dels []ShareEvent
	acks []ShareEvent
}

// CheckShare checks a share group's history of topic against the
// producers' attempts. start is each partition's share-partition start
// offset once everything was consumed (DescribeShareGroupOffsets), limit
// the delivery count limit. Every record acknowledged to a producer, and
// every record delivered, must be accepted successfully exactly once; no
// record may be delivered with a higher count than its successful
// accept's; and delivery counts never repeat or go down. A record whose
// accept failed may be delivered and accepted again; if it never is, the
// start offset must have passed it.
func CheckShare(topic string, attempts []Attempt, events []ShareEvent, start map[int32]int64, limit int32) *ShareReport {
	r := &ShareReport{}
	recs := map[shareRec]*shareRecEvents{}
	get := func(k shareRec) *shareRecEvents {
		if recs[k] == nil {
			recs[k] = &shareRecEvents{}
		}
		return recs[k]
	}
	byID := map[ID]shareRec{}
	for _, e := range events {
		k := shareRec{e.Partition, e.Offset}
		if e.Kind == ShareDelivered {
			get(k).dels = append(get(k).dels, e)
			if e.IDOK {
				byID[e.ID] = k
			}
		} else {
			get(k).acks = append(get(k).acks, e)
		}
	}
	must := map[shareRec]bool{}
	for k, ev := range recs {
		if len(ev.dels) > 0 {
			must[k] = true
		}
	}
	for _, a := range attempts {
		if a.Topic != topic || a.Outcome != Acked {
			continue
		}
		k, ok := byID[a.ID]
		if a.Offset >= 0 {
			if ok && k != (shareRec{a.Partition, a.Offset}) {
				r.add(BadShareHistory, k, fmt.Sprintf("%v delivered here, its producer was told [%d]@%d", a.ID, a.Partition, a.Offset))
			}
			k, ok = shareRec{a.Partition, a.Offset}, true
		}
		if !ok {
			k = shareRec{a.Partition, -1 - int64(len(must))} // never delivered, place unknown
		}
		must[k] = true
	}
	keys := slices.SortedFunc(maps.Keys(must), func(a, b shareRec) int {
		return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.off, b.off))
	})
	r.Records = len(keys)
	for _, k := range keys {
		ev := recs[k]
		if ev == nil {
			ev = &shareRecEvents{}
		}
		r.checkRecord(k, ev, start, limit)
	}
	return r
}

func (r *ShareReport) add(kind ShareKind, k shareRec, detail string) {
	r.Problems = append(r.Problems, ShareProblem{Kind: kind, Partition: k.p, Offset: k.off, Detail: detail})
}

// checkRecord checks one record's deliveries and acknowledgements.
func (r *ShareReport) checkRecord(k shareRec, ev *shareRecEvents, start map[int32]int64, limit int32) {
	r.checkCounts(k, ev)
	var oks []ShareEvent
	for _, a := range ev.acks {
		switch {
		case a.Outcome != AckOK:
			r.AckFailed++
		case a.Ack == ShareAccept:
			r.Accepted++
			oks = append(oks, a)
		default:
			r.Released++
		}
	}
	if len(oks) > 1 {
		r.add(AcceptedTwice, k, fmt.Sprintf("%v; %v", oks[0], oks[1]))
	}
	if len(oks) > 0 {
		for _, d := range ev.dels {
			if d.Count > oks[0].Count {
				r.add(DeliveredAfterAccept, k, fmt.Sprintf("%v; then %v", oks[0], d))
				break
			}
		}
		return
	}
	r.checkUnaccepted(k, ev, start, limit)
}

// checkCounts checks the delivery counts of one record, and that every
// acknowledgement answers a delivery of its member.
func (r *ShareReport) checkCounts(k shareRec, ev *shareRecEvents) {
	seen := map[int32]ShareEvent{}
	last := map[string]int32{}
	released := map[int32]bool{} // delivery counts released successfully
	for _, a := range ev.acks {
		released[a.Count] = released[a.Count] || (a.Ack == ShareRelease && a.Outcome == AckOK)
	}
	for _, d := range ev.dels {
		r.Deliveries++
		if d.Count > 1 {
			r.Redeliveries++
			if !released[d.Count-1] {
				r.AfterFault++
			}
		}
		if d.Count < 1 {
			r.add(BadShareHistory, k, fmt.Sprintf("delivery count below 1: %v", d))
		}
		if prev, dup := seen[d.Count]; dup {
			r.add(CountRepeated, k, fmt.Sprintf("%v; %v", prev, d))
		}
		seen[d.Count] = d
		if l, ok := last[d.Member]; ok && d.Count <= l {
			r.add(CountDown, k, fmt.Sprintf("%s had count %d, then %v", d.Member, l, d))
		}
		last[d.Member] = d.Count
	}
	for _, a := range ev.acks {
		if d, ok := seen[a.Count]; !ok || d.Member != a.Member {
			r.add(BadShareHistory, k, fmt.Sprintf("acknowledgement of no delivery: %v", a))
		}
	}
}

// checkUnaccepted checks a record no accept of which succeeded: its last
// acknowledgement must be an accept whose outcome is unknown (or a
// release at the limit), with the start offset past it.
func (r *ShareReport) checkUnaccepted(k shareRec, ev *shareRecEvents, start map[int32]int64, limit int32) {
	var maxDel int32
	for _, d := range ev.dels {
		maxDel = max(maxDel, d.Count)
	}
	var last *ShareEvent
	for i := range ev.acks {
		if last == nil || ev.acks[i].Count > last.Count {
			last = &ev.acks[i]
		}
	}
	so, known := start[k.p]
	covered := known && so > k.off && k.off >= 0
	switch {
	case covered && last != nil && last.Count == maxDel && last.Ack == ShareAccept:
		r.Unconfirmed++
		if len(r.UnconfirmedSample) < maxListed {
			r.UnconfirmedSample = append(r.UnconfirmedSample, fmt.Sprintf("%v, flushed from %s",
				*last, ev.dels[len(ev.dels)-1].At.Format("15:04:05.000")))
		}
	case covered && last != nil && last.Count == maxDel && last.Count >= limit:
		r.ArchivedAtLimit++
	case len(ev.dels) == 0:
		r.add(ShareLost, k, fmt.Sprintf("never delivered (start offset %d)", so))
	case last == nil || last.Count < maxDel:
		r.add(ShareLost, k, fmt.Sprintf("delivery %d never acknowledged (start offset %d)", maxDel, so))
	default:
		r.add(ShareLost, k, fmt.Sprintf("last acknowledgement %v, not redelivered, start offset %d", *last, so))
	}
}
